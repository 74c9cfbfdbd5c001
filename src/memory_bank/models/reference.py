"""The reference check: a known model must give the original model's vectors on this CPU.

references.json holds, per known model, a few texts and the vectors the original model
(fp32) gives them. A quantized model whose kernels go wrong on some CPU (int8 products that
saturate, as signed weights did on x86 without AVX-512 VNNI) gives vectors far from those;
such a model is refused with the reason, never used.
"""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

from memory_bank.models.errors import EmbeddingsMisconfigured

if TYPE_CHECKING:
    from memory_bank.models.embeddings import Provider

# The least cosine to the original model's vector that each reference text must reach.
MIN_COSINE = 0.98


class ReferenceMismatch(EmbeddingsMisconfigured):
    """The model's vectors on this machine are not the original model's."""


@functools.cache
def _references() -> dict[str, dict[str, list[str]]]:
    """Every known model's reference texts and vectors (base64 float32, little-endian)."""
    data: dict[str, dict[str, list[str]]] = json.loads(
        (Path(__file__).with_name("references.json")).read_text(encoding="utf-8")
    )
    return data


def known(name: str) -> bool:
    """Whether references exist for this model."""
    return name in _references()


def cosines(provider: Provider, name: str) -> list[float]:
    """The cosine of the provider's vector to the original's, per reference text."""
    import numpy as np

    entry = _references()[name]
    want = np.vstack([np.frombuffer(base64.b64decode(v), dtype="<f4") for v in entry["vectors"]])
    got = provider.embed(entry["texts"])
    if got.shape != want.shape:
        raise ReferenceMismatch(
            f"{provider.model} gives {got.shape[1]}-dimensional vectors; {name} gives "
            f"{want.shape[1]}: these files are not {name}"
        )
    return [float(c) for c in (got * want).sum(axis=1)]


def verify(provider: Provider, name: str) -> list[float]:
    """The reference cosines, or ReferenceMismatch saying which text fell short and by how
    much, so a model that computes wrong vectors here is never used."""
    found = cosines(provider, name)
    worst = min(range(len(found)), key=found.__getitem__)
    if found[worst] < MIN_COSINE:
        text = _references()[name]["texts"][worst]
        raise ReferenceMismatch(
            f"{provider.model} fails its reference check on this machine: its vector for "
            f"{text[:40]!r} has cosine {found[worst]:.3f} to the original {name}'s (at least "
            f"{MIN_COSINE} needed), so it would rank by wrong vectors; refusing to use it. "
            "Use another model (MEMORY_BANK_EMBEDDINGS=local:all-MiniLM-L6-v2, "
            "openai:<URL>) or off"
        )
    return found
