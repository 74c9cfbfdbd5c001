"""Sealing a plaintext deployment's rows in place, or opening them again: one batch at a time.

Each batch is one transaction that rewrites whole memories (their columns, contexts and
postings together), so a run stopped anywhere, even by kill -9, leaves every memory either
plain or sealed, never half, and a new run picks up where it stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from sqlalchemy import Connection, and_, func, not_, or_, select, union, update

from memory_bank.store import crypto, postings
from memory_bank.store.memories import open_context, seal_context
from memory_bank.store.owner_keys import Sealer
from memory_bank.store.schema import memory, memory_context, memory_draft

# The user-text columns of each table, as sealed (store/memories.py, store/drafts.py).
TEXT_COLUMNS = {
    memory: ("content", "tags"),
    memory_context: ("snippet", "conversation_id", "message_id"),
    memory_draft: ("content", "tags", "contexts"),
}
IndexOf = Callable[[str, Sequence[str], Sequence[str]], postings.Postings]


def users_with_rows(conn: Connection) -> list[str]:
    """Every user with memories or drafts: a cross-user read, for the operator's conversion."""
    found = union(select(memory.c.user_id), select(memory_draft.c.user_id))
    return sorted(conn.execute(found).scalars())


def count_rows(conn: Connection) -> int:
    """Memories and drafts of every user (the progress bar's total)."""
    total = 0
    for table in (memory, memory_draft):
        total += int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)
    return total


def left_to_convert(conn: Connection, user_id: str, *, to_sealed: bool) -> int:
    """How many of the user's rows still hold a column in the other form."""
    left = 0
    for table, columns in TEXT_COLUMNS.items():
        sealed = [table.c[name].like(crypto.SEALED_PREFIX + "%") for name in columns]
        if to_sealed:
            # A NULL citation has nothing to seal.
            pairs = zip(columns, sealed, strict=True)
            wrong = or_(*(and_(table.c[n].is_not(None), not_(s)) for n, s in pairs))
        else:
            wrong = or_(*sealed)
        stmt = select(func.count()).select_from(table).where(table.c.user_id == user_id, wrong)
        left += int(conn.execute(stmt).scalar() or 0)
    return left


def convert_memories(
    conn: Connection,
    user_id: str,
    seal: Sealer,
    after: str,
    size: int,
    *,
    to_sealed: bool,
    index_of: IndexOf,
) -> tuple[list[str], int]:
    """Seal (or open) the user's next batch of memories after `after`, with their contexts and
    postings; (ids read, memories changed)."""
    rows = conn.execute(
        select(memory.c.id, memory.c.content, memory.c.tags)
        .where(memory.c.user_id == user_id, memory.c.id > after)
        .order_by(memory.c.id)
        .limit(size)
    ).all()
    todo = [r for r in rows if crypto.is_sealed(r.content) != to_sealed]
    if not todo:
        return [r.id for r in rows], 0
    contexts: dict[str, list[dict[str, object]]] = {r.id: [] for r in todo}
    for c in conn.execute(
        select(memory_context)
        .where(
            memory_context.c.user_id == user_id,
            memory_context.c.memory_id.in_(list(contexts)),
        )
        .order_by(memory_context.c.memory_id, memory_context.c.position)
    ):
        contexts[c.memory_id].append(open_context(seal, dict(c._mapping)))
    entries: dict[str, postings.Postings] = {}
    for r in todo:
        content = seal.open("memory.content", r.id, r.content)
        tags_text = seal.open("memory.tags", r.id, r.tags)
        stored = (
            (seal.seal("memory.content", r.id, content), seal.seal("memory.tags", r.id, tags_text))
            if to_sealed
            else (content, tags_text)
        )
        conn.execute(
            update(memory)
            .where(memory.c.user_id == user_id, memory.c.id == r.id)
            .values(content=stored[0], tags=stored[1])
        )
        for ctx in contexts[r.id]:
            values = seal_context(seal, ctx) if to_sealed else ctx
            conn.execute(
                update(memory_context)
                .where(memory_context.c.user_id == user_id, memory_context.c.id == ctx["id"])
                .values({name: values[name] for name in TEXT_COLUMNS[memory_context]})
            )
        snippets = [str(c["snippet"]) for c in contexts[r.id]]
        index = index_of(content, json.loads(tags_text), snippets)
        entries[r.id] = seal.postings(index) if to_sealed else index
    postings.replace(conn, user_id, entries)
    return [r.id for r in rows], len(todo)


def convert_drafts(
    conn: Connection, user_id: str, seal: Sealer, after: str, size: int, *, to_sealed: bool
) -> tuple[list[str], int]:
    """Seal (or open) the user's next batch of drafts after `after`; (ids read, changed)."""
    rows = conn.execute(
        select(memory_draft.c.id, *(memory_draft.c[n] for n in TEXT_COLUMNS[memory_draft]))
        .where(memory_draft.c.user_id == user_id, memory_draft.c.id > after)
        .order_by(memory_draft.c.id)
        .limit(size)
    ).all()
    changed = 0
    for r in rows:
        if crypto.is_sealed(r.content) == to_sealed:
            continue
        values = {}
        for name in TEXT_COLUMNS[memory_draft]:
            column = f"memory_draft.{name}"
            text = seal.open(column, r.id, getattr(r, name))
            values[name] = seal.seal(column, r.id, text) if to_sealed else text
        conn.execute(
            update(memory_draft)
            .where(memory_draft.c.user_id == user_id, memory_draft.c.id == r.id)
            .values(values)
        )
        changed += 1
    return [r.id for r in rows], changed
