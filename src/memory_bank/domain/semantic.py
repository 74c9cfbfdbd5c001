"""Semantic search at run time: the provider, query embeddings under a deadline, and each
owner's vectors as a cached matrix. One per process (AppState.semantic); None when off.

A local model whose files are here loads (and passes its reference check) at start, so a bad
one refuses to start. One that must be downloaded or built first is prepared in a background
thread (models/preparing.py) while the app serves: until it is ready, searches answer
lexically and the outbox worker waits; a model that fails is logged, shown in /readyz, and
never used.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sqlalchemy import Connection

from memory_bank.models.embeddings import Provider, make_provider, parse
from memory_bank.settings import Settings
from memory_bank.store import vectors

if TYPE_CHECKING:
    import numpy as np

    from memory_bank.models.preparing import Preparation
    from memory_bank.search.dense import Matrix

log = logging.getLogger("memory_bank.embeddings")
T = TypeVar("T")
# Vectors a save made for its hints, kept for the worker that embeds the same memory next (see
# Made); a few hundred: the saves of the last seconds, about 3 KiB each at 768 dimensions.
MADE_KEPT = 256


class Made:
    """The vectors of memory texts this process embedded for a save's hints, by the text's
    digest, so the outbox worker stores that vector instead of asking the model again (the
    same text through the same provider: the same vector). Bounded, oldest dropped first; a
    vector is handed out once."""

    def __init__(self, capacity: int = MADE_KEPT) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> bytes:
        # A digest, not the text: what a memory says stays only where it is stored.
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def keep(self, text: str, vector: np.ndarray) -> None:
        """Keep the vector made for this text."""
        key = self._key(text)
        with self._lock:
            self._kept[key] = vector
            self._kept.move_to_end(key)
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)

    def take(self, text: str) -> np.ndarray | None:
        """The vector kept for this text, if any (no longer kept after)."""
        with self._lock:
            return self._kept.pop(self._key(text), None)


class Pending:
    """A query's embedding under way: call it to wait for the vector (None when the provider
    failed or missed the deadline), or hand it work to do with the vector as soon as it comes,
    on the query thread, while the caller does something else."""

    def __init__(self, semantic: Semantic, future: Future[np.ndarray], until: float) -> None:
        self._semantic = semantic
        self._future = future
        self._until = until

    def __call__(self) -> np.ndarray | None:
        return self._semantic._finish(self._future, self._until)

    def then(self, work: Callable[[np.ndarray], T]) -> Awaited[T]:
        """work(vector) run where the embedding finishes (or here, if it has), so that a search
        ranks BM25 meanwhile; its wait has the same deadline as the embedding's."""
        done: Future[Any] = Future()

        def after(embedded: Future[np.ndarray]) -> None:
            try:
                vector = embedded.result()[0]
                done.set_result((vector, work(vector)))
            except BaseException as exc:  # the waiter sees it, as it would the embedding's
                done.set_exception(exc)

        self._future.add_done_callback(after)
        return Awaited(self._semantic, done, self._until)


class Awaited(Generic[T]):
    """The vector and what was made with it, waited for under the embedding's deadline."""

    def __init__(self, semantic: Semantic, future: Future[Any], until: float) -> None:
        self._semantic = semantic
        self._future = future
        self._until = until

    def __call__(self) -> tuple[np.ndarray, T] | None:
        found = self._semantic._finish(self._future, self._until, whole=True)
        return None if found is None else (found[0], found[1])


