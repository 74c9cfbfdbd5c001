"""A user's rows as a whole: which of their ids exist, erasing all of them, and what of the
org's they wrote."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Column, Connection, delete, func, select

from memory_bank.store.owners import ORG_PREFIX
from memory_bank.store.schema import memory, memory_context, memory_draft, metadata, org_audit

# Ids per IN list: far below every engine's limit on bound parameters (SQLite's is 32766).
CHUNK = 500


def existing_ids(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """memory id -> owning user for those of these ids that exist: a cross-user read, for the
    operator's import only (an id is a primary key, whoever owns it)."""
    return _owners(conn, memory.c.id, memory.c.user_id, ids)


def existing_context_ids(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """context id -> its memory's id for those of these context ids that exist, whoever owns
    them (a cross-user read, for the operator's import only)."""
    return _owners(conn, memory_context.c.id, memory_context.c.memory_id, ids)


def _owners(
    conn: Connection, key: Column[str], owner: Column[str], ids: Sequence[str]
) -> dict[str, str]:
    """key -> owner for the rows whose key is among these ids, read a chunk of ids at a time."""
    found: dict[str, str] = {}
    unique = sorted(set(ids))
    for start in range(0, len(unique), CHUNK):
        chunk = unique[start : start + CHUNK]
        found.update((k, o) for k, o in conn.execute(select(key, owner).where(key.in_(chunk))))
    return found


def org_rows_written_by(conn: Connection, user_id: str) -> dict[str, int]:
    """Rows of orgs' that this user wrote (org memories, org drafts, org audit entries): they
    are the org's, and erasing the user keeps them."""
    in_orgs = memory.c.user_id.startswith(ORG_PREFIX, autoescape=True)
    drafts_in_orgs = memory_draft.c.user_id.startswith(ORG_PREFIX, autoescape=True)
    counts = {
        "org memories": select(func.count())
        .select_from(memory)
        .where(in_orgs, memory.c.created_by == user_id),
        "org drafts": select(func.count())
        .select_from(memory_draft)
        .where(drafts_in_orgs, memory_draft.c.created_by == user_id),
        "org audit entries": select(func.count())
        .select_from(org_audit)
        .where(org_audit.c.actor_user_id == user_id),
    }
    return {name: int(conn.execute(stmt).scalar() or 0) for name, stmt in counts.items()}


def owner_tables() -> list[str]:
    """Every table with a user_id column, children before parents (tables added later too)."""
    return [t.name for t in reversed(metadata.sorted_tables) if "user_id" in t.c]


def erase_rows(conn: Connection, user_id: str) -> dict[str, int]:
    """Delete every row of the user in every table; rows deleted per table.

    Each table's rows are counted by a locking read, then deleted, in this one transaction:
    the report never comes from a DELETE's row count (Spider reports 0 for every DELETE).
    """
    done: dict[str, int] = {}
    for name in owner_tables():
        table = metadata.tables[name]
        owned = table.c.user_id == user_id
        held = select(func.count()).select_from(table).where(owned).with_for_update()
        done[name] = int(conn.execute(held).scalar() or 0)
        if done[name]:
            conn.execute(delete(table).where(owned))
    return done


def count_rows(conn: Connection, user_id: str) -> dict[str, int]:
    """How many rows the user has in each table with a user_id column."""

    counts = {}
    for name in owner_tables():
        table = metadata.tables[name]
        stmt = select(func.count()).select_from(table).where(table.c.user_id == user_id)
        counts[name] = int(conn.execute(stmt).scalar() or 0)
    return counts
