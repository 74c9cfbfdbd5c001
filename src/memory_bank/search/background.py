"""Where a query's cosines sit in general: their mean and spread over a fixed set of sentences.

Some queries score high cosines with any memory (short ones, ones about the owner in general),
others low with all, so a cosine alone reads the query's habit as relevance. The owner's own
memories would say what is usual for the query, but a score must not depend on them
(search/calibration.py). So the query is measured against a fixed background instead: the
sentences of background.json (everyday things an agent saves about anyone, written for this
and drawn from no evaluation data; tools/background.py), embedded once per model by the
server's own int8 model and shipped as background-<model>.npy (float16). The same query and
model always get the same level, whoever asks.

A model without shipped vectors (an `openai:` model, a folder of one's own) has no level: its
scores read the cosine alone. Embedding the sentences for it at first use would cost hundreds of
paid or slow embeddings, and its calibration is borrowed anyway.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # numpy comes with semantic search only (domain/semantic.py): a lexical server that reads
    # the calibration never loads it.
    import numpy as np

HERE = Path(__file__).parent
TEXTS = HERE / "background.json"


@dataclass(frozen=True)
class Level:
    """A query's cosines to the background: their mean and standard deviation (spread)."""

    mean: float
    spread: float

    def standing(self, cosine: float) -> float:
        """How many spreads a cosine stands above the background's mean for this query."""
        # The spread of hundreds of varied sentences is never near 0; the bound only keeps a
        # degenerate vector from dividing by it.
        return (cosine - self.mean) / max(self.spread, 1e-3)


def vectors_file(model: str) -> Path:
    """Where a model's background vectors are shipped (model as search calibration names it)."""
    return HERE / f"background-{model.removeprefix('local:').replace('/', '--')}.npy"


def texts() -> list[str]:
    """The background's sentences."""
    loaded: list[str] = json.loads(TEXTS.read_text())["texts"]
    return loaded


@cache
def vectors(model: str) -> np.ndarray | None:
    """The model's background vectors as float32 rows (None: none shipped for it)."""
    import numpy as np

    path = vectors_file(model)
    if not path.is_file():
        return None
    return np.load(path).astype(np.float32)


def level(model: str, query: np.ndarray) -> Level | None:
    """The query's level among the background for this model (None: it has no background, or
    the vector is not of its size)."""
    import numpy as np

    rows = vectors(model)
    if rows is None or rows.shape[1] != query.shape[-1]:
        return None
    # einsum, not a BLAS product, as in search/dense.py: on a busy server BLAS's own threads
    # made this small product hundreds of times slower at p95 (docs/search.md).
    cos = np.einsum("ij,j->i", rows, query.reshape(-1).astype(np.float32))
    return Level(float(cos.mean()), float(cos.std()))
