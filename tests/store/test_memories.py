"""Owner-scoped storage: a memory and its contexts are written and deleted as one."""

from __future__ import annotations

from datetime import datetime

import pytest
import sqlalchemy as sa

from contract import row_counts
from memory_bank.search import index as search_index
from memory_bank.search.document import postings_of
from memory_bank.store import memories as store
from memory_bank.store import memory_writes
from memory_bank.store.engine import reading, writing
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory, memory_context

OWNER = Owner("alice", None, "test")


def _insert(conn, owner, content, tags, contexts, **kwargs):
    """memory_writes.insert_memory with the postings search makes of the memory."""
    index = postings_of(content, tags, [c.snippet for c in contexts])
    return memory_writes.insert_memory(conn, owner, content, tags, contexts, index, **kwargs)


def _ctx(snippet, **kw):
    return store.NewContext(
        snippet=snippet,
        conversation_id=kw.get("conversation_id"),
        message_id=kw.get("message_id"),
        origin=kw.get("origin"),
    )


def test_a_failing_insert_leaves_no_memory_behind(service):
    # A real constraint violation: the second save reuses the first one's id (primary key), on
    # both engines. (A failure after the memory row was written: test_a_failing_index_write_...
    # below, and on MySQL/MariaDB, tests/store/test_batch.py.)
    kept = writing(service.engine, lambda c: _insert(c, OWNER, "kept", ["t"], [_ctx("a")]))
    before = row_counts(service.engine)
    with pytest.raises(sa.exc.IntegrityError):
        writing(
            service.engine,
            lambda c: _insert(c, OWNER, "lost", ["t"], [_ctx("ok"), _ctx("b")], memory_id=kept.id),
        )
    assert row_counts(service.engine) == before
    with reading(service.engine) as conn:
        page = store.list_memories(conn, "alice", 10, None)
        assert [m.content for m in page] == ["kept"]
        assert [mid for mid, _ in search_index.search(conn, "alice", "lost", 10)] == []


def test_a_failing_index_write_leaves_no_memory_behind(service):
    def fail_after_contexts(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("INSERT INTO MEMORY_TERM"):
            raise sa.exc.OperationalError(statement, {}, Exception("disk full"))

    before = row_counts(service.engine)
    sa.event.listen(service.engine, "before_cursor_execute", fail_after_contexts)
    try:
        with pytest.raises(sa.exc.OperationalError):
            writing(
                service.engine,
                lambda c: _insert(c, OWNER, "indexed", [], [_ctx("a"), _ctx("b")]),
            )
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", fail_after_contexts)
    assert row_counts(service.engine) == before


def test_delete_removes_contexts_postings_and_stats(service):
    row = writing(
        service.engine,
        lambda c: _insert(c, OWNER, "apples and pears", ["fruit"], [_ctx("x")] * 3),
    )
    other = Owner("bob", None, "test")
    writing(service.engine, lambda c: _insert(c, other, "bob's apples", [], [_ctx("y")]))
    assert writing(service.engine, lambda c: memory_writes.delete_memory(c, "bob", row.id)) is False
    assert (
        writing(service.engine, lambda c: memory_writes.delete_memory(c, "alice", row.id)) is True
    )
    counts = row_counts(service.engine)
    assert counts["memory"] == 1 and counts["memory_context"] == 1
    with reading(service.engine) as conn:
        left = conn.execute(
            sa.select(sa.func.count())
            .select_from(memory_context)
            .where(memory_context.c.memory_id == row.id)
        ).scalar()
        assert left == 0
        assert search_index.search(conn, "alice", "apples", 10) == []
        assert len(search_index.search(conn, "bob", "apples", 10)) == 1


def test_a_delete_takes_every_child_row_along_without_foreign_keys(service):
    # No foreign key ties an owner table to another (they may live on other servers): the
    # delete itself removes the contexts, postings, revisions, vector and queued jobs.
    from memory_bank.store import vectors
    from memory_bank.store.schema import metadata

    row = writing(service.engine, lambda c: _insert(c, OWNER, "cascade", ["t"], [_ctx("x")]))
    writing(service.engine, lambda c: vectors.queue(c, "alice", [row.id]))
    vector = {"user_id": "alice", "memory_id": row.id, "model": "m", "dim": 2, "vector": "AAAA"}
    made = {**vector, "made_at": row.created_at}
    writing(service.engine, lambda c: c.execute(metadata.tables["memory_vector"].insert(), made))
    tables = ("memory", "memory_context", "memory_term", "memory_vector", "embedding_job")

    def counts():
        with reading(service.engine) as conn:
            return [
                conn.scalar(sa.select(sa.func.count()).select_from(metadata.tables[t]))
                for t in tables
            ]

    assert all(counts())
    writing(service.engine, lambda c: memory_writes.delete_memory(c, "alice", row.id))
    assert counts() == [0] * len(tables)
    assert not [fk for t in metadata.sorted_tables for fk in t.foreign_keys]
    inspector = sa.inspect(service.engine)
    assert not [n for n in inspector.get_table_names() if inspector.get_foreign_keys(n)]


def test_reads_are_owner_scoped(service):
    row = writing(service.engine, lambda c: _insert(c, OWNER, "mine", [], []))
    with reading(service.engine) as conn:
        assert store.get_memories(conn, "bob", [row.id]) == {}
        assert store.list_memories(conn, "bob", 10, None) == []
        assert set(store.get_memories(conn, "alice", [row.id])) == {row.id}


def test_fetching_by_id_reads_only_those_memories_contexts_after_the_tables_grew(fresh_mariadb):
    # MariaDB plans with what it learnt of a table when it opened it: open the tables empty,
    # grow them, and a join of memory to its contexts was planned on the user_id prefix of the
    # contexts' primary key, reading every context of the user per memory fetched.
    engine, n = fresh_mariadb, 1500
    with reading(engine) as conn:
        assert store.get_memories(conn, "alice", ["mem_none"]) == {}
    now = datetime(2026, 1, 1)
    ids = [f"mem_{i:026d}" for i in range(n)]
    with engine.begin() as conn:
        conn.execute(
            sa.insert(memory),
            [
                {"id": i, "user_id": "alice", "content": "x", "tags": "[]", "source": "test",
                 "scope": "private", "created_at": now, "updated_at": now}
                for i in ids
            ],
        )  # fmt: skip
        conn.execute(
            sa.insert(memory_context),
            [
                {"id": f"ctx_{k}{i[4:]}", "memory_id": i, "user_id": "alice", "position": k,
                 "snippet": f"context {k}", "created_at": now}
                for i in ids for k in (0, 1)
            ],
        )  # fmt: skip
    wanted = ids[::150]
    with reading(engine) as conn:
        before = _rows_read(conn)
        found = store.get_memories(conn, "alice", wanted)
        read = _rows_read(conn) - before
    assert sorted(found) == sorted(wanted)
    assert all(len(m.contexts) == 2 for m in found.values())
    # The memories and their contexts, with room for the counters' own overhead; the plan on
    # the prefix read 2 x 1,500 contexts for each of the 10 memories.
    assert read < 200, read


def _rows_read(conn: sa.Connection) -> int:
    """Rows this session's handlers have read so far (every Handler_read_* counter)."""
    rows = conn.exec_driver_sql("SHOW SESSION STATUS LIKE 'Handler_read%%'").all()
    return sum(int(value) for _, value in rows)
