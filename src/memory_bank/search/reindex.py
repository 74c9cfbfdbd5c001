"""Rebuild the per-user index from the stored memories, and keep it at the current analyzer."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from memory_bank.search import analyzer, index
from memory_bank.store.engine import writing
from memory_bank.store.schema import memory, memory_context, memory_term, memory_user_stats
from memory_bank.store.schema import service_state as state_table

log = logging.getLogger("memory_bank.search")

STATE_NAME = "search_index_version"
BATCH = 500


def index_version() -> str:
    """What stored postings depend on: the analyzer's version and the field weights."""
    weights = f"{index.CONTENT_WEIGHT},{index.TAG_WEIGHT},{index.CONTEXT_WEIGHT}"
    return f"analyzer={analyzer.ANALYZER_VERSION};weights={weights}"


def stored_version(engine: Engine) -> str | None:
    """The index version recorded in the database (None when never recorded)."""
    with engine.connect() as conn:
        value = conn.execute(
            select(state_table.c.value).where(state_table.c.name == STATE_NAME)
        ).scalar()
    return None if value is None else str(value)


def _record_version(conn: Connection) -> None:
    """Record that every posting was made by this code's analyzer."""
    conn.execute(delete(state_table).where(state_table.c.name == STATE_NAME))
    conn.execute(insert(state_table).values(name=STATE_NAME, value=index_version()))


def count_memories(engine: Engine, user_id: str | None = None) -> int:
    """How many memories a rebuild will read."""
    stmt = select(func.count()).select_from(memory)
    if user_id is not None:
        stmt = stmt.where(memory.c.user_id == user_id)
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar() or 0)


def _users(engine: Engine) -> list[str]:
    """Every user that has memories or index statistics."""
    with engine.connect() as conn:
        users = set(conn.execute(select(memory.c.user_id).distinct()).scalars())
        users |= set(conn.execute(select(memory_user_stats.c.user_id)).scalars())
    return sorted(users)


def _reindex_batch(conn: Connection, user_id: str, after: str, size: int) -> list[str]:
    """Re-analyse the user's next batch of memories (by id) and replace their postings."""
    rows = conn.execute(
        select(memory.c.id, memory.c.content, memory.c.tags)
        .where(memory.c.user_id == user_id, memory.c.id > after)
        .order_by(memory.c.id)
        .limit(size)
    ).all()
    if not rows:
        return []
    ids = [r.id for r in rows]
    snippets: dict[str, list[str]] = {mid: [] for mid in ids}
    for mid, snippet in conn.execute(
        select(memory_context.c.memory_id, memory_context.c.snippet)
        .where(memory_context.c.user_id == user_id, memory_context.c.memory_id.in_(ids))
        .order_by(memory_context.c.memory_id, memory_context.c.position)
    ):
        snippets[mid].append(snippet)
    conn.execute(
        delete(memory_term).where(
            memory_term.c.user_id == user_id, memory_term.c.memory_id.in_(ids)
        )
    )
    postings: list[dict[str, Any]] = []
    for r in rows:
        counts, length = index.document_counts(r.content, json.loads(r.tags), snippets[r.id])
        postings.extend(index.posting_rows(user_id, r.id, counts, length))
    if postings:
        conn.execute(insert(memory_term), postings)
    return ids


def _recount(conn: Connection, user_id: str) -> None:
    """Set a user's statistics from their memories and postings (drop them when none left)."""
    docs = int(conn.execute(select(func.count()).where(memory.c.user_id == user_id)).scalar() or 0)
    lengths = (
        select(func.max(memory_term.c.doc_len).label("len"))
        .where(memory_term.c.user_id == user_id)
        .group_by(memory_term.c.memory_id)
        .subquery()
    )
    total = int(conn.execute(select(func.coalesce(func.sum(lengths.c.len), 0))).scalar() or 0)
    table = memory_user_stats
    if docs == 0:
        conn.execute(delete(table).where(table.c.user_id == user_id))
        return
    done = conn.execute(
        update(table).where(table.c.user_id == user_id).values(doc_count=docs, total_len=total)
    )
    if done.rowcount == 0:
        conn.execute(insert(table).values(user_id=user_id, doc_count=docs, total_len=total))


def rebuild(
    engine: Engine,
    user_id: str | None = None,
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Rebuild one user's (or everyone's) postings and statistics; returns memories indexed.

    Each batch is one transaction and replaces whole memories' postings, so searches running
    meanwhile see every memory indexed exactly once (by the old or the new analyzer).
    """
    done = 0
    for user in [user_id] if user_id is not None else _users(engine):
        after = ""
        while True:
            ids = writing(engine, partial(_reindex_batch, user_id=user, after=after, size=batch))
            if not ids:
                break
            after = ids[-1]
            done += len(ids)
            if progress is not None:
                progress(len(ids))
        # Postings of memories deleted meanwhile are removed by their delete; recount at the end.
        writing(engine, partial(_recount, user_id=user))
    if user_id is None:
        writing(engine, _record_version)
    return done


def ensure_current(engine: Engine) -> bool:
    """Rebuild the whole index when it was made by another analyzer; True when it rebuilt."""
    found = stored_version(engine)
    if found == index_version():
        return False
    if count_memories(engine) == 0:
        writing(engine, _record_version)
        return False
    log.warning(
        "search index was built by %s, this code uses %s: rebuilding it now",
        found or "an older version",
        index_version(),
    )
    total = rebuild(engine)
    log.warning("search index rebuilt: %d memories", total)
    return True
