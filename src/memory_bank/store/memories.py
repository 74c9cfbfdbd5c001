"""Owner-scoped queries on memories and their contexts; every statement filters by user_id.

The user_id column holds the owner key: a user's id, or an org's key for org memories
(store/owners.py), so every statement names exactly one owner either way.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    or_,
    select,
    tuple_,
)

from memory_bank.store import filters
from memory_bank.store.engine import is_sqlite
from memory_bank.store.schema import memory, memory_context
from memory_bank.store.sealing import data_keys


@dataclass(frozen=True)
class NewContext:
    """A context as given by a client, already validated."""

    snippet: str
    conversation_id: str | None
    message_id: str | None
    origin: str | None


@dataclass
class MemoryRow:
    """A memory with its contexts, as stored."""

    id: str
    user_id: str
    content: str
    tags: list[str]
    source: str
    scope: str
    created_at: datetime
    updated_at: datetime
    contexts: list[dict[str, Any]] = field(default_factory=list)
    created_by: str | None = None
    revision: int = 1


def seal_context(seal: data_keys.Sealer, ctx: dict[str, Any]) -> dict[str, Any]:
    """A context's columns as stored: its snippet and citation sealed with its own id."""
    cid = ctx["id"]
    return {
        **ctx,
        "snippet": seal.seal("memory_context.snippet", cid, ctx["snippet"]),
        "conversation_id": seal.seal_opt(
            "memory_context.conversation_id", cid, ctx["conversation_id"]
        ),
        "message_id": seal.seal_opt("memory_context.message_id", cid, ctx["message_id"]),
    }


def open_context(seal: data_keys.Sealer, ctx: dict[str, Any]) -> dict[str, Any]:
    """A stored context with its snippet and citation opened."""
    cid = ctx["id"]
    return {
        **ctx,
        "snippet": seal.open("memory_context.snippet", cid, ctx["snippet"]),
        "conversation_id": seal.open_opt(
            "memory_context.conversation_id", cid, ctx["conversation_id"]
        ),
        "message_id": seal.open_opt("memory_context.message_id", cid, ctx["message_id"]),
    }


def get_memories(conn: Connection, user_id: str, ids: Sequence[str]) -> dict[str, MemoryRow]:
    """The user's memories with these ids (others' ids are simply absent), with contexts."""
    if not ids:
        return {}
    sqlite = is_sqlite(conn)
    seal = data_keys.sealer(conn, user_id)
    rows = conn.execute(_GET[sqlite], _owned_params(sqlite, user_id, ids)).all()
    found = {r.id: _row(r, seal) for r in rows}
    # The contexts in a statement of their own, not joined: MariaDB planned that join by what
    # it knew of the tables when it opened them, and a table opened small and grown since made
    # it read every context of the user per memory (hundreds of times slower for a 50k-memory
    # user until the statistics were read again). Alone, the pairs are a range on
    # (user_id, memory_id).
    _attach_contexts(conn, user_id, found, seal)
    return found


