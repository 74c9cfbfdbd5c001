"""A user's rows as a whole: which of their memory ids exist, and erasing all of them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, func, select

from memory_bank.store.schema import memory, metadata


def existing_ids(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """memory id -> owning user for those of these ids that exist: a cross-user read, for the
    operator's import only (an id is a primary key, whoever owns it)."""
    if not ids:
        return {}
    rows = conn.execute(select(memory.c.id, memory.c.user_id).where(memory.c.id.in_(list(ids))))
    return {r.id: r.user_id for r in rows}


def owner_tables() -> list[str]:
    """Every table with a user_id column, children before parents (tables added later too)."""
    return [t.name for t in reversed(metadata.sorted_tables) if "user_id" in t.c]


def erase_rows(conn: Connection, user_id: str) -> dict[str, int]:
    """Delete every row of the user in every table; rows deleted per table."""
    done: dict[str, int] = {}
    for name in owner_tables():
        table = metadata.tables[name]
        result = conn.execute(delete(table).where(table.c.user_id == user_id))
        done[name] = int(result.rowcount or 0)
    return done


def count_rows(conn: Connection, user_id: str) -> dict[str, int]:
    """How many rows the user has in each table with a user_id column."""

    counts = {}
    for name in owner_tables():
        table = metadata.tables[name]
        stmt = select(func.count()).select_from(table).where(table.c.user_id == user_id)
        counts[name] = int(conn.execute(stmt).scalar() or 0)
    return counts
