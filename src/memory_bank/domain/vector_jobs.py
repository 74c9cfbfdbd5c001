"""The embedding outbox: what a save queues, what the worker of each `serve` process drains,
and what `memory-bank reindex --vectors` queues again."""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from memory_bank.domain.semantic import Semantic
from memory_bank.search.embeddings import embed_text
from memory_bank.store import documents, vectors
from memory_bank.store.database import Database

log = logging.getLogger("memory_bank.embeddings")

BATCH = 32
POLL_SECONDS = 1.0
# Longest wait between tries while the provider is down.
MAX_BACKOFF_SECONDS = 30.0


def drain_once(db: Database, semantic: Semantic, size: int = BATCH) -> int:
    """Embed the oldest queued memories (up to size): per owner, the vectors and the removal of
    the jobs they answer commit together, so a worker killed at any point loses no job.
    Returns how many jobs were settled."""
    with db.reading() as conn:
        jobs = vectors.next_jobs(conn, size)
    by_owner: dict[str, list[vectors.Job]] = defaultdict(list)
    for job in jobs:
        by_owner[job.user_id].append(job)
    settled = 0
    for owner, owned in by_owner.items():
        with db.reading() as conn:
            found = documents.documents_by_id(conn, owner, list({j.memory_id for j in owned}))
        raw = _embed(semantic, found)
        dim = len(next(iter(raw.values()))) // 4 if raw else 0
        done = [j.id for j in owned]
        try:
            db.writing(_storer(owner, semantic.model, raw, dim, done))
        except IntegrityError:
            # Another process wrote these vectors first; its own transaction drops the jobs.
            continue
        settled += len(done)
    return settled


def _embed(semantic: Semantic, found: list[documents.Document]) -> dict[str, bytes]:
    """The memories' vectors as float32 bytes. A batch the provider refuses as such (not an
    outage) is sent one memory at a time, and a memory it refuses alone is left without a
    vector (found lexically), so one bad memory cannot block the queue behind it."""
    texts = [embed_text(s.content, s.snippets) for s in found]
    try:
        made = semantic.provider.embed(texts)
        return {s.id: made[i].tobytes() for i, s in enumerate(found)}
    except Exception as exc:
        if getattr(exc, "retryable", True):
            raise  # an outage: the worker backs off and the jobs wait
    out: dict[str, bytes] = {}
    for source, text in zip(found, texts, strict=True):
        try:
            out[source.id] = semantic.provider.embed([text])[0].tobytes()
        except Exception as exc:
            if getattr(exc, "retryable", True):
                raise
            log.warning("the embeddings provider refused memory %s: left lexical", source.id)
    return out


def _storer(
    owner: str, model: str, raw: dict[str, bytes], dim: int, done: list[int]
) -> Callable[[Connection], None]:
    """A write transaction storing one owner's new vectors and dropping their jobs."""
    return lambda conn: vectors.store(conn, owner, model, raw, dim, done)


def _queuer(owner: str, ids: list[str]) -> Callable[[Connection], None]:
    """A write transaction queueing these memories of one owner."""
    return lambda conn: vectors.queue(conn, owner, ids)


def pending(db: Database) -> int:
    """The backlog over every owner (for /readyz)."""
    with db.reading() as conn:
        return vectors.pending(conn)


def queue_missing(db: Database, model: str, owners: list[str] | None = None) -> Iterator[int]:
    """Queue every memory (of these owners, or everyone's) that has no vector of this model;
    yields how many were queued per batch (one transaction each)."""
    if owners is None:
        with db.reading() as conn:
            owners = vectors.owners(conn)
    for owner in owners:
        after = ""
        while True:
            with db.reading() as conn:
                ids = vectors.unembedded(conn, owner, model, after, 500)
            if not ids:
                break
            db.writing(_queuer(owner, ids))
            after = ids[-1]
            yield len(ids)


class Worker:
    """Drains the outbox in a background thread while the app serves."""

    def __init__(self, db: Database, semantic: Semantic) -> None:
        self.db = db
        self.semantic = semantic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="embedding-worker", daemon=True)

    def _run(self) -> None:
        """Drain until stopped; wait for a save's wake-up or the next poll when idle."""
        backoff = POLL_SECONDS
        while not self._stop.is_set():
            try:
                settled = drain_once(self.db, self.semantic)
            except Exception as exc:  # the provider or the database is away: wait, retry
                self.semantic.trouble(
                    f"failed while embedding saved memories ({type(exc).__name__})"
                )
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                self._stop.wait(backoff)
                continue
            backoff = POLL_SECONDS
            if settled:
                self.semantic.recovered()
                continue
            self.semantic.wake.wait(POLL_SECONDS)
            self.semantic.wake.clear()

    def start(self) -> None:
        """Start draining."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current batch (its transaction either commits or rolls back)."""
        self._stop.set()
        self.semantic.wake.set()
        self._thread.join(timeout=30)


@contextmanager
def running(db: Database, semantic: Semantic | None) -> Iterator[None]:
    """A worker draining the outbox for as long as the block runs (nothing when off)."""
    if semantic is None:
        yield
        return
    worker = Worker(db, semantic)
    worker.start()
    try:
        yield
    finally:
        worker.stop()
