"""The registry of sealed columns is the one source: every column the code seals is declared in
the schema, every declared one is sealed somewhere, every text column of an owner table is
declared, and the conversions walk the registry instead of a list of their own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, Text

from memory_bank.store.schema import metadata
from memory_bank.store.sealing import seal_existing
from memory_bank.store.sealing.sealed import column_names, registry

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "memory_bank"
SEALING_CALLS = {"seal", "open", "seal_opt", "open_opt"}
# The postings and tag rows a memory's conversion rebuilds: derived from its text and tags
# (terms and tags hashed, not sealed columns).
DERIVED = {"memory", "memory_context", "memory_term", "memory_tag"}


def _sealed_names_in_code() -> dict[str, set[str]]:
    """Each "table.column" passed to a sealer's seal/open (as a literal or a module constant),
    with the files that pass it."""
    tables = {t.name: set(t.c.keys()) for t in metadata.sorted_tables}
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SEALING_CALLS
                and node.args
            ):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                name = first.value
            elif isinstance(first, ast.Name) and first.id in constants:
                name = constants[first.id]
            else:
                continue
            table, _, column = name.partition(".")
            if column in tables.get(table, ()):
                found.setdefault(name, set()).add(path.name)
    return found


def test_every_column_the_code_seals_is_declared_sealed_in_the_schema():
    used = _sealed_names_in_code()
    undeclared = {name: files for name, files in used.items() if name not in column_names()}
    assert undeclared == {}, "declare these with info={'sealed': ...} in store/schema.py"
    assert column_names() <= set(used), "declared sealed but sealed nowhere"


def test_every_text_column_of_an_owner_table_is_declared():
    for table in metadata.sorted_tables:
        if "user_id" not in table.c and "org_id" not in table.c:
            continue
        for column in table.c:
            if isinstance(column.type, Text):
                assert column.info.get("sealed"), f"{table.name}.{column.name} holds text"


def test_the_registry_lists_today_s_sealed_tables():
    assert {spec.table.name: spec.columns for spec in registry()} == {
        "memory": ("content", "tags"),
        "memory_context": ("snippet", "conversation_id", "message_id"),
        "memory_draft": ("content", "tags", "contexts"),
        "memory_revision": ("content", "tags", "contexts"),
        "memory_vector": ("vector",),
    }
    assert {spec.table.name: spec.row for spec in registry()}["memory_vector"] == "memory_id"


def test_conversions_walk_the_registry_and_name_no_sealed_table_themselves():
    assert seal_existing.tables() == registry()
    for module in ("store/sealing/seal_existing.py", "domain/encryption.py", "cli/crypto.py"):
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        named = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "memory_bank.store.schema"
            for alias in node.names
        }
        assert named <= DERIVED, module


def test_a_new_table_of_an_org_with_a_sealed_column_joins_the_registry():
    other = MetaData()
    table = Table(
        "org_note",
        other,
        Column("id", String(32), primary_key=True),
        Column("org_id", String(128), nullable=False),
        Column("details", Text, nullable=False, info={"sealed": "id"}),
        Column("n", Integer),
    )
    (spec,) = registry(other)
    assert (spec.table, spec.columns, spec.row, spec.owner) == (table, ("details",), "id", "org_id")
    assert spec.owner_key("acme") == "org:acme"
    assert str(spec.owner_is("org:acme").compile()) == "org_note.org_id = :org_id_1"
    assert str(spec.owner_is("alice").compile()) == "false"


def test_a_sealed_column_without_an_owner_or_a_row_id_is_refused():
    other = MetaData()
    Table(
        "loose",
        other,
        Column("id", String(32), primary_key=True),
        Column("text", Text, info={"sealed": "id"}),
    )
    with pytest.raises(ValueError, match="no owner column"):
        registry(other)
    other = MetaData()
    Table(
        "wrong_row",
        other,
        Column("id", String(32), primary_key=True),
        Column("user_id", String(128)),
        Column("text", Text, info={"sealed": "memory_id"}),
    )
    with pytest.raises(ValueError, match="does not name one row"):
        registry(other)
