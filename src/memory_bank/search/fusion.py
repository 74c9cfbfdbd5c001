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

The cosine enters as it is, not stretched over each query's candidates: stretched, the nearest
memory took the whole dense share however far it was, so an unrelated question scored as high
as a good one. The blend's value goes through the model's order curve (search/calibration.py),
which places a candidate without a vector among those with one.

The score is not the blend's: relevance() scores the ranked results with the model's joint
relevance model (read against the query's background level, search/background.py), which
separates answerable from unanswerable questions better than the blend does (docs/search.md),
never rising down the list, so it keeps the blend's order.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memory_bank.search.background import Level
from memory_bank.search.calibration import Calibration, descending, lexical_evidence

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Blend:
    """The fusion's settings (tuned on LoCoMo dev and the paraphrase set, benchmarks/fusion.py).

    The cosine's weight is dense_when_uncovered up to a coverage of `low`, dense_when_covered
    from `high` on, and moves linearly between them.
    """

    dense_when_covered: float = 0.6
    dense_when_uncovered: float = 0.8
    low: float = 0.0
    high: float = 1.0
    candidates: int = 200
    # BM25's evidence (0..1) is worth this much of a cosine: cosines of unrelated memories are
    # far above 0, so a full lexical share next to a raw cosine would drown the meaning.
    lexical_scale: float = 0.4

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
    attainable: float,
    calibration: Calibration,
    lexical_scale: float = BLEND.lexical_scale,
) -> list[tuple[K, float]]:
    """The best `limit` of the union of both candidate lists, each with its rank value (the
    order curves of search/calibration.py), best first, ties to the larger key (the newest id).

    A candidate with a vector is ranked on
    (1 - weight) * lexical_scale * lexical evidence + weight * cosine;
    one without (its vector is not made yet: after an import, a model change, a burst of saves)
    on its lexical evidence alone, by the lexical order curve, so it ranks where lexical search
    would put it instead of below every memory that has a vector. cosine holds every candidate's
    cosine that has a vector; attainable is attainable() of the query.
    """
    bm25 = dict(lexical)
    keys = list(dict.fromkeys([k for k, _ in lexical] + [k for k, _ in dense]))
    scored = []
    for k in keys:
        lex = lexical_evidence(bm25.get(k, 0.0), attainable)
        if k in cosine:
            blended = (1.0 - weight) * lexical_scale * lex + weight * cosine[k]
            score = calibration.order.hybrid(blended)
        else:
            score = calibration.order.lexical(lex)
        scored.append((k, score))
    scored.sort(key=lambda item: (item[1], item[0]), reverse=True)
    return scored[:limit]


def relevance(
    ranked: Sequence[tuple[K, float]],
    cosine: Mapping[K, float],
    shares: Mapping[K, float],
    calibration: Calibration,
    level: Level | None = None,
    pair: Mapping[K, float] | None = None,
) -> list[tuple[K, float]]:
    """fuse()'s results in its order with their relevance: the joint model over each one's
    cosine and share of the query's terms (search/index.shares), read against the query's
    background level when there is one (search/background.py), with the model's head's term
    of each (pair: Calibration.head_of's product with its vector) when it has a head, or the
    lexical curve over its share when it has no vector; each capped at the one ranked above
    it."""
    return descending(
        (
            k,
            calibration.joint(
                cosine[k], shares.get(k, 0.0), level, pair.get(k, 0.0) if pair else 0.0
            )
            if k in cosine
            else calibration.lexical(shares.get(k, 0.0)),
        )
        for k, _ in ranked
    )


def attainable(weights: Mapping[str, float]) -> float:
    """What a query could score: the BM25 of a memory of average length holding each query
    term once, which is the sum of the terms' weights (idf times the term's count in the
    query; a term the owner never wrote counts, as in coverage). weights: Ranking.weights."""
    return sum(weights.values())
