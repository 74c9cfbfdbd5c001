"""Why semantic search cannot start: one error its providers and their chooser share."""

from __future__ import annotations


class EmbeddingsMisconfigured(ValueError):
    """MEMORY_BANK_EMBEDDINGS (or a setting it needs) cannot work: refused at start."""
