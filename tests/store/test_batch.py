"""A save's statements in one round trip on MySQL/MariaDB, all or nothing like any other write."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from contract import row_counts
from databases import wipe
from memory_bank.search import index as search_index
from memory_bank.search.document import postings_of
from memory_bank.store import batch, memory_writes
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.engine import (
    dispose_engines,
    make_auth_engine,
    make_engine,
    reading,
    writing,
)
from memory_bank.store.migrate import migrate
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory, memory_user_stats

OWNER = Owner("alice", None, "test")
CONTEXTS = [
    store.NewContext("Acme raised prices again", "c1", "m1", None),
    store.NewContext("Globex is cheaper", "c1", "m2", "active_conversation"),
]


def _insert(conn, owner, content, tags, contexts, **kwargs):
    """memory_writes.insert_memory with the postings search makes of the memory."""
    index = postings_of(content, tags, [c.snippet for c in contexts])
    return memory_writes.insert_memory(conn, owner, content, tags, contexts, index, **kwargs)


@pytest.fixture
def counted_engine(mariadb_url: str) -> Iterator[tuple[sa.Engine, list[str]]]:
    """A one-connection PyMySQL pool on the test database, and the queries its driver sends."""
    engine = make_engine(mariadb_url, pool_size=1, multi_statements=True)
    migrate(engine)
    # The session's database holds whatever the test before left (others wipe it when they
    # start): these tests count one user's rows, so they start from empty too.
    wipe(mariadb_url)
    sent: list[str] = []
    original = engine.pool._creator  # type: ignore[attr-defined]

    def creator() -> object:
        raw = original()
        query, commit = raw.query, raw.commit

        def counted_query(sql: str, *args: object, **kwargs: object) -> object:
            sent.append(sql.split(None, 1)[0].upper())
            return query(sql, *args, **kwargs)

        def counted_commit() -> object:
            sent.append("COMMIT")
            return commit()

        raw.query, raw.commit = counted_query, counted_commit
        return raw

    engine.pool._creator = creator  # type: ignore[attr-defined]
    engine.pool.dispose()
    with reading(engine) as conn:  # connect now, so set-up queries are not counted
        conn.exec_driver_sql("SELECT 1")
    sent.clear()
    yield engine, sent
    engine.dispose()


def test_only_the_batch_pool_may_send_several_statements_at_once(mariadb_url):
    engine = make_engine(mariadb_url, pool_size=1)
    auth = make_auth_engine(engine)
    # Even a URL that asks for the flag does not get it outside the batch pool.
    asked = make_engine(mariadb_url + "?client_flag=65536", pool_size=1)
    db = Database(engine)
    saves = db.saves
    assert db.saves is saves and saves is not db.engine
    try:
        with saves.connect() as conn:
            assert conn.connection.dbapi_connection.client_flag & batch.MULTI_STATEMENTS
            assert batch.supported(conn)
        for refusing in (engine, auth, asked):
            with refusing.connect() as conn:
                assert not conn.connection.dbapi_connection.client_flag & batch.MULTI_STATEMENTS
                assert not batch.supported(conn)
                # A stacked statement is a syntax error on these connections: an injection
                # bug in a read or the credential check could not append a second one.
                with pytest.raises(sa.exc.ProgrammingError):
                    conn.exec_driver_sql("SELECT 1; SELECT 2")
    finally:
        dispose_engines(auth, asked)
        db.dispose()


def test_sqlite_runs_statements_one_by_one(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'one.db'}")
    assert Database(engine).saves.pool is engine.pool
    with engine.connect() as conn:
        assert not batch.supported(conn)
        with pytest.raises(sa.exc.ProgrammingError):
            conn.exec_driver_sql("SELECT 1; SELECT 2")
    engine.dispose()


def test_a_save_is_one_query_and_a_commit_on_mariadb(counted_engine):
    engine, sent = counted_engine
    # The user's first save also creates the statistics row, inside the same batch.
    writing(engine, lambda c: _insert(c, OWNER, "first", ["t"], CONTEXTS))
    assert sent == ["INSERT", "COMMIT"]
    sent.clear()
    saved = writing(engine, lambda c: _insert(c, OWNER, "We dropped Acme", ["vendors"], CONTEXTS))
    assert sent == ["INSERT", "COMMIT"]
    with reading(engine) as conn:
        stats = conn.execute(sa.select(memory_user_stats)).one()
        assert (stats.user_id, stats.doc_count) == ("alice", 2)
        found = store.get_memories(conn, "alice", [saved.id])[saved.id]
        hits = search_index.search(conn, "alice", "acme", 10)
    assert [c["snippet"] for c in found.contexts] == [c.snippet for c in CONTEXTS]
    assert found.contexts[1]["origin"] == "active_conversation"
    # Both memories' contexts mention Acme; only the second's content does, so it ranks first.
    assert len(hits) == 2 and hits[0][0] == saved.id


def _stats(url: str) -> list[tuple[str, int, int]]:
    """Every user's statistics, read on a connection of a separate engine."""
    other = make_engine(url, pool_size=1)
    with reading(other) as conn:
        rows = conn.execute(sa.select(memory_user_stats).order_by("user_id")).all()
    other.dispose()
    return [(r.user_id, r.doc_count, r.total_len) for r in rows]


