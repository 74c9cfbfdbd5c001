"""Owner-scoped statements on memory vectors, the embedding outbox and each owner's vector
version; every statement filters by user_id except the outbox scan named as such."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, exists, func, insert, select
from sqlalchemy.dialects import mysql, sqlite

from memory_bank.ids import utcnow
from memory_bank.store import batch, data_keys, database
from memory_bank.store.engine import is_sqlite
from memory_bank.store.schema import (
    embedding_job,
    memory,
    memory_vector,
    vector_version,
)

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
    if memory_ids:
        now = utcnow()
        conn.execute(insert(embedding_job), [job_row(user_id, mid, now) for mid in memory_ids])


def queue_statement(user_id: str, memory_id: str) -> batch.Statement:
    """queue() of one memory as a statement of a save's batch (MySQL/MariaDB)."""
    return batch.insert(embedding_job, [job_row(user_id, memory_id)])


# The worker's one cross-owner statement: the head of the outbox, whoever it belongs to. It acts
# for no caller; everything it then reads or writes is per owner.
OUTBOX_SCAN = (
    select(embedding_job.c.id, embedding_job.c.user_id, embedding_job.c.memory_id)
    .order_by(embedding_job.c.id)
    .limit(1)
)


def next_jobs(conn: Connection, size: int) -> list[Job]:
    """The oldest queued jobs, up to size (the outbox scan)."""
    rows = conn.execute(OUTBOX_SCAN.limit(size)).all()
    return [Job(int(r.id), r.user_id, r.memory_id) for r in rows]


def pending(conn: Connection) -> int:
    """How many memories wait for an embedding, over every owner (for /readyz)."""
    return int(conn.execute(select(func.count()).select_from(embedding_job)).scalar() or 0)


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
    done: Sequence[int],
) -> None:
    """Write the owner's new vectors (float32 bytes) and drop the jobs they answer, in the
    caller's transaction; the owner's version changes."""
    # Only memories still there (locked, MySQL/MariaDB): one deleted since the job was read
    # gets no vector, and its delete, which dropped its jobs, waits for or follows this.
    alive = (
        set(
            conn.execute(
                select(memory.c.id)
                .where(memory.c.user_id == user_id, memory.c.id.in_(list(vectors)))
                .with_for_update()
            ).scalars()
        )
        if vectors
        else set()
    )
    vectors = {mid: raw for mid, raw in vectors.items() if mid in alive}
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
    drop_jobs(conn, user_id, done)
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


def remove(conn: Connection, user_id: str, memory_id: str) -> None:
    """Delete a memory's vector and queued jobs (the memory's delete transaction)."""
    conn.execute(
        delete(embedding_job).where(
            embedding_job.c.user_id == user_id, embedding_job.c.memory_id == memory_id
        )
    )
    gone = conn.execute(
        delete(memory_vector).where(
            memory_vector.c.user_id == user_id, memory_vector.c.memory_id == memory_id
        )
    )
    if gone.rowcount:
        bump(conn, user_id)


def content_changed(conn: Connection, user_id: str, memory_id: str) -> None:
    """A memory's text changed (an edit, a restore): drop its vector and, with semantic search
    on, queue a new embedding, in the caller's transaction, so no ranking uses a stale vector."""
    remove(conn, user_id, memory_id)
    if queueing(conn):
        queue(conn, user_id, [memory_id])


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


def load(conn: Connection, user_id: str, model: str) -> list[tuple[str, bytes]]:
    """The owner's vectors made by this model, as (memory id, float32 bytes), by id."""
    rows = conn.execute(
        select(memory_vector.c.memory_id, memory_vector.c.vector)
        .where(memory_vector.c.user_id == user_id, memory_vector.c.model == model)
        .order_by(memory_vector.c.memory_id)
    ).all()
    seal = data_keys.sealer(conn, user_id)
    return [
        (r.memory_id, base64.b64decode(seal.open(VECTOR_COLUMN, r.memory_id, r.vector)))
        for r in rows
    ]


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
