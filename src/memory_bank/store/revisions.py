"""Owner-scoped queries on memory revisions (an edited memory's states); every statement
filters by user_id (the owner key).

Content, tags and contexts are user text: sealed with the owner's key, the revision row's own
id as associated data (docs/security.md, "Rules for new tables").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from memory_bank.ids import iso, new_id, parse_iso
from memory_bank.store import batch
from memory_bank.store.schema import memory_revision
from memory_bank.store.sealing import data_keys


@dataclass(frozen=True)
class RevisionRow:
    """One stored state of a memory."""

    revision: int
    content: str
    tags: list[str]
    contexts: list[dict[str, Any]]
    source: str
    edited_at: datetime


_COLUMNS = "id, user_id, memory_id, revision, content, tags, contexts, source, edited_at"


def insert_statement(
    conn: Connection, user_id: str, memory_id: str, row: RevisionRow
) -> batch.Statement:
    """The INSERT of one revision of the owner's memory, sealed; batch.run sends it."""
    rid = new_id("mrv")
    seal = data_keys.sealer(conn, user_id, create=True)
    contexts = [{**c, "created_at": iso(c["created_at"])} for c in row.contexts]
    values = (
        rid,
        user_id,
        memory_id,
        row.revision,
        seal.seal("memory_revision.content", rid, row.content),
        seal.seal("memory_revision.tags", rid, json.dumps(row.tags, ensure_ascii=False)),
        seal.seal("memory_revision.contexts", rid, json.dumps(contexts, ensure_ascii=False)),
        row.source,
        row.edited_at,
    )
    marks = ", ".join(["%s"] * len(values))
    return batch.Statement(f"INSERT INTO memory_revision ({_COLUMNS}) VALUES ({marks})", values)


def drop_before_statement(user_id: str, memory_id: str, revision: int) -> batch.Statement:
    """Forget the owner's memory's revisions numbered below `revision`; batch.run sends it."""
    return batch.Statement(
        "DELETE FROM memory_revision WHERE user_id = %s AND memory_id = %s AND revision < %s",
        (user_id, memory_id, revision),
    )


def delete_statement(user_id: str, memory_id: str) -> batch.Statement:
    """Forget every revision of the owner's memory; batch.run sends it."""
    return batch.Statement(
        "DELETE FROM memory_revision WHERE user_id = %s AND memory_id = %s", (user_id, memory_id)
    )


def get_revision(
    conn: Connection, user_id: str, memory_id: str, revision: int
) -> RevisionRow | None:
    """One stored revision of the owner's memory, opened, or None."""
    found = list_revisions(conn, user_id, memory_id, 1, revision + 1)
    return found[0] if found and found[0].revision == revision else None


def list_revisions(
    conn: Connection, user_id: str, memory_id: str, limit: int, before: int | None
) -> list[RevisionRow]:
    """Up to limit revisions of the owner's memory below `before`, newest first, opened."""
    stmt = select(memory_revision).where(
        memory_revision.c.user_id == user_id, memory_revision.c.memory_id == memory_id
    )
    if before is not None:
        stmt = stmt.where(memory_revision.c.revision < before)
    rows = conn.execute(stmt.order_by(memory_revision.c.revision.desc()).limit(limit)).all()
    seal = data_keys.sealer(conn, user_id)
    return [_row(r, seal) for r in rows]


def oldest(conn: Connection, user_id: str, memory_id: str) -> int | None:
    """The number of the oldest revision kept of the owner's memory, or None (never edited)."""
    found = conn.execute(
        select(func.min(memory_revision.c.revision)).where(
            memory_revision.c.user_id == user_id, memory_revision.c.memory_id == memory_id
        )
    ).scalar()
    return None if found is None else int(found)


def _row(r: Any, seal: data_keys.Sealer) -> RevisionRow:
    """A revision from a result row, opened."""
    contexts = json.loads(seal.open("memory_revision.contexts", r.id, r.contexts))
    return RevisionRow(
        revision=r.revision,
        content=seal.open("memory_revision.content", r.id, r.content),
        tags=json.loads(seal.open("memory_revision.tags", r.id, r.tags)),
        contexts=[{**c, "created_at": parse_iso(c["created_at"])} for c in contexts],
        source=r.source,
        edited_at=r.edited_at,
    )


def context_keys(contexts: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What makes two context lists the same to a reader (ids and times aside)."""
    return [(c["snippet"], c["conversation_id"], c["message_id"], c["origin"]) for c in contexts]
