"""A search while an owner's vectors are being made is at least as good as lexical search: on
the held-out LoCoMo conversations (plain protocol), with the vectors of half the memories made
(a fixed hash picks which), hybrid recall@10 is at least BM25's, in-process with the server's
index, default local model and fusion (benchmarks/trust.py builds the same candidates)."""

from __future__ import annotations

import pytest

import fusion  # a benchmark module (benchmarks/ is on pytest's path): the candidates it ranks
import locomo
import trust
from memory_bank.search import calibration

pytestmark = [pytest.mark.eval, pytest.mark.model, pytest.mark.slow]
HELD_OUT = {"conv-42", "conv-43"}


def test_hybrid_with_half_the_vectors_recalls_at_least_what_lexical_does():
    if not locomo.DEFAULT_DATA.exists():
        pytest.skip(f"LoCoMo data not at {locomo.DEFAULT_DATA} (MEMORY_BANK_LOCOMO_DATA)")
    qs = fusion.build(locomo.DEFAULT_DATA, "all-mpnet-base-v2", plain=True, conversations=HELD_OUT)
    assert qs and not any(q.tune for q in qs)
    cal = calibration.for_model(trust.MODELS["all-mpnet-base-v2"])
    lexical = trust.figures(qs, trust.ranker("lexical", cal), 0.0)["recall@10"]
    half = trust.figures(qs, trust.ranker("hybrid", cal, trust.half), 0.0)["recall@10"]
    assert half >= lexical, (half, lexical)
