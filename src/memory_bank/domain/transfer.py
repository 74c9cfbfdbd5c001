"""A user's data lifecycle: export everything they own, restore an export, erase them for good."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine

from memory_bank.domain.memories import shape
from memory_bank.ids import iso, utcnow
from memory_bank.search.document import postings_of
from memory_bank.store import memories as store
from memory_bank.store import owner_keys, transfer
from memory_bank.store.engine import reading, writing

# The first line of every export names its format and version; import reads no other.
FORMAT = "memory-bank-export"
VERSION = 1
PAGE = 200


def header(user_id: str) -> dict[str, Any]:
    """The export's first line."""
    return {"format": FORMAT, "version": VERSION, "user_id": user_id, "exported_at": iso(utcnow())}


def export_lines(engine: Engine, user_id: str) -> Iterator[str]:
    """The user's export as ndjson lines: the header, then one memory per line, newest first.

    Read a page per transaction, so a large export neither holds one long read open nor
    keeps every memory in memory.
    """
    yield json.dumps(header(user_id), ensure_ascii=False) + "\n"
    before: str | None = None
    while True:
        with reading(engine) as conn:
            rows = store.list_memories(conn, user_id, PAGE, before)
        for row in rows:
            yield json.dumps(shape(row), ensure_ascii=False) + "\n"
        if len(rows) < PAGE:
            return
        before = rows[-1].id


@dataclass(frozen=True)
class Restored:
    """One exported memory, checked, ready to write back."""

    id: str
    content: str
    tags: list[str]
    source: str
    created_at: datetime
    updated_at: datetime
    contexts: list[store.NewContext]
    context_ids: list[str]
    context_times: list[datetime]


def restore(engine: Engine, user_id: str, batch: Sequence[Restored]) -> int:
    """Write these memories for the user in one transaction, skipping ids already there;
    returns how many were written (so a repeated import writes nothing)."""

    def work(conn: Connection) -> int:
        there = transfer.existing_ids(conn, [m.id for m in batch])
        written = 0
        for m in batch:
            if there.get(m.id) == user_id:
                continue
            index = postings_of(m.content, m.tags, [c.snippet for c in m.contexts])
            store.insert_memory(
                conn,
                store.Owner(user_id, None, m.source),
                m.content,
                m.tags,
                m.contexts,
                index,
                memory_id=m.id,
                created_at=m.created_at,
                updated_at=m.updated_at,
                context_ids=m.context_ids,
                context_times=m.context_times,
            )
            written += 1
        return written

    return writing(engine, work)


def taken_by_others(engine: Engine, user_id: str, ids: Sequence[str]) -> set[str]:
    """The ids among these that belong to another user (they cannot be imported)."""
    with reading(engine) as conn:
        there = transfer.existing_ids(conn, ids)
    return {mid for mid, owner in there.items() if owner != user_id}


def erase(engine: Engine, user_id: str) -> dict[str, int]:
    """Erase a user: their data key first, in its own transaction (crypto-shredding: from then
    on no copy of their sealed rows can be read), then every row of theirs in every table."""
    shredded = writing(engine, lambda conn: owner_keys.destroy(conn, user_id))
    done = writing(engine, lambda conn: transfer.erase_rows(conn, user_id))
    done["owner_key"] = int(shredded) + done.get("owner_key", 0)
    return done


def remaining(engine: Engine, user_id: str) -> dict[str, int]:
    """The user's rows left in each table (all zero after erase)."""
    with reading(engine) as conn:
        return transfer.count_rows(conn, user_id)
