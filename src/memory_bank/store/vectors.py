"""Owner-scoped statements on memory vectors, the embedding outbox (claimed by one worker at a
time, set aside when it cannot be read) and each owner's vector version; every statement
filters by user_id except the outbox scan and the two counts named as such."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import mysql, sqlite

from memory_bank.ids import utcnow
from memory_bank.store import batch, database
from memory_bank.store.engine import is_sqlite
from memory_bank.store.schema import (
    embedding_job,
    memory,
    memory_vector,
    vector_version,
)
from memory_bank.store.sealing import data_keys

VECTOR_COLUMN = "memory_vector.vector"


def queueing(conn: Connection) -> bool:
    """Whether a save on this connection queues an embedding job: its Database says so
    (semantic search on)."""
    db = database.of(conn)
    return db is not None and db.queue_vectors


@dataclass(frozen=True)
class Job:
    """One queued embedding: a memory of an owner."""

    id: int
    user_id: str
    memory_id: str


def job_row(user_id: str, memory_id: str, now: datetime | None = None) -> dict[str, object]:
    """The outbox row for one memory."""
    return {"user_id": user_id, "memory_id": memory_id, "queued_at": now or utcnow()}


def queue(conn: Connection, user_id: str, memory_ids: Sequence[str]) -> None:
    """Queue these memories of the owner for embedding, in the caller's transaction."""
    batch.run(conn, queue_statements(user_id, memory_ids))


def queue_statements(user_id: str, memory_ids: Sequence[str]) -> list[batch.Statement]:
    """The outbox rows of these memories of the owner (none for no memories)."""
    now = utcnow()
    return batch.inserts(embedding_job, [job_row(user_id, mid, now) for mid in memory_ids])


# Why a job was set aside: its owner's data key does not open in this process (wrapped by
# another master key, or damaged), or the memory's stored text does not open with it.
DATA_KEY = "data_key"
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Claim:
    """Jobs one worker took, under its token, until its lease ends."""

    token: str
    jobs: list[Job]
    until: datetime


def _claimable(conn: Connection, now: datetime, size: int) -> Select[Any]:
    """The worker's cross-owner statement: the head of the outbox, whoever it belongs to,
    neither set aside nor claimed under a lease still running. It acts for no caller;
    everything the worker then reads or writes is per owner."""
    stmt = (
        select(embedding_job.c.id, embedding_job.c.user_id, embedding_job.c.memory_id)
        .where(
            embedding_job.c.set_aside.is_(None),
            or_(embedding_job.c.claimed_until.is_(None), embedding_job.c.claimed_until < now),
        )
        .order_by(embedding_job.c.id)
        .limit(size)
    )
    if is_sqlite(conn):
        # The claim's write transaction (BEGIN IMMEDIATE) already keeps other writers out.
        return stmt
    # Rows another worker is claiming right now are locked by it: skip them rather than wait
    # (MariaDB 10.6+, MySQL 8); an older server waits, then sees them claimed.
    return stmt.with_for_update(skip_locked=skips_locked(conn))


def skips_locked(conn: Connection) -> bool:
    """Whether this MySQL/MariaDB server knows SELECT ... FOR UPDATE SKIP LOCKED."""
    version = conn.dialect.server_version_info or ()
    if getattr(conn.dialect, "is_mariadb", False):
        return tuple(version[:2]) >= (10, 6)
    return tuple(version[:3]) >= (8, 0, 1)


def claim(conn: Connection, size: int, lease_seconds: float) -> Claim:
    """Claim the oldest claimable jobs (up to size) under a new token until the lease ends, in
    the caller's write transaction: no other worker takes them before then."""
    now = utcnow()
    rows = conn.execute(_claimable(conn, now, size)).all()
    jobs = [Job(int(r.id), r.user_id, r.memory_id) for r in rows]
    found = Claim(secrets.token_hex(16), jobs, now + timedelta(seconds=lease_seconds))
    for owner, ids in _by_owner(jobs).items():
        conn.execute(
            update(embedding_job)
            .where(embedding_job.c.user_id == owner, embedding_job.c.id.in_(ids))
            .values(claimed_by=found.token, claimed_until=found.until)
        )
    return found


def _by_owner(jobs: Iterable[Job]) -> dict[str, list[int]]:
    """Job ids per owner."""
    out: dict[str, list[int]] = {}
    for job in jobs:
        out.setdefault(job.user_id, []).append(job.id)
    return out


def _mine(user_id: str, job_ids: Iterable[int], token: str) -> ColumnElement[bool]:
    """These jobs of the owner, while they are still claimed under this token."""
    return and_(
        embedding_job.c.user_id == user_id,
        embedding_job.c.id.in_(list(job_ids)),
        embedding_job.c.claimed_by == token,
    )


def release(conn: Connection, user_id: str, job_ids: Sequence[int], token: str) -> None:
    """Give back these jobs of the owner claimed under this token (the provider failed), so
    a worker may take them again at once instead of after the lease."""
    if job_ids:
        conn.execute(
            update(embedding_job)
            .where(_mine(user_id, job_ids, token))
            .values(claimed_by=None, claimed_until=None)
        )


