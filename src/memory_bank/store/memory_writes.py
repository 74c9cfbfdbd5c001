"""A memory's writes: insert, edit and delete, with its contexts, postings, tags, revisions,
vector and tombstone in the caller's transaction; every statement filters by user_id."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, update

from memory_bank.ids import new_id, utcnow
from memory_bank.store import batch, postings, revisions, tombstones, vectors
from memory_bank.store import tags as memory_tags
from memory_bank.store.memories import MemoryRow, NewContext, lock_row, seal_context
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory, memory_context
from memory_bank.store.sealing import data_keys


def insert_memory(
    conn: Connection,
    owner: Owner,
    content: str,
    tags: Sequence[str],
    contexts: Sequence[NewContext],
    index: postings.Postings,
    *,
    memory_id: str | None = None,
    created_at: datetime | None = None,
    commit: bool = False,
    updated_at: datetime | None = None,
    context_ids: Sequence[str] | None = None,
    context_times: Sequence[datetime] | None = None,
) -> MemoryRow:
    """Write a memory, its contexts and its index postings in the caller's transaction.

    commit=True, for a caller whose transaction ends with this write: on MySQL/MariaDB the
    COMMIT then travels in the same round trip as the writes (batch.execute); elsewhere the
    caller's transaction commits as usual. updated_at and the contexts' ids and times are
    given only when restoring an export (users import).
    """
    now = created_at or utcnow()
    mid = memory_id or new_id("mem")
    # Sealed per owner, column and row when encryption is on (store/sealing/data_keys.py).
    seal = data_keys.sealer(conn, owner.user_id, create=True)
    tags_text = json.dumps(list(tags), ensure_ascii=False)
    row = {
        "id": mid,
        "user_id": owner.user_id,
        "org_id": owner.org_id,
        "content": seal.seal("memory.content", mid, content),
        "tags": seal.seal("memory.tags", mid, tags_text),
        "source": owner.source,
        "scope": owner.scope,
        "created_at": now,
        "updated_at": updated_at or now,
        "created_by": owner.created_by,
    }
    shown = [
        {
            "id": context_ids[pos] if context_ids else new_id("mctx"),
            "snippet": ctx.snippet,
            "conversation_id": ctx.conversation_id,
            "message_id": ctx.message_id,
            "origin": ctx.origin,
            "created_at": context_times[pos] if context_times else now,
        }
        for pos, ctx in enumerate(contexts)
    ]
    rows = [
        {
            "memory_id": mid,
            "user_id": owner.user_id,
            "position": pos,
            **seal_context(seal, ctx),
        }
        for pos, ctx in enumerate(shown)
    ]
    index = seal.postings(index)
    tag_rows = memory_tags.tag_rows(seal, owner.user_id, mid, now, tags)
    # One list, one send: on MySQL/MariaDB's save pool the memory, its contexts, postings,
    # statistics, tags, outbox row and the COMMIT travel in one round trip (store/batch.py).
    statements = [
        *batch.inserts(memory, [row]),
        *batch.inserts(memory_context, rows),
        *postings.add_statements(conn.dialect.name, owner.user_id, mid, index),
        *memory_tags.add_statements(tag_rows),
    ]
    if vectors.queueing(conn):
        # The outbox row commits with the memory: the worker embeds it later (store/vectors.py).
        statements += vectors.queue_statements(owner.user_id, [mid])
    batch.run(conn, statements, commit=commit)
    return MemoryRow(
        id=mid,
        user_id=owner.user_id,
        content=content,
        tags=list(tags),
        source=owner.source,
        scope=owner.scope,
        created_at=now,
        updated_at=updated_at or now,
        contexts=shown,
        created_by=owner.created_by,
    )


def update_memory(
    conn: Connection,
    row: MemoryRow,
    contexts: Sequence[dict[str, Any]] | None,
    index: postings.Postings | None,
) -> None:
    """Write an edited memory over its stored state: content, tags, revision and time; its
    contexts when given (replacing all); its postings when given (old ones removed)."""
    seal = data_keys.sealer(conn, row.user_id, create=True)
    tags_text = json.dumps(list(row.tags), ensure_ascii=False)
    conn.execute(
        update(memory)
        .where(memory.c.user_id == row.user_id, memory.c.id == row.id)
        .values(
            content=seal.seal("memory.content", row.id, row.content),
            tags=seal.seal("memory.tags", row.id, tags_text),
            revision=row.revision,
            updated_at=row.updated_at,
        )
    )
    if contexts is not None:
        conn.execute(
            delete(memory_context).where(
                memory_context.c.user_id == row.user_id, memory_context.c.memory_id == row.id
            )
        )
        rows = [
            {"memory_id": row.id, "user_id": row.user_id, "position": pos, **seal_context(seal, c)}
            for pos, c in enumerate(contexts)
        ]
        batch.run(conn, batch.inserts(memory_context, rows))
    if index is not None:
        postings.remove(conn, row.user_id, row.id)
        batch.run(
            conn,
            postings.add_statements(conn.dialect.name, row.user_id, row.id, seal.postings(index)),
        )
        memory_tags.replace(conn, seal, row.user_id, row.id, row.created_at, row.tags)


def delete_memory(
    conn: Connection, user_id: str, memory_id: str, now: datetime | None = None
) -> bool:
    """Delete the user's memory, its contexts and postings, leaving a tombstone (its id and
    the time); False when it is not theirs."""
    # Locked (MySQL/MariaDB; SQLite writers are serial anyway): of two deletes of one memory,
    # the second waits for the first and finds it gone, rather than deleting it twice.
    if not lock_row(conn, user_id, memory_id):
        return False
    postings.remove(conn, user_id, memory_id)
    memory_tags.remove(conn, user_id, [memory_id])
    revisions.delete_revisions(conn, user_id, memory_id)
    # Its vector and queued jobs go in the same transaction (whether or not search uses them now).
    vectors.remove(conn, user_id, memory_id)
    conn.execute(
        delete(memory_context).where(
            memory_context.c.user_id == user_id, memory_context.c.memory_id == memory_id
        )
    )
    conn.execute(delete(memory).where(memory.c.user_id == user_id, memory.c.id == memory_id))
    tombstones.add(conn, user_id, memory_id, now or utcnow())
    return True
