"""A model prepared in the background: search is lexical until it is ready, the outbox worker
waits for it (and is let go when woken), and a model that fails is shown, never used."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_bank.domain import vector_jobs
from memory_bank.domain.semantic import Semantic
from memory_bank.models import local_model, preparing
from memory_bank.models.errors import EmbeddingsMisconfigured
from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine

# Loads the local model (the tier `make test-fast` leaves out).
pytestmark = pytest.mark.model


def plan(model: str, prepare: Callable[[local_model.Report], local_model.Files]) -> Any:
    """A plan for the packaged MiniLM under a name of its own, prepared by `prepare`."""
    return local_model.Plan(
        "test-model", model, local_model.MAX_TOKENS, "all-MiniLM-L6-v2", 0, lambda: None, prepare
    )


def packaged() -> local_model.Files:
    files = local_model._minilm_present()
    assert files is not None, "the dev install has the packaged MiniLM (semantic extra)"
    return files


def test_search_is_lexical_until_the_model_is_ready_then_it_embeds(tmp_path: Path) -> None:
    gate = threading.Event()
    heard: list[str] = []

    def prepare(report: local_model.Report) -> local_model.Files:
        report.downloading(50, 200)
        heard.append("downloading")
        gate.wait(60)
        return packaged()

    preparation = preparing.prepare_in_background(plan("local:test-ready", prepare))
    semantic = Semantic(None, 1000, 16, preparation)
    try:
        assert semantic.model == "local:test-ready" and not semantic.ready
        assert semantic.begin("anything") is None  # lexical at once, nothing to wait for
        while not heard:
            threading.Event().wait(0.01)
        assert semantic.status() == (
            "embeddings local:test-ready: downloading 25% (0 of 0 MB); "
            "search is lexical until it is ready"
        )
        # The outbox worker embeds nothing while the model is prepared, and stops at once.
        worker = vector_jobs.Worker(
            Database(make_engine(f"sqlite:///{tmp_path / 'idle.db'}", 1)), semantic
        )
        worker.start()
        semantic.wake.set()  # a save's wake-up
        worker.stop()
        assert not worker.running() and not preparation.finished.is_set()
        # Anyone else waits for the model (reindex --vectors, a test draining by hand).
        waiter = threading.Thread(target=lambda: heard.append(semantic.provider.embed(["x"])))
        waiter.start()
        gate.set()
        waiter.join(60)
        assert isinstance(heard[-1], np.ndarray) and heard[-1].shape == (1, 384)
        assert semantic.ready and semantic.status() == "embeddings local:test-ready: ready"
        pending = semantic.begin("What sport does my son do?")
        assert pending is not None and pending() is not None
    finally:
        gate.set()
        semantic.close()


def test_a_model_that_cannot_be_prepared_is_shown_and_never_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def prepare(report: local_model.Report) -> local_model.Files:
        raise EmbeddingsMisconfigured("cannot download test-model: no index here")

    preparation = preparing.prepare_in_background(plan("local:test-failed", prepare))
    preparation.finished.wait(60)
    semantic = Semantic(None, 1000, 16, preparation)
    try:
        assert semantic.status() == (
            "embeddings local:test-failed: failed, search is lexical: "
            "cannot download test-model: no index here"
        )
        assert semantic.begin("anything") is None
        with pytest.raises(preparing.Unavailable, match="no index here"):
            semantic.provider.embed(["x"])
        semantic.trouble("failed while embedding saved memories (Unavailable)")
        assert "semantic search is off: cannot download test-model" in caplog.text
        assert "failed while embedding" not in caplog.text  # said once, by the preparation
    finally:
        semantic.close()
