"""The semantic blend: with an embedding model, an English phrase's closeness in meaning to
each capability's texts scales the scores the words gave; it adds and removes nothing."""

from __future__ import annotations

from typing import Any, Protocol

from memory_bank.caches import PerObject
from memory_bank.mcp import language
from memory_bank.mcp.manifest import Manifest
from memory_bank.mcp.ranking import tuning
from memory_bank.mcp.ranking.capability_index import Index, capability_texts, index_of

# Tuned on the tune halves of the phrasing sets: tuning.json says what each does, and
# `python -m memory_bank.mcp.ranking.tune` measures a value.
SEMANTIC_WEIGHT = tuning.value("SEMANTIC_WEIGHT")
SEMANTIC_FLOOR = tuning.value("SEMANTIC_FLOOR")


class Embedder(Protocol):
    """An embedding model (models/embeddings.Provider is one): unit-length rows per text."""

    model: str

    def embed(self, texts: list[str]) -> Any:
        """One unit-length row per text (a numpy array)."""


# The capabilities' documents as vectors, per manifest and model: (matrix, the capability each
# row is of).
VECTORS: PerObject[tuple[Any, Any]] = PerObject(bound=8)


def prepared(manifest: Manifest, embedder: Embedder) -> bool:
    """Whether the capabilities' vectors of this model are ready (ranking by meaning is quick)."""
    return VECTORS.has(manifest, embedder.model)


def prepare(manifest: Manifest, embedder: Embedder) -> tuple[Any, Any]:
    """The vectors of every capability's documents (its texts, as the lexical ranking reads
    them) by this model, and the capability each is of; made once per manifest and model."""

    def make() -> tuple[Any, Any]:
        import numpy as np

        texts, owners = [], []
        for number, capability in enumerate(index_of(manifest).capabilities):
            for text in capability_texts(capability):
                texts.append(text)
                owners.append(number)
        matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
        return matrix, np.asarray(owners)

    return VECTORS.get(manifest, make, embedder.model)


def closeness(
    manifest: Manifest, index: Index, query: str, embedder: Embedder
) -> dict[str, float] | None:
    """How close an English phrase is in meaning to each capability (its closest document, as
    cosine); None for another language, or when the model fails (lexical alone then)."""
    if not language.is_english(query):
        return None
    import numpy as np

    try:
        matrix, owners = prepare(manifest, embedder)
        vector = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
    except Exception:  # a model that fails costs the ranking its meaning, never the answer
        return None
    closest = np.full(len(index.capabilities), -1.0)
    np.maximum.at(closest, owners, matrix @ vector)
    return {c.name: float(closest[i]) for i, c in enumerate(index.capabilities)}


def scale_by_meaning(scores: dict[str, float], meaning: dict[str, float]) -> None:
    """Scale each capability's score down by how far it is behind the phrase's closest one in
    meaning: the model reorders what the words found, it adds and removes nothing."""
    closest = max(meaning.values())
    for name, value in meaning.items():
        if scores[name] > 0:
            scores[name] *= max(SEMANTIC_FLOOR, 1 + SEMANTIC_WEIGHT * (value - closest))