def list_memories(
    conn: Connection,
    user_id: str,
    limit: int,
    before: tuple[datetime, str] | None,
    only: filters.Filters = filters.NONE,
) -> list[MemoryRow]:
    """One page of the user's memories that pass the filters, newest first: by creation time,
    then id, after the position `before` (a memory's created_at and id) when given.

    Each filter reads one index of the owner's (store/filters.py), never every memory.
    """
    if not only:
        seal = data_keys.sealer(conn, user_id)
        page = [_row(r, seal) for r in _page(conn, user_id, limit, before, only)]
        _attach_contexts(conn, user_id, {m.id: m for m in page}, seal)
        return page
    # A filtered page is found as ids in driver SQL (filters.page), then read by id.
    since = only.updated_after
    if since is None:
        ids = filters.page(conn, user_id, only, limit, before)
    else:
        # Whatever was created since `since` was updated since: those come first, through the
        # creation-time index; older memories pass only if edited since, read by update time
        # when few were (else a walk by creation time meets them soon).
        ids = []
        if only.created_before is None or only.created_before > since:
            start = since if only.created_after is None else max(only.created_after, since)
            newer = replace(only, created_after=start, updated_after=None)
            ids = filters.page(conn, user_id, newer, limit, before)
        if len(ids) < limit:
            end = since if only.created_before is None else min(only.created_before, since)
            older = replace(only, created_before=end)
            changed = filters.changed_since(conn, user_id, since)
            if changed is None:
                ids += filters.page(conn, user_id, older, limit - len(ids), before)
            else:
                edited = _page(conn, user_id, limit - len(ids), before, older, changed)
                ids += [r.id for r in edited]
    if not ids:
        return []
    # Rows, then contexts. The rows by user_id = ? AND id IN (…) on both engines: at 100k
    # memories MariaDB read 200 (an export's page) so in a few ms where the (user_id, id) pairs
    # that get_memories uses took 30 (its range analysis grows with the pairs).
    seal = data_keys.sealer(conn, user_id)
    rows = conn.execute(_BY_ID, _owned_params(True, user_id, ids)).all()
    by_id = {r.id: _row(r, seal) for r in rows}
    _attach_contexts(conn, user_id, by_id, seal)
    return [by_id[mid] for mid in ids if mid in by_id]


def _page(
    conn: Connection,
    user_id: str,
    limit: int,
    before: tuple[datetime, str] | None,
    only: filters.Filters,
    ids: list[str] | None = None,
) -> list[Any]:
    """Memory rows that pass the filters, newest first, after `before`: read through the index
    that leads (filters.driven), or among these ids when given."""
    params: dict[str, Any] = {}
    if ids is None:
        stmt, when, key = filters.driven(conn, user_id, only)
    elif not ids:
        return []
    else:
        sqlite = is_sqlite(conn)
        forms = filters.tag_forms(conn, user_id, only)
        stmt = select(memory).where(
            _owned(sqlite, memory.c.user_id, memory.c.id),
            *filters.columns(only),
            *(filters.carries(f) for f in forms),
        )
        params = _owned_params(sqlite, user_id, ids)
        when, key = memory.c.created_at, memory.c.id
    if before is not None:
        # created_at <= c bounds the index range; the OR only breaks ties of one millisecond.
        stmt = stmt.where(when <= before[0], or_(when < before[0], key < before[1]))
    return list(conn.execute(stmt.order_by(when.desc(), key.desc()).limit(limit), params).all())


def locked(conn: Connection, user_id: str, memory_id: str) -> MemoryRow | None:
    """The owner's memory with its contexts, its row locked to commit (MySQL/MariaDB; SQLite
    writers are serial), so an edit decided on its revision cannot race another."""
    sqlite = is_sqlite(conn)
    # The row is read and locked by one statement: an edit's reads before its write batch are
    # this and its contexts (store/memory_writes.py).
    stmt = _GET[True] if sqlite else _GET_LOCKED
    found = conn.execute(stmt, _owned_params(sqlite, user_id, [memory_id])).first()
    if found is None:
        return None
    seal = data_keys.sealer(conn, user_id)
    rows = {memory_id: _row(found, seal)}
    _attach_contexts(conn, user_id, rows, seal)
    return rows[memory_id]


def lock_row(conn: Connection, user_id: str, memory_id: str) -> bool:
    """Lock the owner's memory row to commit (MySQL/MariaDB); False when it is not theirs."""
    return conn.execute(_LOCK_ROW, {"user_id": user_id, "id": memory_id}).first() is not None


def _owner_lock(*columns: Any) -> Any:
    """A locking read of one owner's memory row, found through its key (user_id, id).

    Another tenant's key for an id its owner holds locked matches no row and takes only a gap
    lock, which waits for no one: a missing id and someone else's answer 404 alike, at once,
    so existence never shows in the timing.
    """
    stmt = select(*columns).where(
        memory.c.user_id == bindparam("user_id"), memory.c.id == bindparam("id")
    )
    return stmt.with_for_update()


_LOCK_ROW = _owner_lock(memory.c.id)
_LOCK_AUTHOR = _owner_lock(memory.c.created_by, memory.c.revision)


