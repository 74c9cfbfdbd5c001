"""The registry of sealed columns: every column that holds an owner's text sealed with their
data key, read from the schema's column info (store/schema.py), so conversions, counts and
key destruction can never miss a table a later change adds.

A column declares itself with `info={"sealed": "<row column>"}`: the row column's value is the
row id its ciphertexts are bound to, with the owner and "<table>.<column>"
(store/sealing/crypto.py).
The table's owner column is `user_id` (an owner key, store/owners.py), or, for a table sharded
by organisation, `org_id` (the org's own id; its owner key is "org:<id>").
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, MetaData, Table, false

from memory_bank.store.owners import org_of, org_owner
from memory_bank.store.schema import metadata as schema_metadata

INFO_KEY = "sealed"
# Owner columns, in the order a table's is looked for.
USER_OWNER = "user_id"
ORG_OWNER = "org_id"


@dataclass(frozen=True)
class SealedTable:
    """One table's sealed columns, the row id they are bound to and the owner column."""

    table: Table
    columns: tuple[str, ...]
    row: str
    owner: str

    def column_name(self, column: str) -> str:
        """The name a value of this column is sealed under ("table.column")."""
        return f"{self.table.name}.{column}"

    def owner_is(self, owner: str) -> ColumnElement[bool]:
        """The rows of this owner (an owner key: a user id or "org:<id>")."""
        if self.owner == ORG_OWNER:
            org = org_of(owner)
            return false() if org is None else self.table.c[ORG_OWNER] == org
        return self.table.c[self.owner] == owner

    def owner_key(self, stored: str) -> str:
        """The owner key of a row whose owner column holds `stored`."""
        return org_owner(stored) if self.owner == ORG_OWNER else stored


def _owner_column(table: Table) -> str:
    """The owner column of a table with sealed columns; ValueError when it has none."""
    for name in (USER_OWNER, ORG_OWNER):
        if name in table.c:
            return name
    raise ValueError(f"{table.name} has sealed columns but no owner column")


def _registry(metadata: MetaData) -> tuple[SealedTable, ...]:
    """Every table with sealed columns, in the schema's order."""
    found = []
    for table in metadata.sorted_tables:
        declared = {c.name: c.info[INFO_KEY] for c in table.c if c.info.get(INFO_KEY)}
        if not declared:
            continue
        rows = set(declared.values())
        if len(rows) != 1:
            raise ValueError(f"{table.name}: sealed columns bound to different rows {rows}")
        row = rows.pop()
        owner = _owner_column(table)
        # The row column must name one row of its owner: the batches page and update by it.
        key = {c.name for c in table.primary_key.columns} - {owner}
        if key != {row}:
            raise ValueError(f"{table.name}: {row} does not name one row of its owner")
        found.append(SealedTable(table, tuple(declared), row, owner))
    return tuple(found)


def registry(metadata: MetaData | None = None) -> tuple[SealedTable, ...]:
    """The sealed tables of the schema (or of other metadata, for tests)."""
    if metadata is None:
        return _REGISTRY
    return _registry(metadata)


def column_names() -> frozenset[str]:
    """Every sealed column's name ("table.column")."""
    return frozenset(t.column_name(c) for t in _REGISTRY for c in t.columns)


_REGISTRY = _registry(schema_metadata)
