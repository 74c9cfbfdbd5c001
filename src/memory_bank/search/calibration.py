"""What a search score means: the estimated chance that a result is relevant, in [0, 1].

Each mode's score is a logistic curve over evidence that needs nothing from the other
candidates, so the same memory and query score alike whatever else the owner holds:

- lexical: BM25 read against what the query could score (search/fusion.attainable), capped at 1;
- semantic: the cosine of the model that made the vectors;
- hybrid: the adaptive blend of those two (search/fusion.py).

The curves are fitted per model on the tuning half of benchmarks/trust.py's questions (relevant:
the memory that answers; not: every other candidate, and every candidate of a question nobody
saved an answer for) and stored in calibration.json beside this module. A score of 0.5 means
that about half the results scored so were relevant on that data. A model with no fitted curve
(an `openai:` model, a folder of one's own) uses FALLBACK's, which assume a cosine scale like
the default local model's, and gets no default floor (see for_model); benchmarks/trust.py
--curves-of measures what those curves are worth on a model they were not fitted on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Curve:
    """A logistic curve: 1 / (1 + exp(-(slope * x + offset)))."""

    slope: float
    offset: float

    def __call__(self, x: float) -> float:
        """The relevance this evidence stands for."""
        z = self.slope * x + self.offset
        # exp overflows past about 709; the curve is flat there anyway.
        if z < -60:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class Calibration:
    """The three modes' curves for one model, and the default relevance floor."""

    lexical: Curve
    semantic: Curve
    hybrid: Curve
    floor: float
    model: str  # the model these curves were fitted on ("" for the lexical curve alone)


def _curve(raw: dict[str, float]) -> Curve:
    return Curve(float(raw["slope"]), float(raw["offset"]))


@cache
def _stored() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(DATA.read_text())
    return loaded


FALLBACK = "local:all-mpnet-base-v2-int8"


def for_model(model: str | None) -> Calibration:
    """The curves for this model (None: lexical search alone). A model with none gets FALLBACK's
    curves and no default floor: its cosines may sit on another scale, so a floor could hide
    every answer; its scores still order the results, and min_score sets a floor."""
    stored = _stored()
    models = stored["models"]
    assert isinstance(models, dict)
    name = model if model is not None and model in models else FALLBACK
    fitted = models[name]
    lexical = stored["lexical"]
    assert isinstance(lexical, dict)
    floor = stored["floor"]
    assert isinstance(floor, float | int)
    return Calibration(
        _curve(lexical),
        _curve(fitted["semantic"]),
        _curve(fitted["hybrid"]),
        float(floor) if model is None or model in models else 0.0,
        name if model is not None else "",
    )


def lexical_evidence(bm25: float, attainable: float) -> float:
    """BM25 against what the query could score, capped at 1 (0 when it could score nothing)."""
    if attainable <= 0:
        return 0.0
    return min(bm25 / attainable, 1.0)
