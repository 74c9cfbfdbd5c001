"""Sealing a plaintext deployment's rows in place, or opening them again: one batch at a time.

Which tables and columns hold sealed text comes from one place, the registry the schema
declares (store/sealing/sealed.py): memories, contexts, drafts, revisions, vectors and whatever a
later table adds. Each batch is one transaction over rows locked for it, and rewrites whole rows (a
memory's postings with it), so a run stopped anywhere, even by kill -9, leaves every row either
plain or sealed, never half, and a new run picks up where it stopped.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Row,
    Table,
    and_,
    func,
    not_,
    or_,
    select,
    update,
)

from memory_bank.store import postings, tags
from memory_bank.store.engine import is_sqlite
from memory_bank.store.schema import memory, memory_context, memory_tag, memory_term
from memory_bank.store.sealing import crypto
from memory_bank.store.sealing.data_keys import PLAIN, PLAIN_TAG_PREFIX, Sealer
from memory_bank.store.sealing.sealed import SealedTable, registry

log = logging.getLogger("memory_bank.crypto")
CHECKPOINT_ATTEMPTS = 10
IndexOf = Callable[[str, Sequence[str], Sequence[str]], postings.Postings]


def tables() -> tuple[SealedTable, ...]:
    """The tables a conversion walks, in order (the schema's registry)."""
    return registry()


def users_with_rows(conn: Connection) -> list[str]:
    """Every owner with a row in a sealed table: a cross-owner read, for the operator's
    conversion."""
    found: set[str] = set()
    for spec in tables():
        column = spec.table.c[spec.owner]
        stored = conn.execute(select(column).distinct()).scalars()
        found.update(spec.owner_key(value) for value in stored)
    return sorted(found)


def count_rows(conn: Connection) -> int:
    """Rows of every sealed table, over every owner (the progress bar's total)."""
    total = 0
    for spec in tables():
        stmt = select(func.count()).select_from(spec.table)
        total += int(conn.execute(stmt).scalar() or 0)
    return total


def _wrong(spec: SealedTable, *, to_sealed: bool) -> ColumnElement[bool]:
    """Rows with a column still in the other form."""
    table = spec.table
    sealed = {name: table.c[name].like(crypto.SEALED_PREFIX + "%") for name in spec.columns}
    if to_sealed:
        # A NULL (no citation) has nothing to seal.
        return or_(*(and_(table.c[n].is_not(None), not_(s)) for n, s in sealed.items()))
    return or_(*sealed.values())


def _terms_wrong(*, to_sealed: bool) -> ColumnElement[bool]:
    """Postings whose term is still in the other form (a plain word, or a keyed hash)."""
    hashed = memory_term.c.term.like(crypto.HASHED_TERM_PREFIX + "%")
    return not_(hashed) if to_sealed else hashed


def _tags_wrong(*, to_sealed: bool) -> ColumnElement[bool]:
    """Tag rows still in the other form (a folded tag, or a keyed hash)."""
    wrong = PLAIN_TAG_PREFIX if to_sealed else crypto.HASHED_TERM_PREFIX
    return memory_tag.c.tag.like(wrong + "%")


def left_to_convert(conn: Connection, user_id: str, *, to_sealed: bool) -> int:
    """How many of the owner's rows (postings included) still hold a value in the other form.

    Reads the registry itself, never the walk's list: this count decides whether a key may go.
    """
    left = 0
    for spec in registry():
        stmt = (
            select(func.count())
            .select_from(spec.table)
            .where(spec.owner_is(user_id), _wrong(spec, to_sealed=to_sealed))
        )
        left += int(conn.execute(stmt).scalar() or 0)
    terms = select(func.count()).where(
        memory_term.c.user_id == user_id, _terms_wrong(to_sealed=to_sealed)
    )
    labels = select(func.count()).where(
        memory_tag.c.user_id == user_id, _tags_wrong(to_sealed=to_sealed)
    )
    return left + int(conn.execute(terms).scalar() or 0) + int(conn.execute(labels).scalar() or 0)


def convert_batch(
    conn: Connection,
    spec: SealedTable,
    user_id: str,
    seal: Sealer,
    after: str,
    size: int,
    *,
    to_sealed: bool,
    index_of: IndexOf,
) -> tuple[list[str], int]:
    """Seal (or open) the owner's next batch of rows of one table after `after` (by row id),
    locked until the caller commits; a memory's postings follow it. (ids read, rows changed)."""
    table = spec.table
    row_column = table.c[spec.row]
    rows = conn.execute(
        select(row_column, *(table.c[name] for name in spec.columns))
        .where(spec.owner_is(user_id), row_column > after)
        .order_by(row_column)
        .limit(size)
        # An edit, a restore or a new vector of these rows waits for this batch, so nothing
        # written meanwhile is overwritten with what was read before it.
        .with_for_update()
    ).all()
    ids = [str(r[0]) for r in rows]
    changed = 0
    for r in rows:
        values = _converted(spec, seal, r, to_sealed=to_sealed)
        if values:
            conn.execute(
                update(table).where(spec.owner_is(user_id), row_column == r[0]).values(values)
            )
            changed += 1
    if table is memory and ids:
        _reindex(conn, user_id, seal, ids, to_sealed=to_sealed, index_of=index_of)
    return ids, changed


def _converted(
    spec: SealedTable, seal: Sealer, row: Row[Any], *, to_sealed: bool
) -> dict[str, str]:
    """The row's columns that change, in their new form (none when all are right already)."""
    row_id = str(row[0])
    values = {}
    for name in spec.columns:
        stored = getattr(row, name)
        if stored is None or crypto.is_sealed(stored) == to_sealed:
            continue
        column = spec.column_name(name)
        text = seal.open(column, row_id, stored)
        values[name] = seal.seal(column, row_id, text) if to_sealed else text
    return values


def _reindex(
    conn: Connection,
    user_id: str,
    seal: Sealer,
    ids: Sequence[str],
    *,
    to_sealed: bool,
    index_of: IndexOf,
) -> None:
    """Rebuild, in the new form, the postings and tag rows of these memories that hold a term or
    a tag in the other form (words stay out of a sealed owner's index; hashes out of a plain
    one's)."""
    _retag(conn, user_id, seal, ids, to_sealed=to_sealed)
    todo = _holding(conn, memory_term, user_id, ids, _terms_wrong(to_sealed=to_sealed))
    if not todo:
        return
    found = conn.execute(
        select(memory.c.id, memory.c.content, memory.c.tags).where(
            memory.c.user_id == user_id, memory.c.id.in_(todo)
        )
    ).all()
    snippets: dict[str, list[str]] = {r.id: [] for r in found}
    for c in conn.execute(
        select(memory_context.c.id, memory_context.c.memory_id, memory_context.c.snippet)
        .where(memory_context.c.user_id == user_id, memory_context.c.memory_id.in_(todo))
        .order_by(memory_context.c.memory_id, memory_context.c.position)
    ):
        snippets[c.memory_id].append(seal.open("memory_context.snippet", c.id, c.snippet))
    entries: dict[str, postings.Postings] = {}
    for r in found:
        content = seal.open("memory.content", r.id, r.content)
        tags = json.loads(seal.open("memory.tags", r.id, r.tags))
        index = index_of(content, tags, snippets[r.id])
        entries[r.id] = seal.postings(index) if to_sealed else index
    postings.replace(conn, user_id, entries)


def _retag(
    conn: Connection, user_id: str, seal: Sealer, ids: Sequence[str], *, to_sealed: bool
) -> None:
    """Rewrite, in the new form, the tag rows of these memories that hold one in the other."""
    todo = _holding(conn, memory_tag, user_id, ids, _tags_wrong(to_sealed=to_sealed))
    if not todo:
        return
    found = conn.execute(
        select(memory.c.id, memory.c.tags, memory.c.created_at).where(
            memory.c.user_id == user_id, memory.c.id.in_(todo)
        )
    ).all()
    writer = seal if to_sealed else PLAIN  # hashes when sealing, folded tags when opening
    for r in found:
        labels = json.loads(seal.open("memory.tags", r.id, r.tags))
        tags.replace(conn, writer, user_id, r.id, r.created_at, labels)


def compact(engine: Engine) -> bool:
    """VACUUM a SQLite file and empty its WAL, so pages freed by a conversion keep no old text;
    False when another connection kept it busy, or the engine is not SQLite."""
    if not is_sqlite(engine):
        return False
    raw = engine.raw_connection()
    try:
        # The pool's connections run without implicit transactions (engine.py), as VACUUM needs.
        cursor = raw.cursor()
        cursor.execute("VACUUM")
        for attempt in range(CHECKPOINT_ATTEMPTS):
            # A reader of the live service may still need the WAL's frames: wait and retry.
            busy = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                break
            time.sleep(0.2 * (attempt + 1))
        cursor.close()
    except sqlite3.OperationalError as exc:
        log.warning("could not compact the database file: %s", exc)
        return False
    finally:
        raw.close()
    return not busy


def _holding(
    conn: Connection, table: Table, user_id: str, ids: Sequence[str], wrong: ColumnElement[bool]
) -> list[str]:
    """The memories among ids with a row of this index table (postings or tags) that is wrong."""
    return list(
        conn.execute(
            select(table.c.memory_id)
            .where(table.c.user_id == user_id, table.c.memory_id.in_(list(ids)), wrong)
            .distinct()
        ).scalars()
    )
