"""docs/architecture.md's claims that something holds everywhere, each checked.

Every paragraph, list item or table row of that page that claims something of every case (every,
only, one place, never, nothing, no code) names the test that checks it, as
`tests/<file>.py::<test>`; the first test here fails when one names none or a test that does not
exist. The others are the checks those claims name, mostly read from the package's source.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from memory_bank.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "memory_bank"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# The words of a claim about every case.
CLAIM = re.compile(r"\b(every|everything|only|one place|never|nothing|no code)\b", re.IGNORECASE)
TEST_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")
# SQL that changes a table, as the package spells it (upper case, in strings).
WRITE_SQL = re.compile(
    r"\b(INSERT\s+(IGNORE\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE\s+INTO|TRUNCATE)\b"
)
WRITE_BUILDERS = {"insert", "update", "delete"}


def claim_blocks(text: str) -> list[str]:
    """The page's paragraphs, list items and table rows (a table row without its last cell,
    which tests/test_architecture.py reads), code blocks left out."""
    blocks: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            blocks.append("\n".join(current))
            current.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            close()
            cells = line.strip().strip("|").split("|")
            blocks.append("|".join(cells[:-1]))
        elif not line.strip() or line.startswith("#") or line.startswith("    "):
            close()
        elif line.startswith("- "):
            close()
            current.append(line)
        else:
            current.append(line)
    close()
    return blocks


def unbacked_claims(text: str) -> list[str]:
    """Blocks that claim something of every case and name no test, or a test not there."""
    found = []
    for block in claim_blocks(text):
        if not CLAIM.search(block):
            continue
        references = TEST_REFERENCE.findall(block)
        if not references:
            found.append(f"names no test: {block[:100]!r}")
        for file, name in references:
            path = ROOT / file
            if not path.exists() or not re.search(
                rf"^(async )?def {name}\(", path.read_text(encoding="utf-8"), re.MULTILINE
            ):
                found.append(f"names {file}::{name}, which does not exist")
    return found


def test_every_claim_names_a_test_that_exists():
    assert unbacked_claims(ARCHITECTURE.read_text(encoding="utf-8")) == []


def test_a_claim_without_its_test_is_caught():
    page = "Intro.\n\n- **Rule.** Every write goes through `x`.\n\n| `a/` | Only here | `b` |\n"
    assert len(unbacked_claims(page)) == 2
    named = page.replace("`x`.", "`x` (`tests/test_architecture_claims.py::test_gone`).")
    assert any("does not exist" in found for found in unbacked_claims(named))
    # What a room may import (the last cell) is tests/test_architecture.py's to check.
    assert unbacked_claims("| `a/` | A room | everything but `b` |\n") == []


# --- reading the package ---------------------------------------------------------------------


def _modules(*rooms: str, but: tuple[str, ...] = ()) -> list[Path]:
    """The package's modules in these rooms (every room when none), less the rooms in `but`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        room = parts[0]
        if "migrations" in parts or room in but or (rooms and room not in rooms):
            continue
        found.append(path)
    return found


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _strings(tree: ast.AST) -> Iterator[str]:
    """Every string constant, f-string parts included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def _where(path: Path) -> str:
    """A module's path in the package (a file elsewhere, a probe, by its name)."""
    return str(path.relative_to(PACKAGE)) if path.is_relative_to(PACKAGE) else path.name


def table_writes(path: Path) -> list[str]:
    """What in a module writes a table: SQL that changes one, SQLAlchemy's insert, update or
    delete builders, or a table's own .insert()/.update()/.delete()."""
    tree = _tree(path)
    found = [
        f"{_where(path)}: SQL {s.strip()[:40]!r}" for s in _strings(tree) if WRITE_SQL.search(s)
    ]
    tables: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {alias.asname or alias.name for alias in node.names}
            if node.module.split(".")[0] == "sqlalchemy":
                found += [f"{_where(path)}: imports {n}" for n in sorted(names & WRITE_BUILDERS)]
            if node.module == "memory_bank.store.schema":
                tables |= names
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITE_BUILDERS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in tables
        ):
            found.append(f"{_where(path)}: {node.func.value.id}.{node.func.attr}()")
    return found


