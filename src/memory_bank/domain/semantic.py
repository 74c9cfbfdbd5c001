"""Semantic search at run time: the provider, query embeddings under a deadline, and each
owner's vectors as a cached matrix. One per process (AppState.semantic); None when off."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from memory_bank.search.embeddings import Provider, make_provider
from memory_bank.settings import Settings
from memory_bank.store import vectors

if TYPE_CHECKING:
    import numpy as np

    from memory_bank.search.dense import Matrix

log = logging.getLogger("memory_bank.embeddings")


class Semantic:
    """A process's semantic search: embeds queries, ranks owners' vectors, tracks outages."""

    def __init__(self, provider: Provider, deadline_ms: int, cache_mb: int) -> None:
        # numpy comes with the `semantic` extra: imported only when semantic search is on.
        from memory_bank.search import dense

        self._dense = dense
        self.provider = provider
        self.model = provider.model
        self.deadline = deadline_ms / 1000
        self.cache = dense.MatrixCache(cache_mb * 1024 * 1024)
        # Query embeddings run here, so a slow provider costs a search its deadline, not more.
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="embed-query")
        self._lock = threading.Lock()
        self._down = False
        # Set when a save queued work, so the worker need not wait for its next poll.
        self.wake = threading.Event()

    def begin(self, text: str) -> Callable[[], np.ndarray | None]:
        """Start embedding the query now; the returned call waits for it and gives the vector,
        or None when the provider fails or misses the deadline counted from now (so a search
        can rank lexically meanwhile)."""
        future = self._pool.submit(self.provider.embed, [text])
        until = time.monotonic() + self.deadline
        return lambda: self._finish(future, until)

    def _finish(self, future: Future[np.ndarray], until: float) -> np.ndarray | None:
        """The embedding a future holds, or None when it failed or is not there by `until`."""
        try:
            vector = future.result(max(0.0, until - time.monotonic()))
        except FutureTimeout:
            self.trouble("did not answer a query within the deadline")
            return None
        except Exception as exc:  # any provider failure degrades search, never fails it
            self.trouble(f"failed ({type(exc).__name__})")
            return None
        self.recovered()
        return vector[0]

    def trouble(self, what: str) -> None:
        """Note that the provider failed; logged once per episode (until it works again)."""
        with self._lock:
            first, self._down = not self._down, True
        if first:
            log.warning(
                "embeddings provider %s %s: search answers lexically until it is back",
                self.model,
                what,
            )

    def recovered(self) -> None:
        """Note that the provider works; logs the end of an episode."""
        with self._lock:
            was, self._down = self._down, False
        if was:
            log.warning("embeddings provider %s is back: hybrid search again", self.model)

    @property
    def down(self) -> bool:
        """Whether the last call to the provider failed."""
        return self._down

    def matrix(self, conn: Connection, owner: str) -> Matrix:
        """The owner's vectors of this model, from the cache while their version holds."""
        version = vectors.version(conn, owner)
        if version is None:
            return self._dense.Matrix.of([])
        found = self.cache.get(owner, version, self.model)
        if found is None:
            found = self._dense.Matrix.of(vectors.load(conn, owner, self.model))
            self.cache.put(owner, version, self.model, found)
        return found

    def close(self) -> None:
        """Stop the query threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def from_settings(settings: Settings) -> Semantic | None:
    """The process's semantic search for these settings (None when off); the provider is
    loaded now, so a bad setting stops start-up (EmbeddingsMisconfigured)."""
    provider = make_provider(settings)
    if provider is None:
        return None
    return Semantic(provider, settings.embeddings_deadline_ms, settings.embeddings_cache_mb)
