"""Reads straight through the driver's cursor on MySQL/MariaDB: SQLAlchemy's answers, errors
and listeners, and no snapshot left open."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from drivers import require_mysqlclient
from memory_bank.store import direct_read
from memory_bank.store.engine import (
    dispose_engines,
    make_auth_engine,
    make_engine,
    reading,
    writing,
)
from memory_bank.store.migrate import migrate
from memory_bank.store.schema import memory


def _key_statement() -> sa.Select:
    from memory_bank.store.api_keys import _FIND_WITH_SWITCHES

    return _FIND_WITH_SWITCHES


@pytest.mark.parametrize("driver", ["pymysql", "mysqldb"])
def test_the_key_lookup_reads_through_the_driver_with_sqlalchemys_answer(mariadb_url, driver):
    from memory_bank.store import api_keys, user_settings

    if driver == "mysqldb":
        require_mysqlclient()

    url = sa.engine.make_url(mariadb_url).set(drivername=f"mysql+{driver}")
    engine = make_engine(url.render_as_string(hide_password=False), pool_size=1)
    migrate(engine)
    auth = make_auth_engine(engine)
    secret, record = writing(engine, lambda c: api_keys.create_key(c, "alice", ("mcp:read",), "t"))
    writing(engine, lambda c: user_settings.change(c, "alice", review_required=True))
    prefix = secret[len(api_keys.KEY_PREFIX) :][:12]
    with reading(auth) as conn:
        raw = direct_read.fetch_one(conn, _key_statement(), {"prefix": prefix})
        through_sqlalchemy = dict(conn.execute(_key_statement(), {"prefix": prefix}).one()._mapping)
        missing = direct_read.fetch_one(conn, _key_statement(), {"prefix": "no-such-key"})
        found = api_keys.find_key_and_settings(conn, secret)
    dispose_engines(engine, auth)
    assert raw == through_sqlalchemy
    assert raw["user_id"] == "alice" and bool(raw["review_required"]) is True
    assert missing is None
    assert found is not None and found[0] == record and found[1].review_required is True


@pytest.mark.parametrize("autocommit", [True, False])
def test_a_driver_read_never_leaves_a_stale_snapshot_behind(mariadb_url, autocommit):
    # On a connection that is not in autocommit mode a bare SELECT would open a transaction
    # nobody ends: the pooled connection would go on reading that snapshot, and a key made
    # later would stay unknown (this once made a fresh key fail on /mcp with 401).
    from memory_bank.store import api_keys

    engine = make_engine(mariadb_url, pool_size=1)
    migrate(engine)
    reader = make_auth_engine(engine) if autocommit else engine
    other = make_engine(mariadb_url, pool_size=1)
    try:
        secret, _ = writing(engine, lambda c: api_keys.create_key(c, "dora", ("mcp:read",), "t"))
        with reading(reader) as conn:
            assert api_keys.find_key(conn, secret) is not None
        later, _ = writing(other, lambda c: api_keys.create_key(c, "dora", ("mcp:read",), "t"))
        with reading(reader) as conn:  # the same pooled connection as before
            assert api_keys.find_key(conn, later) is not None
    finally:
        # A transaction left open would hold its metadata locks, and the session's DROP
        # DATABASE would then wait forever instead of reporting this test's failure.
        dispose_engines(engine, reader, other)


def test_a_driver_read_is_seen_by_listeners_and_fails_like_sqlalchemy(mariadb_url):
    engine = make_engine(mariadb_url, pool_size=1)
    migrate(engine)
    auth = make_auth_engine(engine)
    seen: list[str] = []

    def capture(_conn, _cursor, statement, *_args):
        seen.append(statement.split()[0])

    sa.event.listen(auth, "before_cursor_execute", capture)
    try:
        with reading(auth) as conn:
            assert direct_read.fetch_one(conn, _key_statement(), {"prefix": "x"}) is None
    finally:
        sa.event.remove(auth, "before_cursor_execute", capture)
    assert seen == ["SELECT"]
    broken = sa.select(sa.literal_column("no_such_column")).select_from(memory)
    with reading(auth) as conn, pytest.raises(sa.exc.DBAPIError) as through_sqlalchemy:
        conn.execute(broken)
    with reading(auth) as conn, pytest.raises(through_sqlalchemy.type) as raw:
        direct_read.fetch_one(conn, broken, {})
    assert raw.value.orig.args == through_sqlalchemy.value.orig.args
    with reading(auth) as conn:  # the pool is still good
        assert direct_read.fetch_one(conn, _key_statement(), {"prefix": "x"}) is None
    dispose_engines(engine, auth)