def author(conn: Connection, user_id: str, memory_id: str) -> tuple[bool, str | None, int]:
    """Whether the owner has this memory, who created it and its revision; the row stays
    locked to commit (MySQL/MariaDB), so a delete decided on it cannot race another."""
    found = conn.execute(_LOCK_AUTHOR, {"user_id": user_id, "id": memory_id}).first()
    if found is None:
        return (False, None, 0)
    return (True, found.created_by, found.revision)


def _owned(sqlite: bool, user_col: Any, id_col: Any) -> ColumnElement[bool]:
    """user_col = user AND id_col IN ids, in the form each engine plans best (bound later by
    _owned_params)."""
    if sqlite:
        return and_(user_col == bindparam("owner"), id_col.in_(bindparam("ids", expanding=True)))
    # (user_id, id) pairs: MariaDB then reads just these rows instead of scanning the user's whole
    # range with user_id = ? AND id IN (…) (several times faster for a 10k-memory user).
    # SQLite plans the pair form as a full scan, hence the split.
    return tuple_(user_col, id_col).in_(bindparam("pairs", expanding=True))


def _owned_params(sqlite: bool, user_id: str, ids: Sequence[str]) -> dict[str, Any]:
    """The values for an _owned() clause."""
    if sqlite:
        return {"owner": user_id, "ids": list(ids)}
    return {"pairs": [(user_id, i) for i in ids]}


def _attach_contexts(
    conn: Connection, user_id: str, found: dict[str, MemoryRow], seal: data_keys.Sealer
) -> None:
    """Load the contexts of these memories, in their saved order."""
    if not found:
        return
    sqlite = is_sqlite(conn)
    rows = conn.execute(_CONTEXTS_OF[sqlite], _owned_params(sqlite, user_id, list(found))).all()
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        grouped[r.memory_id].append(open_context(seal, _context_dict(r._mapping)))
    for mid, row in found.items():
        row.contexts = grouped.get(mid, [])


# Built once per engine form (keyed by "is SQLite"), so SQLAlchemy reuses their cache keys.
_GET = {
    sqlite: select(memory).where(_owned(sqlite, memory.c.user_id, memory.c.id))
    for sqlite in (True, False)
}
# A locking read of one owner's memory through its key, as _owner_lock below.
_GET_LOCKED = _GET[False].with_for_update()
# On MariaDB through the primary key (user_id, id) whatever the statistics say, so that a plan
# made on statistics taken while the owner's rows were still coming cannot read a page's few
# memories through another index of user_id, that is every memory of the owner (a listing
# test under load once read 1,518 rows for a page of 15; which statement did is not known).
_BY_ID = (
    select(memory)
    .where(_owned(True, memory.c.user_id, memory.c.id))
    .with_hint(memory, "FORCE INDEX (PRIMARY)", "mysql")
    .with_hint(memory, "FORCE INDEX (PRIMARY)", "mariadb")
)
_CONTEXTS_OF = {
    sqlite: select(memory_context)
    .where(_owned(sqlite, memory_context.c.user_id, memory_context.c.memory_id))
    .order_by(memory_context.c.memory_id, memory_context.c.position)
    for sqlite in (True, False)
}


def _row(r: Any, seal: data_keys.Sealer) -> MemoryRow:
    """A memory row from a result row, opened."""
    return MemoryRow(
        id=r.id,
        user_id=r.user_id,
        content=seal.open("memory.content", r.id, r.content),
        tags=json.loads(seal.open("memory.tags", r.id, r.tags)),
        source=r.source,
        scope=r.scope,
        created_at=r.created_at,
        updated_at=r.updated_at,
        created_by=r.created_by,
        revision=r.revision,
    )


def _context_dict(r: Any) -> dict[str, Any]:
    """A context as stored, keyed by column."""
    return {
        "id": r["id"],
        "snippet": r["snippet"],
        "conversation_id": r["conversation_id"],
        "message_id": r["message_id"],
        "origin": r["origin"],
        "created_at": r["created_at"],
    }
