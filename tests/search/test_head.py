"""A model's head (search/calibration.py): weights over the query's and the memory's vectors
that its hybrid relevance model was fitted with, shipped beside calibration.json, and read by
every hybrid search's scores of that model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memory_bank.app import state_of
from memory_bank.domain import vector_jobs
from memory_bank.search import background, calibration

MODEL = "local:all-MiniLM-L6-v2"
HEADED = "local:all-MiniLM-L6-v2-int8"


def _headed() -> list[str]:
    """The calibrated models whose hybrid relevance has a head."""
    models = json.loads(calibration.DATA.read_text())["models"]
    return [m for m, fitted in models.items() if fitted.get("background", {}).get("head")]


def test_all_minilm_has_a_head() -> None:
    """The model the head was measured to help (docs/search.md) keeps it."""
    assert HEADED in _headed()


@pytest.mark.parametrize("model", _headed())
def test_a_head_ships_beside_its_calibration(model: str) -> None:
    """One float16 weight per dimension of the model's vectors, a few KB."""
    leveled = calibration.for_model(model).leveled
    assert leveled is not None and leveled.head is not None
    path = calibration.DATA.with_name(leveled.head)
    stored = np.load(path)
    rows = background.vectors(model)
    assert rows is not None
    assert stored.dtype == np.float16 and stored.shape == (rows.shape[1],)
    assert path.stat().st_size < 4096


def test_a_hybrid_search_scores_with_the_head(make_service: Callable[..., Any]) -> None:
    """A hybrid result's score is the relevance model over its cosine, its standing against
    the background and the head's term of its vector, not the model without that term."""
    service = make_service(embeddings=MODEL, embeddings_worker=False)
    headers = service.auth("headed")
    memory = "My sister Ana moved to Lisbon last spring and works there as a nurse."
    question = "Which city does my sibling live in now?"
    for content in (memory, "The boiler gets its yearly service every October."):
        r = service.client.post("/v1/memory", json={"content": content}, headers=headers)
        assert r.status_code == 201, r.text
    state = state_of(service.app)
    while vector_jobs.drain_once(service.db, state.semantic):
        pass
    r = service.client.get(
        "/v1/memory/search",
        params={"q": question, "mode": "hybrid", "min_score": 0, "limit": 1},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    (found,) = r.json()["results"]
    assert found["content"] == memory
    cal = calibration.for_model(state.semantic.model)
    q, d = state.semantic.provider.embed([question, memory])
    level = background.level(state.semantic.model, q)
    head = cal.head_of(q)
    assert level is not None and head is not None
    cosine = float(d @ q)
    with_head = cal.joint(cosine, 0.0, level, float(d @ head))
    without = cal.joint(cosine, 0.0, level)
    assert found["score"] == pytest.approx(with_head, abs=1e-3)
    assert abs(with_head - without) > 0.02
