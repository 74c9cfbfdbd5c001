"""Embedding providers behind one interface, chosen by MEMORY_BANK_EMBEDDINGS.

`local` (the default) or `local:<model name or directory>` runs a model in-process on CPU
(models/local_model.py). `openai:<base URL>` asks any OpenAI-compatible `/v1/embeddings` server
(models/remote.py). `off` keeps search lexical. Every provider returns float32 rows of unit
length, so a dot product is the cosine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from memory_bank.models.errors import EmbeddingsMisconfigured

if TYPE_CHECKING:
    import numpy as np

    from memory_bank.settings import Settings

# The model `local` means: all-mpnet-base-v2 as int8 ONNX, built from pinned packaged weights
# (chosen by measurement: docs/search.md).
DEFAULT_LOCAL = "all-mpnet-base-v2"


class Provider(Protocol):
    """Turns texts into unit-length float32 vectors."""

    model: str  # stored with each vector: vectors of two models never meet in one ranking

    def embed(self, texts: list[str]) -> np.ndarray:
        """One row per text, float32, unit length."""


@dataclass(frozen=True)
class Choice:
    """A parsed MEMORY_BANK_EMBEDDINGS value."""

    kind: str  # "off", "local" or "openai"
    target: str = ""  # the local model's name or directory, or the server's base URL


def parse(value: str) -> Choice:
    """The provider a setting names; EmbeddingsMisconfigured with the reason when it is bad."""
    raw = value.strip()
    if raw.lower() in {"", "off"}:
        return Choice("off")
    kind, _, target = raw.partition(":")
    kind = kind.lower()
    if kind == "local":
        return Choice("local", target.strip() or DEFAULT_LOCAL)
    if kind == "openai":
        url = target.strip()
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            raise EmbeddingsMisconfigured(
                f"MEMORY_BANK_EMBEDDINGS=openai:<base URL> needs an http(s) URL, not {url!r}"
            )
        return Choice("openai", url.rstrip("/"))
    raise EmbeddingsMisconfigured(
        f"MEMORY_BANK_EMBEDDINGS must be off, local, local:<model name or directory> or "
        f"openai:<base URL>, not {value!r}"
    )


def make_provider(settings: Settings) -> Provider | None:
    """The provider the settings choose (None when off), a local model prepared first if it
    is not here yet; EmbeddingsMisconfigured when it cannot work, so the process refuses to
    start instead of failing per request."""
    choice = parse(settings.embeddings)
    if choice.kind == "off":
        return None
    if choice.kind == "local":
        from memory_bank.models import local_model

        return local_model.load(choice.target, settings.model_hub, settings.package_index)
    from memory_bank.models import remote

    if not settings.embeddings_model.strip():
        raise EmbeddingsMisconfigured(
            "MEMORY_BANK_EMBEDDINGS=openai:... needs MEMORY_BANK_EMBEDDINGS_MODEL (the model name "
            "the server knows, e.g. nomic-embed-text)"
        )
    return remote.RemoteProvider(
        choice.target,
        settings.embeddings_model.strip(),
        settings.embeddings_api_key.reveal(),
        timeout=settings.embeddings_timeout_ms / 1000,
    )


def embed_text(content: str, snippets: list[str] | None = None) -> str:
    """What a memory's vector is made from: its content, then its context snippets (the
    conversation around it says what the memory leaves implicit)."""
    return " ".join([content, *(snippets or [])])
