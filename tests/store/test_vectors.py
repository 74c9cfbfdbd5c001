"""The outbox's statements on both engines: a claim takes a job once until its lease ends, a
store writes only what its claim still holds, and a set-aside job waits for a retry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from memory_bank.store import vectors
from memory_bank.store.engine import writing
from memory_bank.store.schema import embedding_job, memory_vector

LEASE = 300.0


@pytest.fixture
def queued(service: Any) -> tuple[Any, list[str]]:
    """A migrated database with four of alice's memories, each with one queued job."""
    headers = service.auth("alice")
    ids = []
    for i in range(4):
        r = service.client.post("/v1/memory", json={"content": f"note {i}"}, headers=headers)
        assert r.status_code == 201
        ids.append(r.json()["memory"]["id"])
    writing(service.engine, lambda conn: vectors.queue(conn, "alice", ids))
    return service, ids


def claim(engine: sa.Engine, size: int = 10, lease: float = LEASE) -> vectors.Claim:
    """Claim in a write transaction, as the worker does."""
    return writing(engine, lambda conn: vectors.claim(conn, size, lease))


def raw(value: float) -> bytes:
    """A 4-dimension float32 vector as bytes."""
    return np.full(4, value, dtype=np.float32).tobytes()


def store(engine: sa.Engine, taken: vectors.Claim) -> None:
    """Store a vector for every job of the claim (all alice's)."""
    made = {job.memory_id: raw(1.0) for job in taken.jobs}
    writing(
        engine,
        lambda conn: vectors.store(conn, "alice", "m", made, 4, taken.jobs, taken.token),
    )


def jobs(engine: sa.Engine) -> list[tuple[Any, ...]]:
    """Every outbox row: (memory id, claimed_by, set_aside), by id."""
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                sa.select(
                    embedding_job.c.memory_id, embedding_job.c.claimed_by, embedding_job.c.set_aside
                ).order_by(embedding_job.c.id)
            )
        ]


def vectored(engine: sa.Engine) -> set[str]:
    """Memory ids with a vector."""
    with engine.connect() as conn:
        return set(conn.execute(sa.select(memory_vector.c.memory_id)).scalars())


def test_a_claimed_job_is_not_claimed_again_while_its_lease_runs(queued):
    service, ids = queued
    first = claim(service.engine, size=3)
    second = claim(service.engine, size=3)
    assert [j.memory_id for j in first.jobs] == ids[:3]
    assert [j.memory_id for j in second.jobs] == ids[3:]
    assert first.token != second.token
    assert claim(service.engine).jobs == []
    assert [row[1] for row in jobs(service.engine)] == [first.token] * 3 + [second.token]


def test_a_claim_whose_lease_is_over_is_taken_again(queued):
    service, ids = queued
    lapsed = claim(service.engine, size=2, lease=-1)  # a crashed worker's, already over
    retaken = claim(service.engine, size=10)
    assert [j.memory_id for j in retaken.jobs] == ids
    assert {j.id for j in lapsed.jobs} <= {j.id for j in retaken.jobs}


def test_a_store_under_a_lapsed_claim_writes_nothing_and_leaves_the_jobs(queued):
    service, ids = queued
    lapsed = claim(service.engine, size=2, lease=-1)
    retaken = claim(service.engine, size=2)
    assert [j.id for j in retaken.jobs] == [j.id for j in lapsed.jobs]
    store(service.engine, lapsed)  # the slow worker comes back after its lease
    assert vectored(service.engine) == set()
    assert [row[0] for row in jobs(service.engine)] == ids
    store(service.engine, retaken)
    assert vectored(service.engine) == set(ids[:2])
    assert [row[0] for row in jobs(service.engine)] == ids[2:]


def test_an_edit_during_the_claim_keeps_the_stale_vector_out(queued):
    service, ids = queued
    taken = claim(service.engine, size=1)
    # The memory's text changes while its old text is being embedded: its job is replaced.
    writing(service.engine, lambda conn: vectors.remove(conn, "alice", ids[0]))
    writing(service.engine, lambda conn: vectors.queue(conn, "alice", [ids[0]]))
    store(service.engine, taken)
    assert vectored(service.engine) == set()
    assert [row[0] for row in jobs(service.engine)].count(ids[0]) == 1


