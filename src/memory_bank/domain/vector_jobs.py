"""The embedding outbox: what a save queues, what the worker of each `serve` process drains,
and what `memory-bank reindex --vectors` queues again."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from memory_bank.domain.semantic import Semantic
from memory_bank.models.embeddings import embed_text
from memory_bank.store import documents, vectors
from memory_bank.store.database import Database
from memory_bank.store.sealing import data_keys
from memory_bank.store.sealing.data_keys import StoredDataUnreadable

log = logging.getLogger("memory_bank.embeddings")

BATCH = 32
POLL_SECONDS = 1.0
# Longest wait between tries while the provider is down.
MAX_BACKOFF_SECONDS = 30.0
# How long a claim keeps other workers off its jobs (MEMORY_BANK_EMBEDDINGS_LEASE_SECONDS):
# far longer than a batch takes (the provider's timeout and retries included), and what a
# crashed worker's jobs wait before another worker takes them.
LEASE_SECONDS = 300.0


def drain_once(
    db: Database, semantic: Semantic, size: int = BATCH, lease: float = LEASE_SECONDS
) -> int:
    """Claim the oldest claimable jobs (up to size) and embed them: per owner, the vectors and
    the removal of the jobs they answer commit together, so a worker killed at any point loses
    no job (its claims lapse after the lease). A job whose text cannot be opened is set aside
    with its reason. Returns how many jobs were settled (embedded, dropped or set aside)."""
    taken = db.writing(partial(vectors.claim, size=size, lease_seconds=lease))
    by_owner: dict[str, list[vectors.Job]] = defaultdict(list)
    for job in taken.jobs:
        by_owner[job.user_id].append(job)
    settled = 0
    owners = list(by_owner)
    try:
        while owners:
            settled += _settle(db, semantic, taken.token, owners[0], by_owner[owners[0]])
            owners.pop(0)
    except BaseException:
        # The provider or the database failed: hand back what is not done, so the next try
        # (here or in another process) need not wait out the lease.
        _release(db, taken.token, {owner: by_owner[owner] for owner in owners})
        raise
    return settled


def _settle(
    db: Database, semantic: Semantic, token: str, owner: str, owned: list[vectors.Job]
) -> int:
    """Embed one owner's claimed jobs and store their vectors; set aside the ones that cannot be
    read. How many jobs were settled."""
    found, unreadable = _documents(db, owner, list(dict.fromkeys(j.memory_id for j in owned)))
    aside = [j for j in owned if j.memory_id in unreadable]
    if aside:
        _set_aside(db, token, owner, aside, unreadable)
    rest = [j for j in owned if j.memory_id not in unreadable]
    if not rest:
        return len(aside)
    raw = _embed(semantic, found)
    dim = len(next(iter(raw.values()))) // 4 if raw else 0
    try:
        db.writing(_storer(owner, semantic.model, raw, dim, rest, token))
    except StoredDataUnreadable:
        # The owner's data key stopped opening between the read and the write.
        _set_aside(db, token, owner, rest, {})
    except IntegrityError:
        # Another process wrote a vector of one of these memories at the same moment (a memory
        # queued twice): give the jobs back; the next try replaces that vector.
        _release(db, token, {owner: rest})
        return len(aside)
    return len(owned)


def _documents(
    db: Database, owner: str, ids: list[str]
) -> tuple[list[documents.Document], dict[str, str]]:
    """The owner's memories among these ids, and why any of them cannot be opened (memory id
    -> reason). Only when the batch does not open is each memory tried alone, so one damaged
    memory costs only itself."""
    try:
        with db.reading() as conn:
            return documents.documents_by_id(conn, owner, ids), {}
    except StoredDataUnreadable:
        pass
    with db.reading() as conn:
        try:
            data_keys.sealer(conn, owner)
        except StoredDataUnreadable:
            return [], dict.fromkeys(ids, vectors.DATA_KEY)
        found: list[documents.Document] = []
        unreadable: dict[str, str] = {}
        for mid in ids:
            try:
                found += documents.documents_by_id(conn, owner, [mid])
            except StoredDataUnreadable:
                unreadable[mid] = vectors.UNREADABLE
    return found, unreadable


def _set_aside(
    db: Database, token: str, owner: str, jobs: list[vectors.Job], reasons: dict[str, str]
) -> None:
    """Set these jobs of the owner aside, each with its memory's reason (data_key if none)."""
    by_reason: dict[str, list[int]] = defaultdict(list)
    for job in jobs:
        by_reason[reasons.get(job.memory_id, vectors.DATA_KEY)].append(job.id)
    for reason, ids in by_reason.items():
        log.error(
            "set aside %d embedding job(s) of owner %s (%s): found lexically until "
            "`memory-bank reindex --vectors` tries them again",
            len(ids),
            owner,
            reason,
        )
        db.writing(
            partial(vectors.set_aside, user_id=owner, job_ids=ids, token=token, reason=reason)
        )


