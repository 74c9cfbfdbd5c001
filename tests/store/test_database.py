"""The Database decides what a write through it does: two over one engine can differ."""

from __future__ import annotations

import sqlalchemy as sa

from memory_bank.search.document import postings_of
from memory_bank.store import batch, database, memory_writes, vectors
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import migrate
from memory_bank.store.owners import Owner
from memory_bank.store.schema import embedding_job, memory
from memory_bank.store.sealing import crypto, data_keys

OWNER = Owner("alice", None, "test")


def _save(conn: sa.Connection, content: str) -> str:
    """Save one memory without contexts; its id."""
    return memory_writes.insert_memory(
        conn, OWNER, content, [], [], postings_of(content, [], [])
    ).id


def test_two_databases_on_one_engine_keep_their_own_policy(database_url):
    engine = make_engine(database_url, 2)
    migrate(engine)
    keyring = data_keys.Keyring(crypto.new_master_key(), 8)
    sealing = Database(engine, keyring=keyring, queue_vectors=True)
    plain = Database(engine)
    try:
        sealed_id = sealing.writing(lambda c: _save(c, "sealed words"))
        plain_id = plain.writing(lambda c: _save(c, "plain words"), batched=True)
        with engine.connect() as conn:
            stored = dict(conn.execute(sa.select(memory.c.id, memory.c.content)).all())
            queued = set(conn.execute(sa.select(embedding_job.c.memory_id)).scalars())
        # Only the sealing Database sealed, and only it queued an embedding.
        assert stored[plain_id] == "plain words"
        assert "sealed words" not in stored[sealed_id]
        assert queued == {sealed_id}
        with sealing.reading() as conn:
            assert store.get_memories(conn, "alice", [sealed_id])[sealed_id].content == (
                "sealed words"
            )
            assert database.of(conn) is sealing and vectors.queueing(conn)
        with plain.reading() as conn:
            assert database.of(conn) is plain and not vectors.queueing(conn)
        # A connection on the bare engine belongs to no Database: it seals and queues nothing.
        with engine.connect() as conn:
            assert database.of(conn) is None and data_keys.keyring_of(conn) is None
    finally:
        sealing.dispose()
        plain.dispose()


def test_only_the_save_pool_batches(database_url):
    engine = make_engine(database_url, 1)
    db = Database(engine)
    try:
        with db.saves.connect() as conn:
            batches = batch.supported(conn)
            assert database.of(conn) is db
        with db.reading() as conn:
            assert not batch.supported(conn)
        # MariaDB's save pool is its own, with the flag; SQLite has one pool and no batches.
        assert batches is (engine.dialect.name != "sqlite")
        assert (db.saves is db.engine) is (engine.dialect.name == "sqlite")
    finally:
        db.dispose()
