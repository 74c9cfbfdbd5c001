"""Owner-scoped storage: a memory and its contexts are written and deleted as one."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from contract import row_counts
from memory_bank.search import index as search_index
from memory_bank.search.document import postings_of
from memory_bank.store import memories as store
from memory_bank.store.engine import reading, writing
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory_context

OWNER = Owner("alice", None, "test")


def _insert(conn, owner, content, tags, contexts, **kwargs):
    """store.insert_memory with the postings search makes of the memory."""
    index = postings_of(content, tags, [c.snippet for c in contexts])
    return store.insert_memory(conn, owner, content, tags, contexts, index, **kwargs)


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
    assert writing(service.engine, lambda c: store.delete_memory(c, "bob", row.id)) is False
    assert writing(service.engine, lambda c: store.delete_memory(c, "alice", row.id)) is True
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


def test_foreign_key_cascade_removes_contexts(service):
    # Even a raw delete of the memory row (no helper) takes its contexts along.
    row = writing(service.engine, lambda c: _insert(c, OWNER, "cascade", [], [_ctx("x")]))
    from memory_bank.store.schema import memory, memory_term

    def raw_delete(conn):
        conn.execute(memory_term.delete().where(memory_term.c.memory_id == row.id))
        conn.execute(memory.delete().where(memory.c.id == row.id))

    writing(service.engine, raw_delete)
    assert row_counts(service.engine)["memory_context"] == 0


def test_reads_are_owner_scoped(service):
    row = writing(service.engine, lambda c: _insert(c, OWNER, "mine", [], []))
    with reading(service.engine) as conn:
        assert store.get_memories(conn, "bob", [row.id]) == {}
        assert store.list_memories(conn, "bob", 10, None) == []
        assert set(store.get_memories(conn, "alice", [row.id])) == {row.id}
