"""Hybrid ranking: a score blend of BM25 and cosine over the union of both candidate lists,
weighted by how much of the query the lexical hits cover.

Measured (docs/search.md): plain rank fusion (RRF) lowers LoCoMo recall, and any one fixed
weight serves either questions that reuse the memory's words or paraphrases, not both. So the
dense weight moves with coverage (search/index.coverage): when BM25's best hits hold most of
the query's weight, BM25 is trusted; when they hold little of it, the question is probably
phrased in other words and the cosine decides.

BM25 is read against what the query could score (attainable: a memory holding each query term
once, at the average length), not against the best hit: a distractor that shares one word of a
paraphrased question is the best BM25 hit, but only a fraction of a full match, so it no longer
takes the whole lexical share from the memory the cosine finds.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Blend:
    """The fusion's settings (tuned on LoCoMo dev and the paraphrase set, benchmarks/fusion.py).

    The cosine's weight is dense_when_uncovered up to a coverage of `low`, dense_when_covered
    from `high` on, and moves linearly between them.
    """

    dense_when_covered: float = 0.5
    dense_when_uncovered: float = 0.7
    low: float = 0.0
    high: float = 1.0
    candidates: int = 200

    def dense_weight(self, coverage: float) -> float:
        """The cosine's share of the score for a query whose lexical hits cover this much."""
        if coverage <= self.low:
            return self.dense_when_uncovered
        if coverage >= self.high:
            return self.dense_when_covered
        share = (coverage - self.low) / (self.high - self.low)
        return (
            self.dense_when_uncovered
            + (self.dense_when_covered - self.dense_when_uncovered) * share
        )


BLEND = Blend()


def fuse(
    lexical: Sequence[tuple[K, float]],
    dense: Sequence[tuple[K, float]],
    cosine: Mapping[K, float],
    weight: float,
    limit: int,
    attainable: float = 0.0,
) -> list[tuple[K, float]]:
    """The best `limit` of the union of both candidate lists, by
    (1 - weight) * bm25 / max(best bm25, attainable) + weight * min-max(cosine); best first,
    ties to the larger key (the newest id). cosine holds every candidate's cosine that has a
    vector; attainable is attainable() of the query (0: BM25 over the best hit alone)."""
    bm25 = dict(lexical)
    keys = list(dict.fromkeys([k for k, _ in lexical] + [k for k, _ in dense]))
    if not keys:
        return []
    top = max(max(bm25.values(), default=0.0), attainable)
    cos = [cosine[k] for k in keys if k in cosine]
    low, high = (min(cos), max(cos)) if cos else (0.0, 0.0)
    span = high - low
    scored = []
    for k in keys:
        lex = bm25.get(k, 0.0) / top if top > 0 else 0.0
        sem = (cosine[k] - low) / span if span > 0 and k in cosine else 0.0
        scored.append((k, (1.0 - weight) * lex + weight * sem))
    scored.sort(key=lambda item: (item[1], item[0]), reverse=True)
    return scored[:limit]


def attainable(weights: Mapping[str, float]) -> float:
    """What a query could score: the BM25 of a memory of average length holding each query
    term once, which is the sum of the terms' weights (idf times the term's count in the
    query; a term the owner never wrote counts, as in coverage). weights: Ranking.weights."""
    return sum(weights.values())