def test_every_table_write_happens_in_store():
    found = [w for path in _modules(but=("store",)) for w in table_writes(path)]
    assert found == []


def test_search_writes_nothing():
    # search/ may take only the Postings type from store/ (tests/test_architecture.py), so it
    # cannot call a store write either; and it spells no write of its own.
    assert [w for path in _modules("search") for w in table_writes(path)] == []


@pytest.mark.parametrize(
    "source",
    [
        "from sqlalchemy import insert\n",
        "from memory_bank.store.schema import memory\nmemory.delete()\n",
        "SQL = 'UPDATE memory_user_stats SET doc_count = 0'\n",
        "def f(conn):\n    conn.exec_driver_sql(f'DELETE FROM memory WHERE id = {1}')\n",
    ],
)
def test_a_write_outside_store_is_caught(tmp_path, source):
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    assert table_writes(path), source


# Who may look a memory up by id outside store/ (function -> the store lookups it may call):
# readable is the one locate; a delete asks only the author and revision in the same owners; a
# confirmed edit draft locks the memory its draft names; search and hints load ranked ids.
LOOKUPS = {"locked", "get_memories", "author"}
LOOKERS = {
    ("domain/memories.py", "readable"): {"locked", "get_memories"},
    ("domain/memories.py", "remove"): {"author"},
    ("domain/review.py", "_confirm_edit"): {"locked"},
    ("domain/search.py", "_rows"): {"get_memories"},
    ("domain/similar.py", "duplicate_of"): {"get_memories"},
    ("domain/similar.py", "hints"): {"get_memories"},
}


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """A module's functions and methods, not those nested in them (theirs count as the outer's)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, ast.FunctionDef))


def by_id_lookups() -> dict[tuple[str, str], set[str]]:
    """(module, function) -> the store lookups by id it calls, outside store/."""
    found: dict[tuple[str, str], set[str]] = {}
    for path in _modules(but=("store",)):
        tree = _tree(path)
        assert isinstance(tree, ast.Module)
        for fn in _functions(tree):
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in LOOKUPS
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in {"store", "memory_store", "memories"}
                ):
                    found.setdefault((_where(path), fn.name), set()).add(node.func.attr)
    return found


def test_no_other_code_looks_a_memory_up_by_id():
    assert by_id_lookups() == LOOKERS


def _memory(service: Any, headers: dict[str, str]) -> str:
    response = service.client.post(
        "/v1/memory", json={"content": "The deploy runbook."}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["memory"]["id"]


def test_every_read_by_id_goes_through_readable(service, monkeypatch):
    from memory_bank.domain import memories

    original = memories.readable
    calls: list[str] = []

    def recording(conn: Any, principal: Any, memory_id: str, **kwargs: Any) -> Any:
        calls.append(memory_id)
        return original(conn, principal, memory_id, **kwargs)

    # Wherever the package holds the function (a module that imported it by name too).
    for module in list(sys.modules.values()):
        if (
            getattr(module, "__name__", "").startswith("memory_bank")
            and getattr(module, "readable", None) is original
        ):
            monkeypatch.setattr(module, "readable", recording)
    headers = service.auth("alice")
    mid = _memory(service, headers)
    patch = {**headers, "Content-Type": "application/merge-patch+json"}
    requests = {
        "getMemoryById": lambda: service.client.get(f"/v1/memory/{mid}", headers=headers),
        "patchMemoryById": lambda: service.client.patch(
            f"/v1/memory/{mid}", content=json.dumps({"content": "Drain first."}), headers=patch
        ),
        "getMemoryRevisions": lambda: service.client.get(
            f"/v1/memory/{mid}/revisions", headers=headers
        ),
        "postMemoryRestore": lambda: service.client.post(
            f"/v1/memory/{mid}/revisions/1/restore", headers=headers
        ),
    }
    for operation, send in requests.items():
        calls.clear()
        response = send()
        assert response.status_code == 200, (operation, response.text)
        assert calls == [mid], operation


# --- the spec states every limit; the spec says what an operation needs ------------------------


def _spec_limits() -> set[int]:
    """Every length, count and bound the spec states (above 1, which is everywhere)."""
    found: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in {"maxLength", "minLength", "maxItems", "maximum"} and isinstance(
                    value, int
                ):
                    found.add(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(load_spec())
    return {n for n in found if n > 1}


def limit_comparisons(path: Path, limits: set[int]) -> list[str]:
    """Comparisons in a module with a number the spec states as a limit."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if (
                    isinstance(side, ast.Constant)
                    and type(side.value) is int
                    and side.value in limits
                ):
                    found.append(f"{_where(path)}:{node.lineno}: compares with {side.value}")
    return found