def set_aside(
    conn: Connection, user_id: str, job_ids: Sequence[int], token: str, reason: str
) -> None:
    """Set aside these jobs of the owner claimed under this token, with the reason: no worker
    takes them again until retry_set_aside(), so they cannot block the queue."""
    if job_ids:
        conn.execute(
            update(embedding_job)
            .where(_mine(user_id, job_ids, token))
            .values(claimed_by=None, claimed_until=None, set_aside=reason)
        )


def retry_set_aside(conn: Connection, user_id: str) -> None:
    """Give the owner's set-aside jobs another try (the operator fixed the cause)."""
    conn.execute(
        update(embedding_job)
        .where(embedding_job.c.user_id == user_id, embedding_job.c.set_aside.is_not(None))
        .values(set_aside=None)
    )


def pending(conn: Connection) -> int:
    """How many memories wait for an embedding, over every owner, set-aside ones not counted
    (for /metrics)."""
    stmt = (
        select(func.count()).select_from(embedding_job).where(embedding_job.c.set_aside.is_(None))
    )
    return int(conn.execute(stmt).scalar() or 0)


def set_aside_counts(conn: Connection) -> dict[str, int]:
    """How many jobs are set aside, per reason, over every owner (for /readyz)."""
    rows = conn.execute(
        select(embedding_job.c.set_aside, func.count())
        .where(embedding_job.c.set_aside.is_not(None))
        .group_by(embedding_job.c.set_aside)
    ).all()
    return {str(r[0]): int(r[1]) for r in rows}


def pending_of(conn: Connection, user_id: str) -> int:
    """How many of the owner's memories wait for an embedding."""
    stmt = select(func.count()).select_from(embedding_job).where(embedding_job.c.user_id == user_id)
    return int(conn.execute(stmt).scalar() or 0)


def store(
    conn: Connection,
    user_id: str,
    model: str,
    vectors: dict[str, bytes],
    dim: int,
    done: Sequence[Job],
    token: str,
) -> None:
    """Write the owner's new vectors (float32 bytes) and drop the jobs they answer, in the
    caller's transaction; the owner's version changes. Only jobs still claimed under this
    token count: one whose lease ran out and another worker took, or that an edit or delete
    dropped meanwhile, gets no vector from here (the text embedded may be stale)."""
    # The memories first, then their jobs, both locked (MySQL/MariaDB): the order an edit or a
    # delete takes them in, so the two wait for each other instead of deadlocking.
    wanted = list({job.memory_id for job in done})
    alive = (
        set(
            conn.execute(
                select(memory.c.id)
                .where(memory.c.user_id == user_id, memory.c.id.in_(wanted))
                .with_for_update()
            ).scalars()
        )
        if wanted
        else set()
    )
    held = (
        conn.execute(
            select(embedding_job.c.id, embedding_job.c.memory_id)
            .where(_mine(user_id, [job.id for job in done], token))
            .with_for_update()
        ).all()
        if done
        else []
    )
    ours = {r.memory_id for r in held}
    vectors = {mid: raw for mid, raw in vectors.items() if mid in alive and mid in ours}
    ids = list(vectors)
    if ids:
        conn.execute(
            delete(memory_vector).where(
                memory_vector.c.user_id == user_id, memory_vector.c.memory_id.in_(ids)
            )
        )
        seal = data_keys.sealer(conn, user_id, create=True)
        now = utcnow()
        conn.execute(
            insert(memory_vector),
            [
                {
                    "user_id": user_id,
                    "memory_id": mid,
                    "model": model,
                    "dim": dim,
                    "vector": seal.seal(VECTOR_COLUMN, mid, base64.b64encode(raw).decode()),
                    "made_at": now,
                }
                for mid, raw in vectors.items()
            ],
        )
    drop_jobs(conn, user_id, [int(r.id) for r in held])
    if ids:
        bump(conn, user_id)


def drop_jobs(conn: Connection, user_id: str, job_ids: Iterable[int]) -> None:
    """Forget these jobs of the owner (done, or their memory is gone)."""
    ids = list(job_ids)
    if ids:
        conn.execute(
            delete(embedding_job).where(
                embedding_job.c.user_id == user_id, embedding_job.c.id.in_(ids)
            )
        )


def remove_statements(dialect: str, user_id: str, memory_id: str) -> list[batch.Statement]:
    """Delete a memory's vector and queued jobs, giving its owner a new vector version when it
    had a vector; batch.run sends them (in the memory's delete or edit transaction, which holds
    the memory's row locked, as store() does before it writes a vector)."""
    # Whether it had a vector is asked by the version's own statement, before the vector goes:
    # not read first (a round trip) nor taken from the DELETE's row count (0 on Spider).
    if dialect == "sqlite":
        head, tail = "", "ON CONFLICT (user_id) DO UPDATE SET version = excluded.version"
    else:
        head, tail = " FROM DUAL", "ON DUPLICATE KEY UPDATE version = VALUES(version)"
    return [
        batch.Statement(
            "DELETE FROM embedding_job WHERE user_id = %s AND memory_id = %s",
            (user_id, memory_id),
        ),
        batch.Statement(
            f"INSERT INTO vector_version (user_id, version) SELECT %s, %s{head} WHERE EXISTS "
            "(SELECT 1 FROM memory_vector WHERE user_id = %s AND memory_id = %s) " + tail,
            (user_id, secrets.token_hex(16), user_id, memory_id),
        ),
        batch.Statement(
            "DELETE FROM memory_vector WHERE user_id = %s AND memory_id = %s",
            (user_id, memory_id),
        ),
    ]


