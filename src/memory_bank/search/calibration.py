"""What a search score means: the estimated chance that a result is relevant, in [0, 1].

Each mode's score is a logistic model over evidence that reads nothing of the owner's other
memories, so the same memory and query score alike whatever else the owner holds:

- lexical: the share of the query's terms the memory holds (search/index.shares);
- semantic: the cosine of the model that made the vectors, read against the query's level
  among a fixed background of sentences shipped with the package (search/background.py): how
  many of the background's spreads the cosine stands above its mean, and that spread (Against);
- hybrid: those and the share of the query's terms, fitted jointly (Against); for a model with a
  head (Leveled.head: all-MiniLM-L6-v2), also a weight per dimension of the query's and the
  memory's vectors multiplied together, fitted with them and shipped as a file beside
  calibration.json (head_of; it reads the pair alone, like the rest).

A model without a shipped background is scored by the cosine alone (Curve; hybrid: Joint over
the cosine and the share). The background is the same for every owner, so it answers what the
owner's memories cannot be asked: whether this query scores high cosines with anything. On
the tuning half it let the floor rise from 0.2 to 0.3 and still keep more paraphrase answers
(docs/search.md).

Measured on the tuning half (docs/search.md): a joint model that also reads the query's
coverage (the largest share among its best three BM25 hits) separates answerable from
unanswerable questions a little better, but which memories are the best hits depends on the
rest of the corpus, and with it the same memory scored 0.94 among 2,000 memories and 0.15 among
2; the owner's own cosines (how far the best stands out from the rest) would help more, and
depend on the corpus wholly. Neither is used.

The ranking is what was measured best (BM25; the cosine; the adaptive blend of search/fusion.py,
which places a candidate without a vector by the `order` curves), and a score never rises down
the list: each result's is its own relevance, capped at the score of the result ranked above
it (descending()). So the scores order the results as the ranking does, and the first result's
score is its own.

The models are fitted per model on the tuning half of benchmarks/trust.py's questions (relevant:
the memory that answers; not: every candidate of a question nobody saved an answer for) and
stored in calibration.json beside this module. A score of 0.5 means that about half the results
scored so were relevant on that data. A model with no fitted curve (an `openai:` model, a folder
of one's own) uses FALLBACK's, which assume a cosine scale like the default local model's, and
gets no default floor and no hints by meaning (see for_model); benchmarks/trust.py --curves-of
measures what those curves are worth on a model they were not fitted on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from memory_bank.search.background import Level

if TYPE_CHECKING:
    # numpy comes with semantic search only: a lexical server never reads a head.
    import numpy as np

DATA = Path(__file__).with_name("calibration.json")
K = TypeVar("K")


def _logistic(z: float) -> float:
    # exp overflows past about 709; the curve is flat there anyway.
    if z < -60:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class Curve:
    """A logistic curve: 1 / (1 + exp(-(slope * x + offset)))."""

    slope: float
    offset: float

    def __call__(self, x: float) -> float:
        """The relevance this evidence stands for."""
        return _logistic(self.slope * x + self.offset)


@dataclass(frozen=True)
class Joint:
    """The hybrid relevance: a logistic model over a result's cosine, its share of the query's
    terms and that share squared (a memory holding a few of a question's words is likelier a
    near miss than one holding none, one holding them all likelier the answer)."""

    cosine: float
    share: float
    share_squared: float
    offset: float

    def __call__(self, cosine: float, share: float) -> float:
        """The relevance of a result with this cosine and share of the query's terms."""
        z = self.cosine * cosine + self.share * share + self.share_squared * share * share
        return _logistic(z + self.offset)


@dataclass(frozen=True)
class Against:
    """A relevance model that reads the cosine against the query's level among the fixed
    background sentences (search/background.py): a logistic model over the cosine, its standing
    (spreads above the background's mean), the background's spread, and for hybrid the share of
    the query's terms and that share squared."""

    cosine: float
    standing: float
    spread: float
    offset: float
    share: float = 0.0
    share_squared: float = 0.0

    def __call__(self, cosine: float, level: Level, share: float = 0.0, pair: float = 0.0) -> float:
        """The relevance of a result with this cosine (and share) for a query at this level;
        pair: the head's term for the result (Calibration.head_of), when the model has one."""
        z = (
            self.cosine * cosine
            + self.standing * level.standing(cosine)
            + self.spread * level.spread
            + self.share * share
            + self.share_squared * share * share
        )
        return _logistic(z + pair + self.offset)


