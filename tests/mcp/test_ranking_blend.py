"""The semantic blend (mcp/ranking/blend.py): meaning reorders, it adds and removes nothing."""

from __future__ import annotations

import numpy as np

from memory_bank.mcp import manifest
from memory_bank.mcp.ranking import blend, capability_index


def test_scores_shrink_by_distance_in_meaning_and_none_appears():
    scores = {"a": 1.0, "b": 1.0, "c": 0.0}
    blend.scale_by_meaning(scores, {"a": 0.9, "b": 0.5, "c": 0.9})
    expected_b = max(blend.SEMANTIC_FLOOR, 1 + blend.SEMANTIC_WEIGHT * (0.5 - 0.9))
    assert scores == {"a": 1.0, "b": expected_b, "c": 0.0}


class _Constant:
    """A stand-in model: every text the same direction."""

    model = "constant"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_only_english_is_compared_in_meaning():
    tools = manifest.load()
    index = capability_index.index_of(tools)
    english = blend.closeness(tools, index, "show my saved notes", _Constant())
    assert english is not None and set(english) == {c.name for c in index.capabilities}
    assert blend.closeness(tools, index, "Zeig mir bitte alle meine Notizen", _Constant()) is None