def test_the_domain_states_no_limit_of_the_spec():
    limits = _spec_limits()
    assert {8000, 4000, 64, 32, 16, 128, 512} <= limits
    found = [f for path in _modules("domain", "api") for f in limit_comparisons(path, limits)]
    assert found == []


def test_a_limit_of_its_own_is_caught(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("def ok(tags):\n    return len(tags) <= 32\n", encoding="utf-8")
    assert limit_comparisons(path, _spec_limits())


def url_prefix_tests(path: Path) -> list[str]:
    """Where a module tests a request's path against an API prefix (/v1, /mcp, ...)."""
    found = []
    for node in ast.walk(_tree(path)):
        prefixes: list[Any] = []
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"startswith", "removeprefix"}
        ):
            prefixes = node.args
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
        ):
            prefixes = [node.left]
        for arg in prefixes:
            values = arg.elts if isinstance(arg, ast.Tuple) else [arg]
            for value in values:
                if (
                    isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and value.value.startswith("/v1")
                ):
                    found.append(f"{_where(path)}:{node.lineno}: {value.value!r}")
    return found


def test_no_code_tests_a_url_prefix():
    assert [f for path in _modules() for f in url_prefix_tests(path)] == []


# --- errors, validation, ids -----------------------------------------------------------------

PROBLEM_KEYS = {"type", "title", "status", "detail"}


def test_the_problem_document_is_built_in_one_place():
    builders = set()
    for path in _modules():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if keys >= PROBLEM_KEYS:
                    builders.add(_where(path))
    assert builders == {"errors.py"}


def test_validation_never_reads_a_message():
    # jsonschema's and Connexion's errors carry a .message: the field comes from the path.
    read = [
        node.lineno
        for node in ast.walk(_tree(PACKAGE / "http" / "validation.py"))
        if isinstance(node, ast.Attribute) and node.attr == "message"
    ]
    assert read == []