def test_a_save_that_ends_its_transaction_commits_in_the_same_round_trip(counted_engine):
    engine, sent = counted_engine
    url = engine.url.render_as_string(hide_password=False)
    carol, dave = Owner("carol", None, "test"), Owner("dave", None, "test")
    before = row_counts(engine)
    sent.clear()

    def save(content: str, owner: Owner) -> store.MemoryRow:
        return writing(engine, lambda c: _insert(c, owner, content, [], CONTEXTS, commit=True))

    first = save("first words", carol)  # creates carol's statistics row
    second = save("second words here", carol)
    other = save("dave's words", dave)
    assert sent == ["INSERT", "INSERT", "INSERT"]  # one round trip each, no COMMIT of its own
    assert row_counts(engine)["memory"] == before["memory"] + 3
    # Committed: another connection sees the rows and the right statistics.
    stats = {user: docs for user, docs, _ in _stats(url)}
    assert (stats["carol"], stats["dave"]) == (2, 1)
    elsewhere = make_engine(url, pool_size=1)
    with reading(elsewhere) as conn:
        found = store.get_memories(conn, "carol", [first.id, second.id, other.id])
    elsewhere.dispose()
    assert set(found) == {first.id, second.id}
    # The skipped commit was that transaction's only: the next one commits as usual.
    sent.clear()
    writing(engine, lambda c: _insert(c, carol, "plain", [], []))
    assert sent == ["INSERT", "COMMIT"]
    assert {user: docs for user, docs, _ in _stats(url)}["carol"] == 3


def test_a_committing_batch_that_fails_saves_nothing_and_the_next_commit_is_sent(
    counted_engine,
):
    engine, sent = counted_engine
    kept = writing(engine, lambda c: _insert(c, OWNER, "kept", [], CONTEXTS))
    before = row_counts(engine)
    with pytest.raises(sa.exc.IntegrityError):
        # Same id: the memory INSERT fails, so neither the rest nor the COMMIT runs.
        writing(
            engine,
            lambda c: _insert(c, OWNER, "lost", [], CONTEXTS, memory_id=kept.id, commit=True),
        )
    assert row_counts(engine) == before
    sent.clear()
    writing(engine, lambda c: _insert(c, OWNER, "after", [], []))
    assert sent == ["INSERT", "COMMIT"]
    assert row_counts(engine)["memory"] == before["memory"] + 1


def test_a_statement_failing_mid_batch_undoes_the_ones_before_it(counted_engine):
    engine, _sent = counted_engine
    writing(engine, lambda c: _insert(c, OWNER, "kept", [], CONTEXTS))
    before = row_counts(engine)
    taken = {"id": "mem_same", "user_id": "alice", "org_id": None, "content": "x", "tags": "[]"}
    taken |= {"source": "t", "scope": "user", "created_at": "2026-12-02 10:00:00"}
    taken |= {"updated_at": "2026-12-02 10:00:00"}
    (again,) = batch.inserts(memory, [taken])
    with pytest.raises(sa.exc.IntegrityError):
        # The first INSERT succeeds inside the transaction, the second breaks the primary key.
        writing(engine, lambda c: batch.execute(c, [again, again]))
    assert row_counts(engine) == before
    # The connection is still good for the next request.
    writing(engine, lambda c: _insert(c, OWNER, "after", [], []))
    with reading(engine) as conn:
        assert store.list_memories(conn, "alice", 5, None)[0].content == "after"


def test_every_statement_of_a_batch_is_seen_by_cursor_listeners(counted_engine):
    engine, _sent = counted_engine
    seen: list[str] = []

    def capture(_conn, _cursor, statement, *_args):
        seen.append(" ".join(statement.split()[:3]))

    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        writing(engine, lambda c: _insert(c, OWNER, "seen", ["t"], CONTEXTS))
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    assert seen[:5] == [
        "INSERT INTO memory",
        "INSERT INTO memory_context",
        "INSERT INTO memory_term",
        "UPDATE memory_user_stats SET",
        "INSERT INTO memory_user_stats",
    ]


def test_a_batch_insert_names_only_table_columns():
    with pytest.raises(KeyError):
        batch.inserts(memory, [{"id": "mem_x", "content; DROP TABLE memory": "x"}])
    (statement,) = batch.inserts(memory, [{"id": "a", "content": "b"}, {"id": "c", "content": "d"}])
    assert statement.sql == "INSERT INTO memory (id, content) VALUES (%s, %s), (%s, %s)"
    assert statement.params == ("a", "b", "c", "d")


def test_inserts_split_many_rows_and_send_none_for_none():
    rows = [{"id": f"m{i}", "content": "x"} for i in range(batch.ROWS_PER_INSERT + 1)]
    first, second = batch.inserts(memory, rows)
    assert len(first.params) == 2 * batch.ROWS_PER_INSERT
    assert second.params == (f"m{batch.ROWS_PER_INSERT}", "x")
    assert batch.inserts(memory, []) == []
