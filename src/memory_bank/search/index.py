"""Ranking over the per-user inverted index: BM25 computed in SQL from the user's postings."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from sqlalchemy import Connection

from memory_bank.search.analyzer import terms
from memory_bank.store.engine import placeholder

K1 = 1.2
B = 0.75

# A search reads the posting lists of its rarest terms in full up to about this many postings;
# commoner terms are then scored only for the best CANDIDATES of those (see search()).
POSTINGS_BUDGET = 5000
CANDIDATES = 200


# SQLite's name for memory_term's primary key index (tests/search pins it).
SQLITE_TERM_KEY = "sqlite_autoindex_memory_term_1"


def _marks(conn: Connection, n: int) -> str:
    """n comma-separated placeholders."""
    return ", ".join([placeholder(conn)] * n)


@dataclass(frozen=True)
class Among:
    """The memories a ranking is restricted to (filters, store/filters.py), applied before it
    picks: a condition on a posting's memory (`memory_term.memory_id`) in the connection's
    placeholders with its values, and few(), their ids when there are few (None: many).

    The condition comes in two forms with the same values: `sql` looks each posting's memory
    up (cheap for the few thousand postings of rare terms), `members` reads the passing ids as
    one set and checks postings against it (cheap when every posting of common terms is read).
    """

    sql: str
    params: Sequence[object]
    few: Callable[[], list[str] | None]
    members: str = ""
    # For a check of the unfiltered best in score order (_in_score_order; None: not offered):
    # the condition on another column (a ranked list's) with its values, and whether at least
    # 1 in `share` of the owner's memories pass (given their count), counted up to that.
    on: Callable[[str], tuple[str, Sequence[object]]] | None = None
    broad: Callable[[int, int], bool] | None = None


@dataclass
class Ranking:
    """A BM25 ranking and what made it: each query term's weight (idf) and stored forms."""

    hits: list[tuple[str, float]] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    stored: dict[str, tuple[str, ...]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # each query term's count in the query
    # What each hit holds of the query, read by the statements that scored it: the count of
    # query terms (as often as the query has each) and their summed weight. `whole`: every
    # memory holding a query term is among the hits (so one missing holds none).
    held: dict[str, Held] = field(default_factory=dict)
    whole: bool = False


@dataclass(frozen=True)
class Reads:
    """What the scoring statements read of each hit besides its score, and where it goes: the
    count of the query's terms it holds (`counts`: each stored form's count in the query; None:
    every term once, so a count of postings), their summed weight when `weighted` (coverage()
    needs it; a lexical search does not)."""

    held: dict[str, Held]
    counts: dict[str, float] | None
    weighted: bool


@dataclass
class Held:
    """What one memory holds of a query: its terms counted as the query counts them, and their
    summed weights (idf times count)."""

    count: float = 0.0
    weight: float = 0.0
    weighed: bool = False  # whether weight was read (Reads.weighted)


def search(
    conn: Connection,
    user_id: str,
    query: str,
    limit: int,
    forms: Callable[[str], Sequence[str]] | None = None,
    among: Among | None = None,
) -> list[tuple[str, float]]:
    """The user's best memory ids for a query, with BM25 scores, best first.

    forms gives the stored forms of a term (with encryption on, its keyed hash; see
    store/sealing/data_keys.py); ranking works on the terms themselves, so it is the same either
    way.
    among restricts the ranking to the memories that meet it (filters): they are ranked before
    the best are picked, with the statistics of all the user's memories, so a memory scores the
    same with or without a filter.
    """
    return rank(conn, user_id, query, limit, forms, among).hits


def rank(
    conn: Connection,
    user_id: str,
    query: str,
    limit: int,
    forms: Callable[[str], Sequence[str]] | None = None,
    among: Among | None = None,
    weighted: bool = False,
) -> Ranking:
    """search(), with the query terms' weights kept for coverage() (which reads no statement of
    its own for the first hits when `weighted`) and what each hit holds of them for shares()."""
    out = Ranking()
    query_terms = Counter(terms(query, query=True))
    if not query_terms:
        return out
    stored = {t: tuple(forms(t)) if forms is not None else (t,) for t in query_terms}
    out.stored = stored
    out.counts = dict(query_terms)
    term_of = {form: t for t, each in stored.items() for form in each}
    m = placeholder(conn)
    unique = list(term_of)
    # The user's statistics (the row with a NULL term) and each query term's document
    # frequency, in one round trip.
    rows = conn.exec_driver_sql(
        f"SELECT NULL, doc_count, total_len FROM memory_user_stats WHERE user_id = {m} "
        "UNION ALL "
        "SELECT term, COUNT(*), 0 FROM memory_term "
        f"WHERE user_id = {m} AND term IN ({_marks(conn, len(unique))}) GROUP BY term",
        (user_id, user_id, *unique),
    ).all()
    stats = next((row for row in rows if row[0] is None), None)
    if stats is None or stats[1] <= 0:
        out.whole = True  # no memories, so none holds a query term
        return out
    n_docs = int(stats[1])
    avg_len = max(float(stats[2]) / n_docs, 1.0)
    df: Counter[str] = Counter()
    for row in rows:
        if row[0] is not None:
            df[term_of[row[0]]] += int(row[1])
    df_rows = list(df.items())
    # Rarest terms first: they carry the most weight and have the shortest posting lists.
    rare: dict[str, float] = {}
    common: dict[str, float] = {}
    read = 0
    for term, freq in sorted(df_rows, key=lambda row: (row[1], row[0])):
        weight = math.log(1.0 + (n_docs - freq + 0.5) / (freq + 0.5)) * query_terms[term]
        out.weights[term] = weight
        if not rare or read + freq <= POSTINGS_BUDGET:
            rare[term] = weight
            read += freq
        else:
            common[term] = weight
    # A query term the owner never wrote weighs as the rarest would: coverage() then counts it
    # as missing, the sign of a question phrased in other words.
    for term in query_terms.keys() - df.keys():
        out.weights[term] = math.log(1.0 + (n_docs + 0.5) / 0.5) * query_terms[term]
    if not rare:
        out.whole = True  # no memory holds a query term
        return out
    if among is not None:
        ids = among.few()
        if ids is not None:
            # Few memories pass: rank exactly those, by every term, looked up by id.
            every = _as_stored({**rare, **common}, stored)
            reads = _reads(out, weighted)
            out.hits = _score(conn, user_id, every, reads, avg_len, limit, only=ids) if ids else []
            out.whole = len(out.hits) < limit
            return out
    rare, common = _as_stored(rare, stored), _as_stored(common, stored)
    reads = _reads(out, weighted)
    # What the rarer terms must yield: the hits, or the candidates the common terms add to.
    need = max(CANDIDATES, limit) if common else limit
    best = None
    if among is not None and among.on is not None and _broad(among, n_docs):
        # At most `read` memories hold a rare term: no more, and the ranked list is complete.
        complete = read <= need * SCORE_ORDER_READ
        best = _in_score_order(conn, user_id, rare, reads, avg_len, need, among.on, complete)
    if not common:
        if best is None:
            best = _score(conn, user_id, rare, reads, avg_len, limit, among=among)
        out.hits = best
        out.whole = len(best) < limit
        return out
    # Past the budget, the commonest terms (lowest idf) only add to the best candidates of the
    # rarer ones, so a search's cost follows its rare terms, not the user's most common words.
    if best is None:
        best = _score(conn, user_id, rare, reads, avg_len, need, among=among)
    found = dict(best)
    if among is not None and len(found) < limit:
        # Fewer of the rarer terms' memories pass than were asked for: rank those that pass by
        # every term, so a filtered search is short only when fewer memories match. Every
        # posting of the common terms is read, so they are checked against the passing set
        # rather than each looked up (measured 3-5x faster at 100k memories, on SQLite).
        whole = replace(among, sql=among.members or among.sql)
        out.held.clear()
        every = {**rare, **common}
        out.hits = _score(conn, user_id, every, reads, avg_len, limit, among=whole)
        out.whole = len(out.hits) < limit
        return out
    extras = _score(conn, user_id, common, reads, avg_len, len(found), only=list(found))
    for mid, extra in extras:
        found[mid] += extra
    ranked = sorted(found.items(), key=lambda item: (item[1], item[0]), reverse=True)
    out.hits = ranked[:limit]
    return out


# A filter estimated to pass at least 1 in BROAD_SHARE of the owner's memories is checked on
# the unfiltered best in score order, SCORE_ORDER_READ times as many as needed
# (_in_score_order): the estimate is at most 2x high, so about twice what such a filter
# passes among them. Narrower filters, or too few passing among those read, rank the passing
# memories instead.
BROAD_SHARE = 3
SCORE_ORDER_READ = 12


def _broad(among: Among, docs: int) -> bool:
    """Whether at least 1 in BROAD_SHARE of the owner's `docs` memories pass."""
    return among.broad is not None and among.broad(docs, BROAD_SHARE)


def _in_score_order(
    conn: Connection,
    user_id: str,
    weights: dict[str, float],
    reads: Reads,
    avg_len: float,
    need: int,
    on: Callable[[str], tuple[str, Sequence[object]]],
    complete: bool,
) -> list[tuple[str, float]] | None:
    """The best `need` memories that pass, found by ranking unfiltered and checking the best
    in score order; None when too few of those read pass (the caller then ranks the passing
    memories). complete: the ranked list holds every memory with these terms.

    Exactly what ranking only the passing memories gives: both order by (score, id) and a
    memory's score does not depend on the filter, so the first `need` that pass in the
    unfiltered order are the best `need` that pass; when the list is whole, those that pass
    are all there are. A broad filter so costs the unfiltered ranking and a lookup per memory
    read, in the same statement, instead of a lookup per posting of the rare terms.
    """
    m = placeholder(conn)
    ranked, params = _score_sql(conn, user_id, weights, reads, avg_len, need * SCORE_ORDER_READ)
    cond, values = on("r.memory_id")
    sql = (
        f"SELECT r.memory_id, r.score, r.held_count, r.held_weight FROM ({ranked}) r "
        f"WHERE {cond} ORDER BY r.score DESC, r.memory_id DESC LIMIT {m}"
    )
    rows = conn.exec_driver_sql(sql, (*params, *values, int(need))).all()
    if len(rows) < need and not complete:
        return None
    return _hits(rows, reads.held, reads.weighted)


def coverage(conn: Connection, user_id: str, ranking: Ranking, top: int = 3) -> float:
    """How much of the query the best `top` hits hold: the largest idf-weighted share of the
    query's terms found in one of them (0 to 1). Read through the stored forms, so it is the
    same with encryption on."""
    total = sum(ranking.weights.values())
    ids = [mid for mid, _ in ranking.hits[:top]]
    if total <= 0 or not ids:
        return 0.0
    if all(mid in ranking.held and ranking.held[mid].weighed for mid in ids):
        # Read by the statements that scored the hits: no round trip.
        return min(1.0, max(ranking.held[mid].weight for mid in ids) / total)
    held = _held(conn, user_id, ranking, ids)
    return max(sum(ranking.weights.get(t, 0.0) for t in found) / total for found in held.values())


def shares(
    conn: Connection, user_id: str, ranking: Ranking, ids: Sequence[str]
) -> dict[str, float]:
    """The share of the query's terms each of these memories holds (0 to 1), each term counted
    as often as the query has it. Unlike BM25 and coverage() it reads nothing of the owner's
    other memories, so a memory's share is the same among 2 memories and among 2,000."""
    total = sum(ranking.counts.values())
    if total <= 0 or not ids:
        return {mid: 0.0 for mid in ids}
    out = {mid: min(1.0, ranking.held[mid].count / total) for mid in ids if mid in ranking.held}
    # A memory the scoring statements did not read holds no query term when every memory that
    # holds one was read (ranking.whole); otherwise it is looked up.
    rest = [mid for mid in ids if mid not in out]
    if ranking.whole:
        return out | {mid: 0.0 for mid in rest}
    if rest:
        held = _held(conn, user_id, ranking, rest)
        out |= {
            mid: sum(ranking.counts.get(t, 0) for t in found) / total for mid, found in held.items()
        }
    return {mid: out[mid] for mid in ids}


def _held(
    conn: Connection, user_id: str, ranking: Ranking, ids: Sequence[str]
) -> dict[str, set[str]]:
    """Which of the query's terms each of these memories holds."""
    term_of = {form: t for t, each in ranking.stored.items() for form in each}
    held: dict[str, set[str]] = {mid: set() for mid in ids}
    if not term_of:
        return held
    m = placeholder(conn)
    rows = conn.exec_driver_sql(
        f"SELECT memory_id, term FROM memory_term WHERE user_id = {m} "
        f"AND term IN ({_marks(conn, len(term_of))}) AND memory_id IN ({_marks(conn, len(ids))})",
        (user_id, *term_of, *ids),
    ).all()
    for mid, form in rows:
        held[mid].add(term_of[form])
    return held


def _as_stored(weights: dict[str, float], stored: dict[str, tuple[str, ...]]) -> dict[str, float]:
    """Each term's weight under each of its stored forms."""
    return {form: weight for term, weight in weights.items() for form in stored[term]}


def _double(value: float) -> str:
    """A float as an SQL double literal that reads back as the same float."""
    if not math.isfinite(value):
        raise ValueError(f"not a finite weight: {value}")
    return format(float(value), ".16e")


def _score(
    conn: Connection,
    user_id: str,
    weights: dict[str, float],
    reads: Reads,
    avg_len: float,
    limit: int,
    only: list[str] | None = None,
    among: Among | None = None,
) -> list[tuple[str, float]]:
    """Sum BM25 over the user's postings for the weighted terms, in SQL (of these memories
    only, and of those that meet `among`, when given); what each hit holds of the query is
    added to reads.held."""
    sql, params = _score_sql(conn, user_id, weights, reads, avg_len, limit, only, among)
    return _hits(conn.exec_driver_sql(sql, params).all(), reads.held, reads.weighted)


def _reads(ranking: Ranking, weighted: bool) -> Reads:
    """What the scoring statements of this ranking read of each hit, into ranking.held."""
    counts = None
    if any(n != 1 for n in ranking.counts.values()):
        counts = _as_stored({t: float(n) for t, n in ranking.counts.items()}, ranking.stored)
    return Reads(ranking.held, counts, weighted)


def _hits(
    rows: Sequence[Sequence[object]], held: dict[str, Held], weighed: bool = True
) -> list[tuple[str, float]]:
    """A scoring statement's (memory_id, score) hits; what each holds is added to `held` (a
    memory scored by two statements, rare terms then common, holds both parts)."""
    hits = []
    for row in rows:
        mid = str(row[0])
        mine = held.setdefault(mid, Held())
        mine.count += float(row[2])  # type: ignore[arg-type]
        mine.weight += float(row[3])  # type: ignore[arg-type]
        mine.weighed = weighed
        hits.append((mid, float(row[1])))  # type: ignore[arg-type]
    return hits


def _score_sql(
    conn: Connection,
    user_id: str,
    weights: dict[str, float],
    reads: Reads,
    avg_len: float,
    limit: int,
    only: list[str] | None = None,
    among: Among | None = None,
) -> tuple[str, tuple[object, ...]]:
    """_score()'s statement and its values: memory_id, score, and the count and weight of the
    query's terms the memory holds (as `reads` asks: a weight of 0 when not weighted), best
    first."""
    m = placeholder(conn)
    params: list[object] = []
    cases = []
    # Numbers are written as double literals (1.2e0; each weight and the average length to 17
    # digits, which give back the same float): MySQL and MariaDB read 1.2 or a bound 84.29 as
    # DECIMAL, whose division rounds to 4 more decimals (div_precision_increment), which ties
    # near-equal scores, and is slower than float math. Literals, not CAST(? AS DOUBLE): Spider
    # sends such a cast to its backends as double_typecast(), which no server has, when it
    # pushes an aggregate down (spider_direct_aggregate), so results would depend on a setting.
    for term, weight in weights.items():
        cases.append(f"WHEN {m} THEN {_double(weight)}")
        params.append(term)
    # What a memory holds of the query, read here rather than by a statement of its own after
    # the ranking: a memory has one posting per term, so a count of its postings counts the
    # query's terms it holds (the share its score reads), each as often as the query has it.
    weighted = " ".join(cases)
    held_count = "COUNT(*)"
    if reads.counts is not None:
        counted = " ".join(f"WHEN {m} THEN {_double(reads.counts.get(t, 1.0))}" for t in weights)
        held_count = f"SUM(CASE term {counted} ELSE 0e0 END)"
        params += list(weights)
    held_weight = "0e0"
    if reads.weighted:
        held_weight = f"SUM(CASE term {weighted} ELSE 0e0 END)"
        params += list(weights)
    real = _double(avg_len)
    params += [user_id, *weights]
    where = ""
    source = "memory_term"
    if only is not None:
        where = f"AND memory_id IN ({_marks(conn, len(only))})"
        params += only
        if conn.dialect.name == "sqlite":
            # One primary-key probe per (term, memory): SQLite otherwise reads every posting
            # of each memory through (user_id, memory_id) and its row (measured 10-30x slower
            # for 1,000 memories at 100k). The name is SQLite's for the table's primary key.
            source = f"memory_term INDEXED BY {SQLITE_TERM_KEY}"
    if among is not None:
        where += f" AND {among.sql}"
        params += among.params
    params.append(int(limit))
    # MySQL/MariaDB: group by sorting rather than through a temporary table, faster per search
    # at p50 and p95 for a 10k-memory user (up to 5,000 postings; docs/benchmarks.md). Sorting
    # leaves a memory's postings in no fixed order, so identical memories could differ in the
    # last bit of their sums; rounding (far below the 6 decimals the API shows) keeps them tied,
    # and ties go to the newest id.
    hint = "" if conn.dialect.name == "sqlite" else "SQL_BIG_RESULT "
    # One statement: the CASE maps each term to its weight, and each term is one index range.
    sql = f"""
        SELECT {hint}memory_id, ROUND(SUM(
            (CASE term {weighted} ELSE 0e0 END)
            * tf * {K1 + 1}e0 / (tf + {K1}e0 * ({1 - B}e0 + {B}e0 * doc_len / {real}))
        ), 9) AS score,
        {held_count} AS held_count, {held_weight} AS held_weight
        FROM {source}
        WHERE user_id = {m} AND term IN ({_marks(conn, len(weights))}) {where}
        GROUP BY memory_id
        ORDER BY score DESC, memory_id DESC
        LIMIT {m}
        """
    return sql, tuple(params)