def test_every_id_parameter_has_a_pattern():
    spec = load_spec()
    missing = []
    for route, item in spec["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            for param in [*item.get("parameters", []), *operation.get("parameters", [])]:
                if "$ref" in param:
                    param = spec["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
                if param["in"] != "path":
                    continue
                schema = param["schema"]
                if "$ref" in schema:
                    schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
                if schema.get("type") == "string" and "pattern" not in schema:
                    missing.append(f"{method.upper()} {route} {param['name']}")
    assert missing == []


# --- reads don't write -----------------------------------------------------------------------


def _everything(engine: sa.Engine) -> dict[str, list[str]]:
    """Every row of every table, as text, sorted."""
    tables = sa.MetaData()
    tables.reflect(engine)
    with engine.connect() as conn:
        return {
            name: sorted(repr(tuple(row)) for row in conn.execute(sa.select(table)))
            for name, table in tables.tables.items()
            if name != "alembic_version"
        }


def _gets(spec: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (operation["operationId"], route)
        for route, item in spec["paths"].items()
        for method, operation in item.items()
        if method == "get" and isinstance(operation, dict)
    ]


def test_reads_dont_write(make_service):
    service = make_service(review_required=True)
    everything = ("mcp:read", "mcp:write", "memory:review", "org:write", "org:admin")
    owner = service.auth("alice", scopes=everything, org="acme")
    agent = service.auth("alice", scopes=("mcp:read", "mcp:write"), org="acme")
    mid = _memory(service, owner)
    service.client.delete(f"/v1/memory/{_memory(service, owner)}", headers=owner)
    waiting = service.client.post("/v1/memory", json={"content": "A draft."}, headers=agent)
    expired = service.client.post("/v1/memory", json={"content": "Old draft."}, headers=agent)
    assert waiting.status_code == expired.status_code == 202, expired.text
    draft = waiting.json()["draft"]["id"]
    with service.engine.begin() as conn:  # one draft past its time, which only a write purges
        conn.execute(
            sa.text("UPDATE memory_draft SET expires_at = :at WHERE id = :id"),
            {"at": "2000-01-01 00:00:00", "id": expired.json()["draft"]["id"]},
        )
    values = {"id": mid, "revision": "1"}
    before = _everything(service.engine)
    answered = {}
    for operation, route in _gets(load_spec()):
        path = route.replace("{revision}", "1").replace(
            "{id}", draft if "/drafts/" in route else values["id"]
        )
        query = {"q": "deploy runbook"} if operation == "getMemorySearch" else {}
        answered[operation] = service.client.get(path, params=query, headers=owner).status_code
    assert set(answered.values()) == {200}, answered
    assert _everything(service.engine) == before


# --- rights, encryption ----------------------------------------------------------------------


def test_rights_are_decided_in_acl():
    # Outside acl.py (and auth.py, which answers "has this scope"), no code names an org scope
    # or compares a memory's author: who may do what is asked of domain/acl.py.
    found = []
    for path in _modules(but=("store", "cli")):
        if _where(path) in {"domain/acl.py", "auth.py"}:
            continue
        tree = _tree(path)
        found += [
            f"{_where(path)}: {s!r}" for s in _strings(tree) if s in {"org:write", "org:admin"}
        ]
        for node in ast.walk(tree):
            # `x.created_by is None` asks whether an author is known (an import's line), not
            # who may do what.
            presence = isinstance(node, ast.Compare) and all(
                isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops
            )
            if isinstance(node, ast.Compare) and not presence:
                names = {
                    n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", None)
                    for n in [node.left, *node.comparators]
                }
                if "created_by" in names:
                    found.append(f"{_where(path)}:{node.lineno}: compares created_by")
    assert found == []
    # Each change to a memory asks acl.check_change: an edit and a restore (through
    # edits.changeable), a delete, a confirmed draft (with changes, or of an edit).
    assert {("domain/edits.py", "changeable"), ("domain/memories.py", "remove")} | {
        ("domain/review.py", "confirm"),
        ("domain/review.py", "_confirm_edit"),
    } <= _callers("check_change")
    assert {("domain/writes.py", "edit"), ("domain/edits.py", "restore")} <= _callers("changeable")


def _callers(name: str) -> set[tuple[str, str]]:
    """(module, function) of the package's functions that call `name` (as x.name or name)."""
    found = set()
    for path in _modules():
        tree = _tree(path)
        assert isinstance(tree, ast.Module)
        for fn in _functions(tree):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and (
                    getattr(node.func, "attr", None) == name
                    or getattr(node.func, "id", None) == name
                ):
                    found.add((_where(path), fn.name))
    return found


def test_only_store_crypto_uses_the_cryptography_library():
    users = set()
    for path in _modules():
        for node in ast.walk(_tree(path)):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(m.split(".")[0] == "cryptography" for m in modules):
                users.add(_where(path))
    assert users == {"store/sealing/crypto.py"}


# --- MCP takes REST's road -------------------------------------------------------------------


def test_a_tool_call_is_a_rest_request_through_the_whole_app(service, caplog):
    headers = {
        **service.auth("alice"),
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "postMemory", "arguments": {"content": "Saved through MCP."}},
    }
    with caplog.at_level(logging.INFO, logger="memory_bank.access"):
        response = service.client.post("/mcp", json=body, headers=headers)
    assert response.status_code == 200 and not response.json()["result"].get("isError")
    # The access log, outermost, saw the REST request the tool call became.
    routes = [
        json.loads(r.getMessage()).get("route")
        for r in caplog.records
        if r.name == "memory_bank.access"
    ]
    assert "postMemory" in routes, routes
