"""A memory's writes: insert, edit and delete, with its contexts, postings, tags, revisions,
vector and tombstone in the caller's transaction; every statement filters by user_id."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

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
    commit: bool = False,
    **given: Any,
) -> MemoryRow:
    """Write a memory, its contexts and its index postings in the caller's transaction
    (insert_statements; `given` as there).

    commit=True, for a caller whose transaction ends with this write: on MySQL/MariaDB the
    COMMIT then travels in the same round trip as the writes (batch.execute); elsewhere the
    caller's transaction commits as usual.
    """
    row, statements = insert_statements(conn, owner, content, tags, contexts, index, **given)
    batch.run(conn, statements, commit=commit)
    return row


def insert_statements(
    conn: Connection,
    owner: Owner,
    content: str,
    tags: Sequence[str],
    contexts: Sequence[NewContext],
    index: postings.Postings,
    *,
    memory_id: str | None = None,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    context_ids: Sequence[str] | None = None,
    context_times: Sequence[datetime] | None = None,
) -> tuple[MemoryRow, list[batch.Statement]]:
    """A new memory and the statements that write it, its contexts, postings, statistics, tags
    and queued embedding (batch.run sends them; insert_memory does).

    updated_at and the contexts' ids and times are given only when restoring an export (users
    import).
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
    ), statements


def update_statements(
    conn: Connection,
    row: MemoryRow,
    contexts: Sequence[dict[str, Any]] | None,
    index: postings.Postings | None,
    *,
    tags_changed: bool = True,
) -> list[batch.Statement]:
    """The statements that write an edited memory over its stored state: content, tags,
    revision and time; its contexts when given (replacing all); its postings when given (old
    ones removed, the statistics adjusted in the same UPDATE); its tag rows when its tags
    changed. batch.run sends them."""
    seal = data_keys.sealer(conn, row.user_id, create=True)
    tags_text = json.dumps(list(row.tags), ensure_ascii=False)
    statements = [
        batch.Statement(
            "UPDATE memory SET content = %s, tags = %s, revision = %s, updated_at = %s "
            "WHERE user_id = %s AND id = %s",
            (
                seal.seal("memory.content", row.id, row.content),
                seal.seal("memory.tags", row.id, tags_text),
                row.revision,
                row.updated_at,
                row.user_id,
                row.id,
            ),
        )
    ]
    if contexts is not None:
        rows = [
            {"memory_id": row.id, "user_id": row.user_id, "position": pos, **seal_context(seal, c)}
            for pos, c in enumerate(contexts)
        ]
        statements += [_contexts_gone(row.user_id, row.id), *batch.inserts(memory_context, rows)]
    if index is not None:
        index = seal.postings(index)
        statements += postings.swap_statements(conn.dialect.name, row.user_id, row.id, index)
    if tags_changed:
        statements += memory_tags.replace_statements(
            seal, row.user_id, row.id, row.created_at, row.tags
        )
    return statements


def delete_statements(
    dialect: str, user_id: str, memory_id: str, now: datetime
) -> list[batch.Statement]:
    """The statements that delete the user's memory, its contexts, postings (statistics
    adjusted), tags, revisions, vector and queued jobs, leaving a tombstone; batch.run sends
    them, in a transaction that holds the memory's row locked."""
    return [
        *postings.swap_statements(dialect, user_id, memory_id, None),
        *memory_tags.remove_statements(user_id, memory_id),
        revisions.delete_statement(user_id, memory_id),
        # Its vector and queued jobs go too (whether or not search uses them now).
        *vectors.remove_statements(dialect, user_id, memory_id),
        _contexts_gone(user_id, memory_id),
        batch.Statement("DELETE FROM memory WHERE user_id = %s AND id = %s", (user_id, memory_id)),
        tombstones.add_statement(user_id, memory_id, now),
    ]


def delete_memory(
    conn: Connection,
    user_id: str,
    memory_id: str,
    now: datetime | None = None,
    *,
    locked: bool = False,
    commit: bool = False,
) -> bool:
    """Delete the user's memory, its contexts and postings, leaving a tombstone (its id and
    the time); False when it is not theirs. locked=True: the caller holds the row locked
    already (it read it with a locking read); commit=True: the transaction's last write."""
    # Locked (MySQL/MariaDB; SQLite writers are serial anyway): of two deletes of one memory,
    # the second waits for the first and finds it gone, rather than deleting it twice.
    if not locked and not lock_row(conn, user_id, memory_id):
        return False
    statements = delete_statements(conn.dialect.name, user_id, memory_id, now or utcnow())
    batch.run(conn, statements, commit=commit)
    return True


def _contexts_gone(user_id: str, memory_id: str) -> batch.Statement:
    """The DELETE of one memory's contexts."""
    return batch.Statement(
        "DELETE FROM memory_context WHERE user_id = %s AND memory_id = %s", (user_id, memory_id)
    )
