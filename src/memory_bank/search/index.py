"""The per-user inverted index: postings in ordinary tables, BM25 computed in SQL."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, delete, func, insert, select, text, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from memory_bank.search.analyzer import terms
from memory_bank.store.schema import memory_term, memory_user_stats

K1 = 1.2
B = 0.75

# Field weights of a simplified BM25F: a term's stored tf (and the document length) is the
# weighted sum over the memory's fields. Integers, so postings stay plain integer columns.
CONTENT_WEIGHT = 3
TAG_WEIGHT = 3
CONTEXT_WEIGHT = 1

# A search reads the posting lists of its rarest terms in full up to about this many postings;
# commoner terms are then scored only for the best CANDIDATES of those (see search()).
POSTINGS_BUDGET = 5000
CANDIDATES = 200


def document_counts(
    content: str, tags: Iterable[str] = (), snippets: Iterable[str] = ()
) -> tuple[Counter[str], int]:
    """Weighted term frequencies of a memory (content, tags, context snippets) and its length."""
    counts: Counter[str] = Counter()
    fields = [(content, CONTENT_WEIGHT)]
    fields += [(tag, TAG_WEIGHT) for tag in tags]
    if CONTEXT_WEIGHT:
        fields += [(snippet, CONTEXT_WEIGHT) for snippet in snippets]
    for text_, weight in fields:
        for term in terms(text_):
            counts[term] += weight
    return counts, sum(counts.values())


def posting_rows(
    user_id: str, memory_id: str, counts: Counter[str], length: int
) -> list[dict[str, object]]:
    """The memory_term rows of one memory (shared by incremental indexing, reindex, bulk load)."""
    return [
        {"user_id": user_id, "term": term, "memory_id": memory_id, "tf": tf, "doc_len": length}
        for term, tf in counts.items()
    ]


def index_memory(
    conn: Connection,
    user_id: str,
    memory_id: str,
    content: str,
    tags: Iterable[str] = (),
    snippets: Iterable[str] = (),
) -> None:
    """Add one memory's postings and update the user's statistics, in the caller's transaction."""
    counts, length = document_counts(content, tags, snippets)
    if counts:
        conn.execute(insert(memory_term), posting_rows(user_id, memory_id, counts, length))
    bump_stats(conn, user_id, 1, length)


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
    bump_stats(conn, user_id, -1, -(doc_len or 0))


def bump_stats(conn: Connection, user_id: str, docs: int, length: int) -> None:
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
    query_terms = Counter(terms(query, query=True))
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
    df_rows = conn.execute(
        select(memory_term.c.term, func.count())
        .where(memory_term.c.user_id == user_id, memory_term.c.term.in_(list(query_terms)))
        .group_by(memory_term.c.term)
    ).all()
    # Rarest terms first: they carry the most weight and have the shortest posting lists.
    rare: dict[str, float] = {}
    common: dict[str, float] = {}
    read = 0
    for term, df in sorted(df_rows, key=lambda row: (row[1], row[0])):
        weight = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)) * query_terms[term]
        if not rare or read + df <= POSTINGS_BUDGET:
            rare[term] = weight
            read += df
        else:
            common[term] = weight
    if not rare:
        return []
    if not common:
        return _score(conn, user_id, rare, avg_len, limit)
    # Past the budget, the commonest terms (lowest idf) only add to the best candidates of the
    # rarer ones, so a search's cost follows its rare terms, not the user's most common words.
    found = dict(_score(conn, user_id, rare, avg_len, max(CANDIDATES, limit)))
    for mid, extra in _score(conn, user_id, common, avg_len, len(found), only=list(found)):
        found[mid] += extra
    ranked = sorted(found.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return ranked[:limit]


def _score(
    conn: Connection,
    user_id: str,
    weights: dict[str, float],
    avg_len: float,
    limit: int,
    only: list[str] | None = None,
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
    among = ""
    if only is not None:
        among = "AND memory_id IN :only"
        params["only"] = only
    # Literal SQL: the CASE over bound terms keeps one round trip and one index range per term.
    sql = text(
        f"""
        SELECT memory_id, SUM(
            (CASE term {" ".join(cases)} ELSE 0 END)
            * tf * {K1 + 1} / (tf + {K1} * ({1 - B} + {B} * doc_len / :avg_len))
        ) AS score
        FROM memory_term
        WHERE user_id = :user_id AND term IN ({", ".join(names)}) {among}
        GROUP BY memory_id
        ORDER BY score DESC, memory_id DESC
        LIMIT :limit
        """
    ).bindparams(bindparam("limit", type_=None))
    if only is not None:
        sql = sql.bindparams(bindparam("only", expanding=True))
    rows = conn.execute(sql, params).all()
    return [(row[0], float(row[1])) for row in rows]