class Semantic:
    """A process's semantic search: embeds queries, ranks owners' vectors, tracks outages."""

    def __init__(
        self,
        provider: Provider | None,
        deadline_ms: int,
        cache_mb: int,
        preparation: Preparation | None = None,
    ) -> None:
        # numpy is imported only when semantic search is on.
        from memory_bank.search import dense

        self._dense = dense
        self._provider = provider
        self._preparation = preparation
        named = provider if provider is not None else preparation
        assert named is not None, "a provider, or the preparation of one"
        self.model: str = named.model
        self.deadline = deadline_ms / 1000
        self.cache = dense.MatrixCache(cache_mb * 1024 * 1024)
        # Query embeddings run here, so a slow provider costs a search its deadline, not more.
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="embed-query")
        self._lock = threading.Lock()
        self._down = False
        # Set when a save queued work, so the worker need not wait for its next poll.
        self.wake = threading.Event()
        self.made = Made()
        self._released = False

    @property
    def provider(self) -> Provider:
        """The provider; while a model is prepared, a stand-in whose embed waits for it."""
        if self._provider is not None:
            return self._provider
        assert self._preparation is not None
        found = self._preparation.provider
        if found is not None:
            self._provider = found
            return found
        return self._preparation.stand_in()

    @property
    def preparing(self) -> bool:
        """Whether the model is still being prepared (its outcome not known yet)."""
        return self._preparation is not None and not self._preparation.finished.is_set()

    @property
    def ready(self) -> bool:
        """Whether the provider can embed now (not still being prepared, not failed, and not
        released)."""
        if self._released:
            return False
        return self._provider is not None or (
            self._preparation is not None and self._preparation.provider is not None
        )

    def status(self) -> str:
        """What semantic search is doing, for /readyz: ready, or how preparing goes."""
        if self._preparation is None:
            return f"embeddings {self.model}: ready"
        return self._preparation.status()

    def begin(self, text: str, keep: bool = False) -> Pending | None:
        """Start embedding the query now; the returned Pending waits for it and gives the
        vector, or None when the provider fails or misses the deadline counted from now (so a
        search can rank lexically meanwhile). None at once while the model is not ready: the
        search is lexical, with nothing to wait for. keep: the text is a memory's, as the
        worker will embed it; its vector is kept for the worker (made), even past the
        deadline."""
        if not self.ready:
            return None
        future = self._pool.submit(self.provider.embed, [text])
        if keep:

            def kept(done: Future[np.ndarray]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self.made.keep(text, done.result()[0])

            future.add_done_callback(kept)
        return Pending(self, future, time.monotonic() + self.deadline)

    def _finish(self, future: Future[Any], until: float, whole: bool = False) -> Any:
        """The embedding a future holds (its first row; whole: the future's value as it is),
        or None when it failed or is not there by `until`."""
        try:
            vector = future.result(max(0.0, until - time.monotonic()))
        except FutureTimeout:
            self.trouble("did not answer a query within the deadline")
            return None
        except Exception as exc:  # any provider failure degrades search, never fails it
            self.trouble(f"failed ({type(exc).__name__})")
            return None
        self.recovered()
        return vector if whole else vector[0]

    def trouble(self, what: str) -> None:
        """Note that the provider failed; logged once per episode (until it works again). Not
        while a model is prepared (or failed to be): the preparation logs how that goes."""
        if not self.ready:
            return
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
            loaded = vectors.load(conn, owner, self.model)
            found = self._dense.Matrix.of(
                [(v.memory_id, v.vector) for v in loaded],
                facts=[(v.created_at, v.updated_at, v.source) for v in loaded],
            )
            self.cache.put(owner, version, self.model, found)
        return found

    def close(self) -> None:
        """Stop the query threads (queries not started are dropped; none is waited for)."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def release(self) -> None:
        """Before the process exits, with the embedding worker stopped: wait for the query
        threads, then release the model's runtime once the runs under way end (the outcome of
        an embed after this is a ModelClosed failure). A model run still going on a thread the
        interpreter stops at exit aborts the process; a host reads that as a crash."""
        self._released = True
        self._pool.shutdown(wait=True, cancel_futures=True)
        found = self._provider
        if found is None and self._preparation is not None:
            found = self._preparation.provider
        close = getattr(found, "close", None)
        if close is not None:
            close()


def from_settings(settings: Settings) -> Semantic | None:
    """The process's semantic search for these settings (None when off). A provider that is
    here is loaded and checked now, so a bad setting or a model failing its reference check
    stops start-up (EmbeddingsMisconfigured); a local model that must be downloaded or built
    first is prepared in the background, once per process."""
    choice = parse(settings.embeddings)
    if choice.kind == "local":
        from memory_bank.models import local_model
        from memory_bank.models.preparing import prepare_in_background

        chosen = local_model.plan(choice.target, settings)
        files = chosen.present()
        if files is None:
            return Semantic(
                None,
                settings.embeddings_deadline_ms,
                settings.embeddings_cache_mb,
                prepare_in_background(chosen),
            )
        provider: Provider | None = local_model.provider(chosen, files)
    else:
        provider = make_provider(settings)
    if provider is None:
        return None
    return Semantic(provider, settings.embeddings_deadline_ms, settings.embeddings_cache_mb)