@dataclass(frozen=True)
class Leveled:
    """The semantic and hybrid relevance models of a model with a shipped background; head: the
    file of the hybrid model's weights over the query's and the memory's vectors (one per
    dimension, fitted with it), None when the model has none."""

    semantic: Against
    hybrid: Against
    head: str | None = None


@dataclass(frozen=True)
class Order:
    """The curves the hybrid ranking places candidates by (search/fusion.fuse): the blend's
    value, and BM25 over the attainable score for a candidate without a vector. Fitted on 7
    December 2026 and kept, so the ranking stays the one measured."""

    lexical: Curve
    hybrid: Curve


@dataclass(frozen=True)
class Calibration:
    """One model's relevance models, the hybrid ranking's curves, the default relevance floor
    and the threshold of a save's hint by meaning (above 1: none)."""

    lexical: Curve
    semantic: Curve
    hybrid: Joint
    order: Order
    floor: float
    model: str  # the model these were fitted on ("" for the lexical curve alone)
    similar: float = 2.0
    leveled: Leveled | None = None  # read against the query's level, when it has one

    def meaning(self, cosine: float, level: Level | None) -> float:
        """A semantic result's relevance: against the query's level when there is one (and
        models for it), else the cosine's curve."""
        if level is not None and self.leveled is not None:
            return self.leveled.semantic(cosine, level)
        return self.semantic(cosine)

    def joint(self, cosine: float, share: float, level: Level | None, pair: float = 0.0) -> float:
        """A hybrid result's relevance from its cosine and share of the query's terms: against
        the query's level when there is one (and models for it), else the joint model; pair:
        the head's term for it (head_of), read with the level only."""
        if level is not None and self.leveled is not None:
            return self.leveled.hybrid(cosine, level, share, pair)
        return self.hybrid(cosine, share)

    def head_of(self, query: np.ndarray) -> np.ndarray | None:
        """The model's head for this query (None: it has none, or the vector is not of its
        size): a memory's term in the hybrid relevance is its unit vector's product with it."""
        import numpy as np

        if self.leveled is None or self.leveled.head is None:
            return None
        weights = _head(self.leveled.head)
        if weights.shape[0] != query.shape[-1]:
            return None
        return weights * query.reshape(-1).astype(np.float32)


@cache
def _head(name: str) -> np.ndarray:
    """A head's weights (float32), from their file beside this module."""
    import numpy as np

    return np.load(DATA.with_name(name)).astype(np.float32)


def _curve(raw: dict[str, float]) -> Curve:
    return Curve(float(raw["slope"]), float(raw["offset"]))


@cache
def _stored() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(DATA.read_text())
    return loaded


FALLBACK = "local:all-mpnet-base-v2-int8"


def for_model(model: str | None) -> Calibration:
    """The models for this model (None: lexical search alone). A model with none gets
    FALLBACK's and no default floor: its cosines may sit on another scale, so a floor could hide
    every answer; its scores still order the results, and min_score sets a floor."""
    stored = _stored()
    models = stored["models"]
    assert isinstance(models, dict)
    known = model is not None and model in models
    name = model if model is not None and known else FALLBACK
    fitted = models[name]
    lexical, order, floor = stored["lexical"], stored["order"], stored["floor"]
    assert isinstance(lexical, dict) and isinstance(order, dict)
    assert isinstance(floor, float | int)
    leveled = fitted.get("background") if known else None
    return Calibration(
        _curve(lexical),
        _curve(fitted["semantic"]),
        Joint(**{k: float(v) for k, v in fitted["hybrid"].items()}),
        Order(_curve(order["lexical"]), _curve(fitted["order"])),
        float(floor) if model is None or known else 0.0,
        name if model is not None else "",
        float(fitted["similar"]) if known else 2.0,
        Leveled(
            Against(**{k: float(v) for k, v in leveled["semantic"].items()}),
            Against(**{k: float(v) for k, v in leveled["hybrid"].items()}),
            leveled.get("head"),
        )
        if leveled
        else None,
    )


def fitted(model: str) -> bool:
    """Whether this model has models of its own (not FALLBACK's)."""
    models = _stored()["models"]
    assert isinstance(models, dict)
    return model in models


def descending(scored: Iterable[tuple[K, float]]) -> list[tuple[K, float]]:
    """Results in rank order with their own relevance, each capped at the one before, so the
    scores never rise down the list."""
    out = []
    cap = 1.0
    for key, score in scored:
        cap = min(cap, score)
        out.append((key, cap))
    return out


def lexical_evidence(bm25: float, attainable: float) -> float:
    """BM25 against what the query could score, capped at 1 (0 when it could score nothing)."""
    if attainable <= 0:
        return 0.0
    return min(bm25 / attainable, 1.0)