def _release(db: Database, token: str, jobs: dict[str, list[vectors.Job]]) -> None:
    """Give back these claimed jobs, if the database lets us (else their lease runs out)."""
    with contextlib.suppress(Exception):
        for owner, owned in jobs.items():
            ids = [j.id for j in owned]
            db.writing(partial(vectors.release, user_id=owner, job_ids=ids, token=token))


def _embed(semantic: Semantic, found: list[documents.Document]) -> dict[str, bytes]:
    """The memories' vectors as float32 bytes (a vector a save's hints made of the same text is
    taken as it is). A batch the provider refuses as such (not an outage) is sent one memory
    at a time, and a memory it refuses alone is left without a
    vector (found lexically), so one bad memory cannot block the queue behind it."""
    texts = [embed_text(s.content, s.snippets) for s in found]
    out: dict[str, bytes] = {}
    # A save's hints may have embedded the very text already (Semantic.made).
    for source, text in zip(found, texts, strict=True):
        kept = semantic.made.take(text)
        if kept is not None:
            out[source.id] = kept.tobytes()
    rest = [(s, t) for s, t in zip(found, texts, strict=True) if s.id not in out]
    if not rest:
        return out
    try:
        made = semantic.provider.embed([t for _, t in rest])
        return out | {s.id: made[i].tobytes() for i, (s, _) in enumerate(rest)}
    except Exception as exc:
        if getattr(exc, "retryable", True):
            raise  # an outage: the worker backs off and the jobs wait
    for source, text in rest:
        try:
            out[source.id] = semantic.provider.embed([text])[0].tobytes()
        except Exception as exc:
            if getattr(exc, "retryable", True):
                raise
            log.warning("the embeddings provider refused memory %s: left lexical", source.id)
    return out


def _storer(
    owner: str, model: str, raw: dict[str, bytes], dim: int, done: list[vectors.Job], token: str
) -> Callable[[Connection], None]:
    """A write transaction storing one owner's new vectors and dropping their jobs, those
    still claimed under this token."""
    return lambda conn: vectors.store(conn, owner, model, raw, dim, done, token)


def _queuer(owner: str, ids: list[str]) -> Callable[[Connection], None]:
    """A write transaction queueing these memories of one owner."""
    return lambda conn: vectors.queue(conn, owner, ids)


def pending(db: Database) -> int:
    """The backlog over every owner, set-aside jobs not counted (for /metrics)."""
    with db.reading() as conn:
        return vectors.pending(conn)


def set_aside(db: Database) -> dict[str, int]:
    """How many jobs are set aside, per reason, over every owner (for /readyz)."""
    with db.reading() as conn:
        return vectors.set_aside_counts(conn)


def queue_missing(db: Database, model: str, owners: list[str] | None = None) -> Iterator[int]:
    """Give these owners' (or everyone's) set-aside jobs another try, then queue every memory
    of theirs that has no vector of this model; yields how many were queued per batch (one
    transaction each)."""
    if owners is None:
        with db.reading() as conn:
            owners = vectors.owners(conn)
    for owner in owners:
        db.writing(partial(vectors.retry_set_aside, user_id=owner))
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

    def __init__(self, db: Database, semantic: Semantic, lease: float = LEASE_SECONDS) -> None:
        self.db = db
        self.semantic = semantic
        self.lease = lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="embedding-worker", daemon=True)

    def _run(self) -> None:
        """Drain until stopped; wait for a save's wake-up or the next poll when idle."""
        backoff = POLL_SECONDS
        while not self._stop.is_set():
            if self.semantic.preparing:
                # Nothing can be embedded yet: the jobs stay queued, and a stop is not kept
                # waiting for the model.
                self.semantic.wake.wait(POLL_SECONDS)
                self.semantic.wake.clear()
                continue
            try:
                settled = drain_once(self.db, self.semantic, lease=self.lease)
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

    def running(self) -> bool:
        """Whether the worker's thread is still alive."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop after the current batch (its transaction either commits or rolls back)."""
        self._stop.set()
        self.semantic.wake.set()
        self._thread.join(timeout=30)


@contextmanager
def running(
    db: Database, semantic: Semantic | None, lease: float = LEASE_SECONDS
) -> Iterator[None]:
    """A worker draining the outbox for as long as the block runs (nothing when off)."""
    if semantic is None:
        yield
        return
    worker = Worker(db, semantic, lease)
    worker.start()
    try:
        yield
    finally:
        worker.stop()
