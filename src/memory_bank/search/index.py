"""The per-user inverted index: postings in ordinary tables, BM25 computed in SQL."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, delete, func, insert, select, text, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from memory_bank.search.analyzer import term_counts, terms
from memory_bank.store.schema import memory_term, memory_user_stats

K1 = 1.2
B = 0.75


def document_text(content: str, tags: Iterable[str]) -> str:
    """The text a memory is indexed under: its content and its tags."""
    return " ".join([content, *tags])


def index_memory(conn: Connection, user_id: str, memory_id: str, document: str) -> None:
    """Add one memory's postings and update the user's statistics, in the caller's transaction."""
    counts, length = term_counts(document)
    if counts:
        conn.execute(
            insert(memory_term),
            [
                {
                    "user_id": user_id,
                    "term": term,
                    "memory_id": memory_id,
                    "tf": tf,
                    "doc_len": length,
                }
                for term, tf in counts.items()
            ],
        )
    _bump_stats(conn, user_id, 1, length)


def unindex_memory(conn: Connection, user_id: str, memory_id: str) -> None:
    """Remove one memory's postings and update the user's statistics."""
    doc_len = conn.execute(
        select(memory_term.c.doc_len)
        .where(memory_term.c.user_id == user_id, memory_term.c.memory_id == memory_id)
        .limit(1)
    ).scalar()
    conn.execute(
        delete(memory_term).where(
            memory_term.c.user_id == user_id, memory_term.c.memory_id == memory_id
        )
    )
    _bump_stats(conn, user_id, -1, -(doc_len or 0))


def _bump_stats(conn: Connection, user_id: str, docs: int, length: int) -> None:
    """Add to a user's document count and total length (creating the row on first use)."""
    values = {"user_id": user_id, "doc_count": docs, "total_len": length}
    table = memory_user_stats
    if conn.dialect.name == "sqlite":
        stmt = sqlite_insert(table).values(**values)
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[table.c.user_id],
                set_={
                    "doc_count": table.c.doc_count + docs,
                    "total_len": table.c.total_len + length,
                },
            )
        )
        return
    updated = conn.execute(
        update(table)
        .where(table.c.user_id == user_id)
        .values(doc_count=table.c.doc_count + docs, total_len=table.c.total_len + length)
    )
    if updated.rowcount == 0:
        upsert = mysql_insert(table).values(**values)
        conn.execute(
            upsert.on_duplicate_key_update(
                doc_count=table.c.doc_count + docs, total_len=table.c.total_len + length
            )
        )


def document_count(conn: Connection, user_id: str, *, lock: bool = False) -> int:
    """How many memories the user has indexed; lock=True holds the row until commit."""
    stmt = select(memory_user_stats.c.doc_count).where(memory_user_stats.c.user_id == user_id)
    if lock and conn.dialect.name != "sqlite":
        # SQLite writers are already serialised by BEGIN IMMEDIATE.
        stmt = stmt.with_for_update()
    return int(conn.execute(stmt).scalar() or 0)


def search(conn: Connection, user_id: str, query: str, limit: int) -> list[tuple[str, float]]:
    """The user's best memory ids for a query, with BM25 scores, best first."""
    query_terms = Counter(terms(query))
    if not query_terms:
        return []
    stats = conn.execute(
        select(memory_user_stats.c.doc_count, memory_user_stats.c.total_len).where(
            memory_user_stats.c.user_id == user_id
        )
    ).first()
    if stats is None or stats.doc_count <= 0:
        return []
    n_docs = int(stats.doc_count)
    avg_len = max(float(stats.total_len) / n_docs, 1.0)
    unique = list(query_terms)
    df_rows = conn.execute(
        select(memory_term.c.term, func.count())
        .where(memory_term.c.user_id == user_id, memory_term.c.term.in_(unique))
        .group_by(memory_term.c.term)
    ).all()
    weights = {}
    for term, df in df_rows:
        idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        weights[term] = idf * query_terms[term]
    if not weights:
        return []
    return _score(conn, user_id, weights, avg_len, limit)


def _score(
    conn: Connection, user_id: str, weights: dict[str, float], avg_len: float, limit: int
) -> list[tuple[str, float]]:
    """Sum BM25 over the user's postings for the weighted terms, in SQL."""
    params: dict[str, object] = {"user_id": user_id, "avg_len": avg_len, "limit": limit}
    cases = []
    names = []
    for i, (term, weight) in enumerate(weights.items()):
        params[f"t{i}"] = term
        params[f"w{i}"] = weight
        cases.append(f"WHEN :t{i} THEN :w{i}")
        names.append(f":t{i}")
    # Literal SQL: the CASE over bound terms keeps one round trip and one index range per term.
    sql = text(
        f"""
        SELECT memory_id, SUM(
            (CASE term {" ".join(cases)} ELSE 0 END)
            * tf * {K1 + 1} / (tf + {K1} * ({1 - B} + {B} * doc_len / :avg_len))
        ) AS score
        FROM memory_term
        WHERE user_id = :user_id AND term IN ({", ".join(names)})
        GROUP BY memory_id
        ORDER BY score DESC, memory_id DESC
        LIMIT :limit
        """
    ).bindparams(bindparam("limit", type_=None))
    rows = conn.execute(sql, params).all()
    return [(row[0], float(row[1])) for row in rows]
