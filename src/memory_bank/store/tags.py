"""Each memory's tags as rows of their own (memory_tag), written with the memory they describe,
so a tag filter reads one tag's rows instead of every memory. Every statement filters by user_id.

A tag is compared case-insensitively: it is stored folded (NFC, trimmed, Unicode case folding)
in the form the owner's sealer gives (store/sealing/data_keys.py): "=" and the folded tag, or with
encryption on its keyed hash. The memory keeps its tags as written; these rows only find it.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import Connection, delete, select

from memory_bank.store import batch
from memory_bank.store.documents import next_by_id
from memory_bank.store.schema import memory, memory_tag
from memory_bank.store.sealing import data_keys


def fold(tag: str) -> str:
    """A tag as it is compared: trimmed, NFC, case-folded (`Deploy` and `DEPLOY` are one)."""
    return unicodedata.normalize("NFC", tag.strip()).casefold()


def tag_rows(
    seal: data_keys.Sealer,
    user_id: str,
    memory_id: str,
    created_at: datetime,
    tags: Iterable[str],
) -> list[dict[str, object]]:
    """The memory_tag rows of one memory (each folded tag once)."""
    stored = dict.fromkeys(seal.tag(fold(t)) for t in tags)
    return [
        {"user_id": user_id, "tag": tag, "created_at": created_at, "memory_id": memory_id}
        for tag in stored
    ]


def add_statements(rows: Sequence[dict[str, object]]) -> list[batch.Statement]:
    """Write tag rows (tag_rows); batch.run sends them."""
    return batch.inserts(memory_tag, rows)


def remove_statements(user_id: str, memory_id: str) -> list[batch.Statement]:
    """Delete one memory's tag rows; batch.run sends it."""
    return [
        batch.Statement(
            "DELETE FROM memory_tag WHERE user_id = %s AND memory_id = %s", (user_id, memory_id)
        )
    ]


def replace_statements(
    seal: data_keys.Sealer,
    user_id: str,
    memory_id: str,
    created_at: datetime,
    tags: Iterable[str],
) -> list[batch.Statement]:
    """Swap one memory's tag rows for those of its tags now; batch.run sends them."""
    rows = tag_rows(seal, user_id, memory_id, created_at, tags)
    return [*remove_statements(user_id, memory_id), *add_statements(rows)]


def remove(conn: Connection, user_id: str, memory_ids: Sequence[str]) -> None:
    """Delete these memories' tag rows."""
    if memory_ids:
        conn.execute(
            delete(memory_tag).where(
                memory_tag.c.user_id == user_id, memory_tag.c.memory_id.in_(list(memory_ids))
            )
        )


def replace(
    conn: Connection,
    seal: data_keys.Sealer,
    user_id: str,
    memory_id: str,
    created_at: datetime,
    tags: Iterable[str],
) -> None:
    """Swap one memory's tag rows for those of its tags now (a conversion)."""
    batch.run(conn, replace_statements(seal, user_id, memory_id, created_at, tags))


def rebuild_batch(conn: Connection, user_id: str, after: str, size: int) -> list[str]:
    """Rewrite the tag rows of the owner's next memories by id after `after`, from the memories
    themselves, in the form their sealer gives now; the ids done."""
    rows = next_by_id(conn, user_id, after, size, memory.c.tags, memory.c.created_at)
    if not rows:
        return []
    seal = data_keys.sealer(conn, user_id)
    ids = [r.id for r in rows]
    remove(conn, user_id, ids)
    made = [
        row
        for r in rows
        for row in tag_rows(
            seal, user_id, r.id, r.created_at, json.loads(seal.open("memory.tags", r.id, r.tags))
        )
    ]
    batch.run(conn, add_statements(made))
    return ids


def owners(conn: Connection) -> list[str]:
    """Every owner with memories: a cross-owner read, for the operator's maintenance only."""
    return sorted(conn.execute(select(memory.c.user_id).distinct()).scalars())
