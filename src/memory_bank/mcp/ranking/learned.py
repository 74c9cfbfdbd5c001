"""The learned model: how likely each capability is for a phrase, by a multinomial logistic
model over its character 3- to 5-grams that learn.py fits on the spec's texts alone (every
language's examples, titles, summaries); its probabilities are blended after the rules
(LEARNED_WEIGHT).

A language is taught by its examples: add them to the spec, run `python -m
memory_bank.mcp.ranking.learn`, and learned.npz is fitted again; no code changes. The file
records a digest of the texts it was fitted on, and a manifest whose texts differ (the spec
changed and nobody fitted again) is ranked by the rules alone, never by a stale model.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_bank.caches import PerObject
from memory_bank.mcp.manifest import Manifest
from memory_bank.mcp.ranking import tuning
from memory_bank.mcp.ranking.capability_index import Index, capability_texts, index_of
from memory_bank.mcp.ranking.nearest import grams

# Tuned on the tune halves of the phrasing sets: tuning.json says what it does, and
# `python -m memory_bank.mcp.ranking.tune LEARNED_WEIGHT ...` measures a value.
LEARNED_WEIGHT = tuning.value("LEARNED_WEIGHT")

DATA = Path(__file__).with_name("learned.npz")


@dataclass(frozen=True)
class Model:
    """A fitted model: its classes, its n-grams' columns and weights, and what it learned from."""

    names: tuple[str, ...]  # the capabilities, one class each
    columns: dict[str, int]  # each n-gram's row in weights
    idf: Any  # float32 per n-gram: how rare it is among the texts
    weights: Any  # float32, n-grams x classes
    bias: Any  # float32 per class
    digest: str  # of the texts it was fitted on (texts_digest)

    def features(self, text: str) -> tuple[Any, Any]:
        """A phrase's known n-grams as rows and unit TF-IDF values (log counts)."""
        import numpy as np

        found = [(self.columns[g], n) for g, n in grams(text).items() if g in self.columns]
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows = np.array([r for r, _ in found], dtype=np.int64)
        values = np.array([1 + math.log(n) for _, n in found], dtype=np.float32) * self.idf[rows]
        return rows, values / np.linalg.norm(values)

    def probabilities(self, text: str) -> dict[str, float]:
        """Each capability's probability for a phrase (the bias alone when no n-gram is known)."""
        import numpy as np

        rows, values = self.features(text)
        logits = self.bias + (self.weights[rows] * values[:, None]).sum(axis=0)
        exp = np.exp(logits - logits.max())
        return dict(zip(self.names, (exp / exp.sum()).tolist(), strict=True))


def training_texts(index: Index) -> list[tuple[str, str]]:
    """What the model learns from: (capability, text) for every text of every capability."""
    return [(c.name, t) for c in index.capabilities for t in capability_texts(c)]


def texts_digest(texts: list[tuple[str, str]]) -> str:
    """A digest of the texts and their capabilities, in order."""
    hashed = hashlib.sha256()
    for name, text in texts:
        hashed.update(f"{name}\x00{text}\x00".encode())
    return hashed.hexdigest()


def save(model: Model, path: Path = DATA) -> None:
    """Write a model (weights as float16: the file stays small, the ranking the same)."""
    import numpy as np

    grams_in_order = sorted(model.columns, key=model.columns.__getitem__)
    with path.open("wb") as out:
        np.savez_compressed(
            out,
            names=np.array(model.names),
            grams=np.array(grams_in_order),
            idf=model.idf.astype(np.float32),
            weights=model.weights.astype(np.float16),
            bias=model.bias.astype(np.float32),
            digest=np.array(model.digest),
        )


def load(path: Path = DATA) -> Model | None:
    """The model in a file, or None when there is none."""
    import numpy as np

    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        return Model(
            tuple(str(n) for n in data["names"]),
            {str(g): i for i, g in enumerate(data["grams"])},
            data["idf"].astype(np.float32),
            data["weights"].astype(np.float32),
            data["bias"].astype(np.float32),
            str(data["digest"]),
        )


# A process has one manifest; tests make a few more.
_MODELS: PerObject[Model | None] = PerObject(bound=8)


def model_for(manifest: Manifest) -> Model | None:
    """The shipped model when it was fitted on this manifest's texts, else None."""

    def make() -> Model | None:
        model = load()
        index = index_of(manifest)
        if model is None or model.digest != texts_digest(training_texts(index)):
            return None
        return model

    return _MODELS.get(manifest, make)


def blended(manifest: Manifest, query: str, scores: dict[str, float]) -> dict[str, float]:
    """The rules' scores with the model's probabilities added, on the rules' scale (w * the
    best score * probability, the rules' share 1 - w). Nothing is added to a phrase the rules
    found nothing for (grammar alone, a save declined), with the weight 0, or without a model
    fitted on this manifest."""
    best = max(scores.values(), default=0.0)
    if best <= 0 or not LEARNED_WEIGHT:
        return scores
    model = model_for(manifest)
    if model is None:
        return scores
    weight = LEARNED_WEIGHT
    probabilities = model.probabilities(query)
    names = set(scores) | set(probabilities)
    return {
        name: (1 - weight) * scores.get(name, 0.0) + weight * best * probabilities.get(name, 0.0)
        for name in names
    }
