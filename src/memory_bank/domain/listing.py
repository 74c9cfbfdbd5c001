"""Listing: one page of the memories a principal reads, newest first, and where the next
page resumes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory_bank.auth import Principal
from memory_bank.domain import acl, cursor
from memory_bank.domain.filters import NONE, Filters
from memory_bank.domain.memories import shape
from memory_bank.errors import InvalidCursor
from memory_bank.ids import id_time, iso, parse_iso
from memory_bank.store import memories as store
from memory_bank.store import shards
from memory_bank.store.database import Database


def page(
    db: Database,
    secret: bytes,
    principal: Principal,
    limit: int,
    after: str | None,
    scope: str = "all",
    only: Filters = NONE,
) -> dict[str, Any]:
    """One page of the memories the principal reads (scope: user, org or all) that pass the
    filters, newest first, with the next cursor; `unavailable` names the scopes left out
    because their database backend is down (the caller's own is a 503 instead)."""
    before = (
        position(cursor.decode(secret, principal.user_id, "memories", after)) if after else None
    )
    rows: list[store.MemoryRow] = []
    with db.reading() as conn:
        wanted = acl.readable_owners(principal, scope)
        owners, unavailable = shards.reachable(conn, bool(db.backends), principal.user_id, wanted)
        for owner in owners:
            rows += store.list_memories(conn, owner, limit + 1, before, only)
    # Each owner's page is newest first by (created_at, id): they merge into one such page.
    rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = (
        cursor.encode(secret, principal.user_id, "memories", mark(rows[-1])) if more else None
    )
    answer: dict[str, Any] = {"memories": [shape(r) for r in rows], "next_cursor": next_cursor}
    if unavailable:
        answer["unavailable"] = unavailable
    return answer


def mark(row: store.MemoryRow) -> str:
    """Where a listing resumes after this memory: its creation time and id."""
    return f"{iso(row.created_at)}|{row.id}"


def position(marked: str) -> tuple[datetime, str]:
    """The creation time and id a cursor's mark names. A mark of an id alone (cursors issued
    before listings ordered by time) resumes at the time the id was minted."""
    when, sep, memory_id = marked.rpartition("|")
    try:
        return (parse_iso(when), memory_id) if sep else (id_time(memory_id), memory_id)
    except ValueError:
        raise InvalidCursor("The cursor is malformed.", field="cursor") from None
