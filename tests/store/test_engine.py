"""The MySQL/MariaDB pool: a connection is pinged only after sitting idle, and a dead one is
replaced before a request sees it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from memory_bank.errors import ServiceUnavailable
from memory_bank.store import engine as engine_module
from memory_bank.store.engine import make_engine, reading, writing


@pytest.fixture
def mariadb_engine(mariadb_url: str) -> Iterator[sa.Engine]:
    """A one-connection pool on the test database, so every checkout gets the same connection."""
    engine = make_engine(mariadb_url, pool_size=1)
    yield engine
    engine.dispose()


def _server_side_id(engine: sa.Engine) -> int:
    """The server's id of the pooled connection (and return it to the pool)."""
    with reading(engine) as conn:
        return int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())


def _kill(mariadb_url: str, connection_id: int) -> None:
    """Drop a connection from the server side, as a restart or an idle timeout would."""
    admin = sa.create_engine(mariadb_url, poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"KILL CONNECTION {connection_id}")
    admin.dispose()


def _pings(engine: sa.Engine) -> list[int]:
    """Count the pings the pool sends from now on (COM_PING, seen at the driver)."""
    seen: list[int] = []
    original = engine.pool._creator  # type: ignore[attr-defined]

    def creator() -> object:
        raw = original()
        ping = raw.ping

        def counted(*args: object, **kwargs: object) -> object:
            seen.append(1)
            return ping(*args, **kwargs)

        raw.ping = counted
        return raw

    engine.pool._creator = creator  # type: ignore[attr-defined]
    engine.pool.dispose()
    return seen


def test_a_connection_in_steady_use_is_not_pinged(mariadb_engine):
    pings = _pings(mariadb_engine)
    first = _server_side_id(mariadb_engine)
    for _ in range(5):
        assert _server_side_id(mariadb_engine) == first
    assert pings == []


def test_an_idle_connection_that_died_is_replaced_unseen(mariadb_engine, mariadb_url, monkeypatch):
    pings = _pings(mariadb_engine)
    first = _server_side_id(mariadb_engine)
    _kill(mariadb_url, first)
    # As if it had sat idle past the threshold.
    monkeypatch.setattr(engine_module, "IDLE_PING_SECONDS", 0.0)
    second = _server_side_id(mariadb_engine)
    assert second != first
    assert pings == [1]


def test_a_connection_killed_while_busy_fails_once_then_the_pool_recovers(
    mariadb_engine, mariadb_url
):
    first = _server_side_id(mariadb_engine)
    _kill(mariadb_url, first)
    # Not idle, so not pinged: the request that finds it dead gets a 503 (clients retry) ...
    with pytest.raises(ServiceUnavailable), reading(mariadb_engine) as conn:
        conn.exec_driver_sql("SELECT 1")
    # ... and the pool was invalidated, so the next request connects afresh.
    assert _server_side_id(mariadb_engine) != first


def test_the_auth_pool_reads_without_a_transaction_to_roll_back(mariadb_url):
    main = make_engine(mariadb_url, pool_size=1)
    auth = engine_module.make_auth_engine(main)
    assert auth is not main
    sent: list[str] = []
    with auth.connect() as conn:
        raw = conn.connection.dbapi_connection
        rollback, query = raw.rollback, raw.query
        raw.rollback = lambda: sent.append("ROLLBACK") or rollback()
        raw.query = lambda sql, *a, **k: sent.append(sql.split()[0].upper()) or query(sql, *a, **k)
    writing(main, lambda c: c.exec_driver_sql("CREATE TABLE IF NOT EXISTS auth_probe (v INT)"))
    writing(main, lambda c: c.exec_driver_sql("DELETE FROM auth_probe"))
    for expected in (1, 2):
        # A commit by another connection is seen at once: no snapshot is held between checks
        # (a revoked key is refused on the very next request).
        writing(main, lambda c: c.exec_driver_sql("INSERT INTO auth_probe VALUES (1)"))
        with reading(auth) as conn:
            assert conn.exec_driver_sql("SELECT COUNT(*) FROM auth_probe").scalar_one() == expected
    assert sent == ["SELECT", "SELECT"]
    writing(main, lambda c: c.exec_driver_sql("DROP TABLE auth_probe"))
    engine_module.dispose_engines(main, auth, main)


def test_sqlite_checks_credentials_on_its_one_engine(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'auth.db'}")
    assert engine_module.make_auth_engine(engine) is engine
    engine_module.dispose_engines(engine, engine)


def test_a_sqlite_path_under_home_is_the_users_home(tmp_path, monkeypatch):
    # The registry listing's default database is sqlite:///~/...: "~" must not be a directory.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    engine = make_engine("sqlite:///~/.local/share/memory-bank/memory-bank.db")
    with engine.connect():
        pass
    engine.dispose()
    assert (tmp_path / ".local/share/memory-bank/memory-bank.db").is_file()
    assert not (tmp_path / "~").exists()