def remove(conn: Connection, user_id: str, memory_id: str) -> None:
    """Delete a memory's vector and queued jobs (remove_statements), now."""
    batch.run(conn, remove_statements(conn.dialect.name, user_id, memory_id))


def changed_statements(conn: Connection, user_id: str, memory_id: str) -> list[batch.Statement]:
    """A memory's text changed (an edit, a restore): drop its vector and, with semantic search
    on, queue a new embedding, in the caller's transaction, so no ranking uses a stale vector;
    batch.run sends them."""
    statements = remove_statements(conn.dialect.name, user_id, memory_id)
    if queueing(conn):
        statements += queue_statements(user_id, [memory_id])
    return statements


def content_changed(conn: Connection, user_id: str, memory_id: str) -> None:
    """A memory's text changed: changed_statements, sent now."""
    batch.run(conn, changed_statements(conn, user_id, memory_id))


def bump(conn: Connection, user_id: str) -> None:
    """Give the owner a new random vector version (cached matrices of theirs go stale)."""
    token = secrets.token_hex(16)
    if is_sqlite(conn):
        stmt = sqlite.insert(vector_version).values(user_id=user_id, version=token)
        conn.execute(
            stmt.on_conflict_do_update(index_elements=["user_id"], set_={"version": token})
        )
    else:
        stmt_m = mysql.insert(vector_version).values(user_id=user_id, version=token)
        conn.execute(stmt_m.on_duplicate_key_update(version=token))


def version(conn: Connection, user_id: str) -> str | None:
    """The owner's current vector version (None: they have no vectors yet)."""
    return conn.execute(
        select(vector_version.c.version).where(vector_version.c.user_id == user_id)
    ).scalar()


@dataclass(frozen=True)
class Loaded:
    """One of an owner's vectors, with what filters read of its memory."""

    memory_id: str
    vector: bytes  # float32
    created_at: datetime
    updated_at: datetime
    source: str


# Rows per read of an owner's vectors: Vitess refuses a result past 10,000 rows by default,
# and a bounded page keeps any one result's memory small.
LOAD_PAGE = 5000


def load(conn: Connection, user_id: str, model: str, page: int = LOAD_PAGE) -> list[Loaded]:
    """The owner's vectors made by this model, by memory id, each with its memory's creation
    and update time and source (a filter of dense ranking reads them from the cached matrix);
    read a page at a time, each after the last id of the one before."""
    v, m = memory_vector.c, memory.c
    seal = data_keys.sealer(conn, user_id)
    found: list[Loaded] = []
    after = ""
    while True:
        rows = conn.execute(
            select(v.memory_id, v.vector, m.created_at, m.updated_at, m.source)
            .select_from(
                memory_vector.join(memory, and_(m.user_id == v.user_id, m.id == v.memory_id))
            )
            .where(v.user_id == user_id, v.model == model, v.memory_id > after)
            .order_by(v.memory_id)
            .limit(page)
        ).all()
        found += [
            Loaded(
                r.memory_id,
                base64.b64decode(seal.open(VECTOR_COLUMN, r.memory_id, r.vector)),
                r.created_at,
                r.updated_at,
                r.source,
            )
            for r in rows
        ]
        if len(rows) < page:
            return found
        after = rows[-1].memory_id


def models(conn: Connection, user_id: str) -> dict[str, int]:
    """How many of the owner's vectors each model made."""
    rows = conn.execute(
        select(memory_vector.c.model, func.count())
        .where(memory_vector.c.user_id == user_id)
        .group_by(memory_vector.c.model)
    ).all()
    return {r[0]: int(r[1]) for r in rows}


def unembedded(conn: Connection, user_id: str, model: str, after: str, size: int) -> list[str]:
    """The owner's next memory ids (by id, after `after`) with no vector of this model and no
    queued job: what a reindex queues."""
    vec = and_(
        memory_vector.c.user_id == memory.c.user_id,
        memory_vector.c.memory_id == memory.c.id,
        memory_vector.c.model == model,
    )
    queued = and_(
        embedding_job.c.user_id == memory.c.user_id, embedding_job.c.memory_id == memory.c.id
    )
    rows = conn.execute(
        select(memory.c.id)
        .where(
            memory.c.user_id == user_id,
            memory.c.id > after,
            ~exists().where(vec),
            ~exists().where(queued),
        )
        .order_by(memory.c.id)
        .limit(size)
    ).scalars()
    return list(rows)


def owners(conn: Connection) -> list[str]:
    """Every owner with memories: a cross-owner read for the operator's reindex."""
    return sorted(conn.execute(select(memory.c.user_id).distinct()).scalars())
