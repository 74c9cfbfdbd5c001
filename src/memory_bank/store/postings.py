"""The per-user index tables: postings and statistics, written with the memory they describe.

Search decides what a memory's postings are (search/document.py) and how they are ranked
(search/index.py); this module only stores them. Every statement filters by user_id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from memory_bank.store import batch
from memory_bank.store.schema import memory_term, memory_user_stats


@dataclass(frozen=True)
class Postings:
    """One memory's index entry: weighted term frequencies and the document length."""

    terms: Mapping[str, int]
    length: int


def posting_rows(user_id: str, memory_id: str, postings: Postings) -> list[dict[str, object]]:
    """The memory_term rows of one memory (shared by saves, reindex and bulk loads)."""
    return [
        {
            "user_id": user_id,
            "term": term,
            "memory_id": memory_id,
            "tf": tf,
            "doc_len": postings.length,
        }
        for term, tf in postings.terms.items()
    ]


def add_statements(
    dialect: str, user_id: str, memory_id: str, postings: Postings
) -> list[batch.Statement]:
    """Add one memory's postings and count it in the user's statistics (batch.run sends them)."""
    rows = posting_rows(user_id, memory_id, postings) if postings.terms else []
    return [
        *batch.inserts(memory_term, rows),
        *stats_statements(dialect, user_id, 1, postings.length),
    ]


def stats_statements(dialect: str, user_id: str, docs: int, length: int) -> list[batch.Statement]:
    """Add to a user's document count and total length, creating the row on first use.

    SQLite takes one upsert. MySQL/MariaDB takes an UPDATE of the user's row and an INSERT of it
    that happens only when the UPDATE matched nothing (the user's first memory), tested with
    ROW_COUNT() in the same session, so no answer has to come back before a batch can commit:
    the common case stays a plain UPDATE, which locks only the user's existing row, where an
    upsert's duplicate check would also take gap locks that concurrent first saves deadlock on.
    """
    if dialect == "sqlite":
        return [
            batch.Statement(
                "INSERT INTO memory_user_stats (user_id, doc_count, total_len) VALUES (%s, %s, %s) "
                "ON CONFLICT (user_id) DO UPDATE SET doc_count = doc_count + excluded.doc_count, "
                "total_len = total_len + excluded.total_len",
                (user_id, docs, length),
            )
        ]
    return [
        batch.Statement(
            "UPDATE memory_user_stats SET doc_count = doc_count + %s, total_len = total_len + %s "
            "WHERE user_id = %s",
            (docs, length, user_id),
        ),
        batch.Statement(
            "INSERT INTO memory_user_stats (user_id, doc_count, total_len) "
            "SELECT %s, %s, %s FROM DUAL WHERE ROW_COUNT() = 0 "
            "ON DUPLICATE KEY UPDATE doc_count = doc_count + %s, total_len = total_len + %s",
            (user_id, docs, length, docs, length),
        ),
    ]


def swap_statements(
    dialect: str, user_id: str, memory_id: str, postings: Postings | None
) -> list[batch.Statement]:
    """Replace a stored memory's postings with these (None: remove them, as its delete does),
    its statistics adjusted by one UPDATE; batch.run sends them.

    The statistics take the old document length from the postings they precede, so nothing has
    to be read before the batch. The memory exists, so its owner's statistics row does: one
    plain UPDATE of that row, with none of an upsert's gap locks (stats_statements).
    """
    docs, length = (0, postings.length) if postings is not None else (-1, 0)
    rows = posting_rows(user_id, memory_id, postings) if postings and postings.terms else []
    old_len = "SELECT doc_len FROM memory_term WHERE user_id = %s AND memory_id = %s LIMIT 1"
    if dialect == "sqlite":
        stats = [
            batch.Statement(
                "UPDATE memory_user_stats SET doc_count = doc_count + %s, total_len = total_len "
                f"+ %s - COALESCE(({old_len}), 0) WHERE user_id = %s",
                (docs, length, user_id, memory_id, user_id),
            )
        ]
    else:
        # The old length in a session variable, then an UPDATE that names no other table: a
        # Spider head sends that UPDATE to the backend as it is (with the subquery in it, it
        # read the statistics row first and updated it by its old values: a statement more).
        stats = [
            batch.Statement(f"SET @memory_bank_old_len = ({old_len})", (user_id, memory_id)),
            batch.Statement(
                "UPDATE memory_user_stats SET doc_count = doc_count + %s, total_len = total_len "
                "+ %s - COALESCE(@memory_bank_old_len, 0) WHERE user_id = %s",
                (docs, length, user_id),
            ),
        ]
    return [
        *stats,
        batch.Statement(
            "DELETE FROM memory_term WHERE user_id = %s AND memory_id = %s", (user_id, memory_id)
        ),
        *batch.inserts(memory_term, rows),
    ]


def replace(conn: Connection, user_id: str, entries: Mapping[str, Postings]) -> None:
    """Swap the postings of these memories of the user for new ones (statistics: recount())."""
    ids = list(entries)
    conn.execute(
        delete(memory_term).where(
            memory_term.c.user_id == user_id, memory_term.c.memory_id.in_(ids)
        )
    )
    rows = [r for mid, p in entries.items() for r in posting_rows(user_id, mid, p)]
    batch.run(conn, batch.inserts(memory_term, rows))


def recount(conn: Connection, user_id: str, docs: int) -> None:
    """Set a user's statistics from their postings (drop them when the user has no memories)."""
    table = memory_user_stats
    if docs == 0:
        conn.execute(delete(table).where(table.c.user_id == user_id))
        return
    lengths = (
        select(func.max(memory_term.c.doc_len).label("len"))
        .where(memory_term.c.user_id == user_id)
        .group_by(memory_term.c.memory_id)
        .subquery()
    )
    total = int(conn.execute(select(func.coalesce(func.sum(lengths.c.len), 0))).scalar() or 0)
    done = conn.execute(
        update(table).where(table.c.user_id == user_id).values(doc_count=docs, total_len=total)
    )
    if done.rowcount == 0:
        conn.execute(insert(table).values(user_id=user_id, doc_count=docs, total_len=total))


def owners(conn: Connection) -> list[str]:
    """Every user with statistics: a cross-user read, for the operator's maintenance only."""
    return sorted(conn.execute(select(memory_user_stats.c.user_id)).scalars())


def bump_stats(conn: Connection, user_id: str, docs: int, length: int) -> None:
    """Add to a user's document count and total length (creating the row on first use)."""
    batch.run(conn, stats_statements(conn.dialect.name, user_id, docs, length))


def memory_count(conn: Connection, user_id: str, *, lock: bool = False) -> int:
    """How many memories the user has (kept with the statistics); lock holds the row to commit."""
    # SQLite writers are already serialised by BEGIN IMMEDIATE, so only MySQL/MariaDB lock.
    stmt = _COUNT_LOCKED if lock and conn.dialect.name != "sqlite" else _COUNT
    return int(conn.execute(stmt, {"user_id": user_id}).scalar() or 0)


_STATS = memory_user_stats.c
_COUNT = select(_STATS.doc_count).where(_STATS.user_id == bindparam("user_id"))
_COUNT_LOCKED = _COUNT.with_for_update()
