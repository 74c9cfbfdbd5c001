"""Search: the memories a caller reads ranked for a query, lexically (BM25), by meaning
(cosine) or both (the adaptive blend of search/fusion.py), each scored with its relevance
(search/calibration.py); results below the relevance floor are left out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, filters
from memory_bank.domain.filters import NONE, Filters
from memory_bank.domain.memories import shape
from memory_bank.domain.semantic import Semantic
from memory_bank.search import background, calibration, fusion
from memory_bank.search import index as search_index
from memory_bank.search.merge import merged
from memory_bank.store import memories as store
from memory_bank.store import shards
from memory_bank.store.database import Database
from memory_bank.store.sealing import data_keys

if TYPE_CHECKING:
    # numpy comes with semantic search only (domain/semantic.py imports it when on).
    from memory_bank.search.dense import Matrix

# The decimals of a score in an answer.
SCORE_DIGITS = 6


def find(
    db: Database,
    principal: Principal,
    query: str,
    limit: int,
    scope: str = "all",
    mode: str | None = None,
    semantic: Semantic | None = None,
    only: Filters = NONE,
    min_score: float | None = None,
) -> tuple[list[dict[str, Any]], str, list[str]]:
    """The memories the principal reads (scope: user, org or all) that best match a query
    among those that pass the filters (applied before ranking: the best k that pass), with
    scores, best first, the mode that ranked them, and the scopes that could not be read
    (their database backend is down: the answer holds the rest; the caller's own is a 503).

    mode: "lexical" (BM25), "semantic" (cosine) or "hybrid" (search/fusion.py); the default is
    hybrid when semantic search is on. Without it, or when the query cannot be embedded in time,
    the answer is lexical and says so.

    min_score: the relevance floor (0: the ranking's top `limit`). None: the calibrated default
    when the answer ranks by meaning (semantic, hybrid), which has no "no match" of its own;
    none for a lexical answer, which holds only memories sharing a word with the query. An
    empty answer means nothing the principal reads is relevant enough.
    """
    cal = calibration.for_model(semantic.model if semantic is not None else None)
    given = min_score
    wanted = mode or ("hybrid" if semantic is not None else "lexical")
    # The query is embedded on another thread while BM25 ranks here (onnxruntime, numpy's
    # product and a remote provider's network wait all release the GIL), and the owners'
    # vectors are scored against it there as soon as it comes: hybrid costs about the larger
    # of BM25 and embedding plus product, not their sum.
    pending = semantic.begin(query) if wanted != "lexical" and semantic is not None else None
    with db.reading() as conn:
        readable = acl.readable_owners(principal, scope)
        owners, unavailable = shards.reachable(conn, bool(db.backends), principal.user_id, readable)
        if pending is None or semantic is None:
            hits = _above(_lexical(conn, owners, query, limit, only, cal), given or 0.0)
            return _shaped(hits, _rows(conn, owners, hits)), "lexical", unavailable
        matrices = {owner: semantic.matrix(conn, owner) for owner in owners}
        scoring = pending.then(lambda vector: {o: m.scores(vector) for o, m in matrices.items()})
        rankings = _candidates(conn, owners, query, limit, only) if wanted == "hybrid" else {}
    # The vector is awaited with no connection held: a slow embedding must not keep a pooled
    # connection from other requests.
    scored = scoring()
    with db.reading() as conn:
        if scored is None:
            # Missed the deadline: the blend's BM25 candidates already hold the lexical answer
            # (BM25 ranks once per query); a semantic-only search had not ranked yet.
            used = "lexical"
            if rankings:
                hits = _best(conn, rankings, limit, cal)
            else:
                hits = _lexical(conn, owners, query, limit, only, cal)
        else:
            used = wanted
            # The query's level among the fixed background sentences: read by the scores, never
            # by the ranking (search/background.py).
            level = background.level(semantic.model, scored[0]) if cal.leveled else None
            hits = _semantic(
                conn,
                owners,
                limit,
                wanted,
                matrices,
                scored[1],
                rankings,
                only,
                cal,
                level,
                cal.head_of(scored[0]) if level is not None and wanted == "hybrid" else None,
            )
        floor = given if given is not None else (cal.floor if used != "lexical" else 0.0)
        hits = _above(hits, floor)
        found = _rows(conn, owners, hits)
    return _shaped(hits, found), used, unavailable


def _rows(
    conn: Connection, owners: list[str], hits: list[tuple[str, str, float]]
) -> dict[str, store.MemoryRow]:
    """The stored rows of the hits, by memory id, read owner by owner."""
    found: dict[str, store.MemoryRow] = {}
    for owner in owners:
        ids = [mid for who, mid, _ in hits if who == owner]
        found |= store.get_memories(conn, owner, ids)
    return found


def _shaped(
    hits: list[tuple[str, str, float]], found: dict[str, store.MemoryRow]
) -> list[dict[str, Any]]:
    """The answer's items in rank order, with scores; a hit deleted meanwhile is left out."""
    results = []
    for _, mid, score in hits:
        if mid in found:
            item = shape(found[mid])
            item["score"] = round(score, SCORE_DIGITS)
            results.append(item)
    return results


def _above(hits: list[tuple[str, str, float]], floor: float) -> list[tuple[str, str, float]]:
    """The hits whose relevance, as the answer shows it, reaches the floor (0: all of them): a
    score read from one answer and sent back as min_score keeps that result."""
    if floor <= 0:
        return hits
    return [hit for hit in hits if round(hit[2], SCORE_DIGITS) >= floor]


def _relevance(
    conn: Connection,
    owner: str,
    ranking: search_index.Ranking,
    limit: int,
    cal: calibration.Calibration,
) -> list[tuple[str, float]]:
    """A BM25 ranking's first `limit` hits in its order, with their lexical relevance: the curve
    over the share of the query's terms each holds (nothing of the owner's other memories, so
    alike in any corpus), never rising down the list."""
    hits = ranking.hits[:limit]
    held = search_index.shares(conn, owner, ranking, [mid for mid, _ in hits])
    return calibration.descending((mid, cal.lexical(held[mid])) for mid, _ in hits)


def _best(
    conn: Connection,
    rankings: dict[str, tuple[search_index.Ranking, float]],
    limit: int,
    cal: calibration.Calibration,
) -> list[tuple[str, str, float]]:
    """The lexical answer out of the blend's BM25 candidates: each owner's best `limit`, merged
    (a ranking's first k are its top k)."""
    return merged(
        ((o, _relevance(conn, o, r, limit, cal)) for o, (r, _) in rankings.items()), limit
    )


def _lexical(
    conn: Connection,
    owners: list[str],
    query: str,
    limit: int,
    only: Filters,
    cal: calibration.Calibration,
) -> list[tuple[str, str, float]]:
    """BM25 over each owner's index (of the memories that pass), merged by relevance; each
    owner's index ranks with its own statistics."""
    # With encryption on, postings hold keyed hashes of terms: each owner's (a user's, an
    # org's) query terms are hashed with that owner's key.
    return merged(
        (
            (
                o,
                _relevance(
                    conn,
                    o,
                    search_index.rank(
                        conn,
                        o,
                        query,
                        limit,
                        data_keys.sealer(conn, o).term_forms,
                        filters.restriction(conn, o, only),
                    ),
                    limit,
                    cal,
                ),
            )
            for o in owners
        ),
        limit,
    )


def _candidates(
    conn: Connection, owners: list[str], query: str, limit: int, only: Filters
) -> dict[str, tuple[search_index.Ranking, float]]:
    """Each owner's BM25 candidates for the blend (of the memories that pass) and their
    coverage of the query."""
    n = max(fusion.BLEND.candidates, limit)
    found = {}
    for owner in owners:
        forms = data_keys.sealer(conn, owner).term_forms
        among = filters.restriction(conn, owner, only)
        ranking = search_index.rank(conn, owner, query, n, forms, among, weighted=True)
        found[owner] = (ranking, search_index.coverage(conn, owner, ranking))
    return found


def _semantic(
    conn: Connection,
    owners: list[str],
    limit: int,
    mode: str,
    matrices: dict[str, Matrix],
    products: dict[str, Any],
    rankings: dict[str, tuple[search_index.Ranking, float]],
    only: Filters,
    cal: calibration.Calibration,
    level: background.Level | None = None,
    head: Any = None,
) -> list[tuple[str, str, float]]:
    """Cosine ("semantic") or the adaptive blend ("hybrid", over these BM25 candidates) of each
    owner's vectors that pass the filters, from their cosines with the query (products); only
    vectors of the provider's model take part. head: the model's head for the query
    (Calibration.head_of), read by the hybrid scores of the results alone."""
    blend = fusion.BLEND
    lexical: list[tuple[tuple[str, str], float]] = []
    dense: list[tuple[tuple[str, str], float]] = []
    cosine: dict[tuple[str, str], float] = {}
    coverage = 0.0
    n = max(blend.candidates, limit)
    for owner in owners:
        matrix, scores = matrices[owner], products[owner]
        kept = filters.keep(conn, owner, matrix, only)
        dense += [((owner, mid), s) for mid, s in matrix.top(scores, n, kept)]
        if mode == "semantic":
            continue
        ranking, covered = rankings[owner]
        lexical += [((owner, mid), s) for mid, s in ranking.hits]
        coverage = max(coverage, covered)
        for mid, _ in ranking.hits:
            row = matrix.row_of.get(mid)
            if row is not None:
                cosine[(owner, mid)] = float(scores[row])
    if mode == "semantic":
        dense.sort(key=lambda item: (item[1], item[0][1]), reverse=True)
        return [(o, mid, cal.meaning(s, level)) for (o, mid), s in dense[:limit]]
    cosine.update(dense)
    weight = blend.dense_weight(coverage)
    # BM25 is read against what the query could score, not against its best hit (fusion.py).
    attainable = max((fusion.attainable(r.weights) for r, _ in rankings.values()), default=0.0)
    fused = fusion.fuse(lexical, dense, cosine, weight, limit, attainable, cal)
    # Each result's share of the query's terms, in one statement per owner.
    shares: dict[tuple[str, str], float] = {}
    for owner, (ranking, _) in rankings.items():
        mine = [mid for (o, mid), _ in fused if o == owner]
        held = search_index.shares(conn, owner, ranking, mine)
        shares |= {(owner, mid): held[mid] for mid in mine}
    scored = fusion.relevance(fused, cosine, shares, cal, level, _pair(fused, matrices, head))
    return [(o, mid, s) for (o, mid), s in scored]


def _pair(
    fused: list[tuple[tuple[str, str], float]], matrices: dict[str, Matrix], head: Any
) -> dict[tuple[str, str], float] | None:
    """The head's term of each result with a vector: its row's product with the head (None
    without a head)."""
    if head is None:
        return None
    import numpy as np

    out: dict[tuple[str, str], float] = {}
    for owner in {o for (o, _), _ in fused}:
        matrix = matrices[owner]
        found = [
            (mid, matrix.row_of[mid])
            for (o, mid), _ in fused
            if o == owner and mid in matrix.row_of
        ]
        if found:
            # einsum, not a BLAS product, as for the cosines (search/dense.py).
            terms = np.einsum("ij,j->i", matrix.rows[[r for _, r in found]], head)
            out |= {(owner, mid): float(t) for (mid, _), t in zip(found, terms, strict=True)}
    return out