def test_released_jobs_are_claimable_at_once(queued):
    service, ids = queued
    taken = claim(service.engine, size=2)
    other = claim(service.engine, size=2)
    owned = [j.id for j in taken.jobs]
    # Another claim's token releases nothing.
    writing(service.engine, lambda conn: vectors.release(conn, "alice", owned, other.token))
    assert claim(service.engine).jobs == []
    writing(service.engine, lambda conn: vectors.release(conn, "alice", owned, taken.token))
    assert [j.memory_id for j in claim(service.engine).jobs] == ids[:2]


def test_set_aside_jobs_are_never_claimed_counted_by_reason_and_retried(queued):
    service, ids = queued
    taken = claim(service.engine, size=3)
    key_ids = [j.id for j in taken.jobs[:2]]
    text_ids = [j.id for j in taken.jobs[2:]]
    writing(
        service.engine,
        lambda conn: vectors.set_aside(conn, "alice", key_ids, taken.token, vectors.DATA_KEY),
    )
    writing(
        service.engine,
        lambda conn: vectors.set_aside(conn, "alice", text_ids, taken.token, vectors.UNREADABLE),
    )
    with service.engine.connect() as conn:
        assert vectors.set_aside_counts(conn) == {"data_key": 2, "unreadable": 1}
        assert vectors.pending(conn) == 1
        assert vectors.pending_of(conn, "alice") == 4
    # The head of the queue is set aside: the claim takes the job behind it.
    assert [j.memory_id for j in claim(service.engine, size=10, lease=-1).jobs] == ids[3:]
    writing(service.engine, lambda conn: vectors.retry_set_aside(conn, "alice"))
    with service.engine.connect() as conn:
        assert vectors.set_aside_counts(conn) == {}
    assert [j.memory_id for j in claim(service.engine, size=10).jobs] == ids


def test_a_set_aside_job_goes_with_its_memory(queued):
    service, ids = queued
    taken = claim(service.engine, size=1)
    ids_ = [taken.jobs[0].id]
    writing(
        service.engine,
        lambda conn: vectors.set_aside(conn, "alice", ids_, taken.token, vectors.DATA_KEY),
    )
    r = service.client.delete(f"/v1/memory/{ids[0]}", headers=service.auth("alice"))
    assert r.status_code == 204
    with service.engine.connect() as conn:
        assert vectors.set_aside_counts(conn) == {}


def test_on_mariadb_a_claim_skips_the_rows_another_claim_is_taking(queued, database_url):
    from memory_bank.store.engine import is_sqlite, make_engine

    service, ids = queued
    if is_sqlite(service.engine):
        pytest.skip("SQLite's claims take the write lock (BEGIN IMMEDIATE): one at a time")
    engine = make_engine(database_url)
    try:
        with engine.connect() as first_conn:
            first_tx = first_conn.begin()
            first = vectors.claim(first_conn, 2, LEASE)  # not committed: its rows stay locked
            with engine.connect() as second_conn, second_conn.begin():
                # Waiting on the first claim's rows would fail this test within a second.
                second_conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 1")
                second = vectors.claim(second_conn, 10, LEASE)
            first_tx.commit()
    finally:
        engine.dispose()
    assert [j.memory_id for j in first.jobs] == ids[:2]
    assert [j.memory_id for j in second.jobs] == ids[2:]
    assert [row[1] for row in jobs(service.engine)] == [first.token] * 2 + [second.token] * 2


@pytest.mark.parametrize("dialect", ["mariadb", "mysql"])
def test_skip_locked_is_asked_of_servers_that_know_it(dialect):
    from sqlalchemy.dialects import mysql

    def conn_of(version: tuple[int, ...]) -> Any:
        d = mysql.dialect()
        d.server_version_info = version
        d.is_mariadb = dialect == "mariadb"
        return type("Conn", (), {"dialect": d})()

    new, old = ((10, 6, 4), (10, 5, 9)) if dialect == "mariadb" else ((8, 0, 1), (5, 7, 44))
    assert vectors.skips_locked(conn_of(new))
    assert not vectors.skips_locked(conn_of(old))
