"""Engine creation for SQLite and MySQL/MariaDB, and the transaction helpers."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from memory_bank.errors import ServiceUnavailable
from memory_bank.store import batch, checkpoint

log = logging.getLogger("memory_bank.store")
T = TypeVar("T")

# MySQL error codes worth one more try: deadlock, lock wait timeout.
_RETRYABLE_MYSQL = {1213, 1205}


def make_engine(
    url: str, pool_size: int = 10, *, autocommit: bool = False, multi_statements: bool = False
) -> Engine:
    """Create an engine tuned for this project on SQLite or MySQL/MariaDB.

    autocommit=True (MySQL/MariaDB only) is for single-statement reads: each statement is its
    own transaction, so returning a connection sends no ROLLBACK (see make_auth_engine).
    multi_statements=True (MySQL/MariaDB only) is for the pool that sends a save's writes as
    one batch (store.database.Database.saves); no other connection may stack statements.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            # sqlite:///~/... is the user's home (the registry listing's default spells it so).
            path = Path(database).expanduser().resolve()
            path.parent.mkdir(parents=True, exist_ok=True)
            parsed = parsed.set(database=str(path))
        engine = create_engine(
            parsed,
            hide_parameters=True,
            connect_args={"timeout": 30, "check_same_thread": False},
            pool_size=pool_size,
            max_overflow=pool_size,
        )
        _tune_sqlite(engine)
        return engine
    if parsed.get_backend_name() in {"mysql", "mariadb"}:
        if "+" not in parsed.drivername:
            # PyMySQL is the driver we ship; plain mysql:// would look for mysqlclient.
            parsed = parsed.set(drivername="mysql+pymysql")
        query = dict(parsed.query)
        query.setdefault("charset", "utf8mb4")
        batches = multi_statements and parsed.get_driver_name() in batch.DRIVERS
        flags = int(str(query.get("client_flag", 0)))
        if batches:
            # Several statements per round trip for a save (store/batch.py); SQLAlchemy adds
            # FOUND_ROWS to whatever flags the URL gives.
            query["client_flag"] = str(flags | batch.MULTI_STATEMENTS)
        elif flags & batch.MULTI_STATEMENTS:
            # Not even when the URL asks: only the batch pool may stack statements.
            query["client_flag"] = str(flags & ~batch.MULTI_STATEMENTS)
        parsed = parsed.set(query=query)
        modes: dict[str, Any] = {}
        if autocommit:
            modes = {"isolation_level": "AUTOCOMMIT", "skip_autocommit_rollback": True}
        engine = create_engine(
            parsed,
            **modes,
            # A database error's message then names no value a user sent (see http/exceptions).
            hide_parameters=True,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_recycle=1800,
            # Connection.close() already rolls back an unfinished transaction; the pool's own
            # rollback on return would add a round trip after every committed write.
            pool_reset_on_return=None,
            pool_timeout=5,
            # Fail fast when the server is gone, so clients get a 503 instead of a hang.
            connect_args={"connect_timeout": 3, "read_timeout": 30, "write_timeout": 30},
        )
        _ping_when_idle(engine)
        _spider_session(engine)
        if batches and not autocommit:
            batch.skip_commit_after_batch(engine.dialect)
        return engine
    raise ValueError(f"unsupported database URL scheme: {parsed.drivername}")


def make_auth_engine(engine: Engine) -> Engine:
    """The pool for the credential check that runs on every request.

    On MySQL/MariaDB a separate small pool in autocommit mode: the check is one SELECT, and on
    the main pool its implicit transaction would cost a ROLLBACK round trip when the connection
    goes back (on every request; measured in docs/benchmarks.md). It runs on the
    event loop, one at a time per process, so two connections (plus two overflow) are plenty.
    SQLite: the engine itself (its ROLLBACK is a function call).
    """
    if is_sqlite(engine):
        return engine
    return make_engine(engine.url.render_as_string(hide_password=False), 2, autocommit=True)


def dispose_engines(*engines: Engine) -> None:
    """Close the pools of these engines (each once)."""
    for engine in dict.fromkeys(engines):
        engine.dispose()


def _tune_sqlite(engine: Engine) -> None:
    """WAL, foreign keys, a busy timeout, and BEGIN IMMEDIATE for writes."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # We issue BEGIN ourselves (below); pysqlite's implicit transactions are off.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        # The server checkpoints in the background (store/checkpoint.py); a write does it
        # itself only past this larger mark.
        cur.execute(f"PRAGMA wal_autocheckpoint={checkpoint.AUTOCHECKPOINT_PAGES}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A writer takes the write lock up front: upgrading a read lock later can fail with
        # "database is locked" without waiting for the busy timeout.
        immediate = conn.get_execution_options().get("write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


# What a connection to a Spider head (docs/scale-out.md) sets for itself, whatever the head's
# globals say: aggregates computed on the head (with spider_direct_aggregate ON, BM25's
# document frequencies and scores came back different); no group-by handler (it garbled long
# text values read with a join); its backend connections kept in the head's pool
# (spider_conn_recycle_mode = 1: with the default 0 the head connected to the owner's backend
# anew for every transaction and sent its session settings, SET NAMES and the database again,
# most of what a backend received; 2, kept per session, left each session a dead connection
# to a backend that restarted, and its next request there failed); and a batched key read
# sent as one statement over a UNION ALL of the keys (spider_bka_mode = 2) instead of a
# temporary table made, filled, joined and dropped on the backend. A server without Spider
# refuses the statement (unknown variable): nothing to set there.
SPIDER_SESSION = (
    "SET SESSION spider_direct_aggregate = OFF, spider_disable_group_by_handler = ON, "
    "spider_conn_recycle_mode = 1, spider_bka_mode = 2"
)


def _spider_session(engine: Engine) -> None:
    """Give each new connection the Spider session settings above, where the server has them."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(SPIDER_SESSION)
        except Exception as exc:
            if getattr(exc, "args", (None,))[:1] != (1193,):  # unknown system variable
                raise
        finally:
            cursor.close()


# A pooled MySQL connection unused for this long is pinged before use (see _ping_when_idle).
IDLE_PING_SECONDS = 5.0


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection with a ping only when it sat idle, not on every checkout.

    SQLAlchemy's pool_pre_ping costs a round trip per checkout, on every request.
    A connection in steady use is known to be alive; one that sat idle may have been dropped by
    the server or a proxy, so it is pinged and, if dead, replaced before the request sees it. A
    server restart between two busy requests still fails the first one (a 503), and that error
    invalidates the whole pool, so the next request connects afresh.
    """

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:
            # The pool discards this connection and checks out (or opens) another.
            raise DisconnectionError("idle connection is gone") from exc


def is_sqlite(engine: Engine | Connection) -> bool:
    """Whether this engine (or connection) talks to SQLite."""
    return engine.dialect.name == "sqlite"


def placeholder(conn: Connection) -> str:
    """The value mark of this connection's driver, for SQL sent without SQLAlchemy's compiler
    (search, filters: on a busy server its per-query overhead was as large as the query)."""
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


@contextlib.contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A connection for reads; database outages become 503."""
    with translate_outage(), engine.connect() as conn:
        yield conn


def writing(engine: Engine, work: Callable[[Connection], T], attempts: int = 3) -> T:
    """Run work(conn) in one write transaction, retrying deadlocks; outages become 503."""
    for attempt in range(1, attempts + 1):
        try:
            with translate_outage(), engine.connect() as conn:
                conn = conn.execution_options(write=True)
                with conn.begin():
                    return work(conn)
        except OperationalError as exc:
            code = _mysql_code(exc)
            if code in _RETRYABLE_MYSQL and attempt < attempts:
                time.sleep(0.01 * attempt)
                continue
            raise
    raise AssertionError("unreachable")


def _mysql_code(exc: DBAPIError) -> int | None:
    """The MySQL error number behind a DBAPI error, if any."""
    args = getattr(exc.orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


# MySQL client errors that mean "no server": can't connect (2002 from libmariadb, 2003 from
# PyMySQL), gone away, lost connection. And a Spider head's for a backend it cannot reach
# (1429: cannot connect to the foreign data source; 12701: it went away mid-statement): the
# owners on that backend are unavailable until it returns (docs/scale-out.md).
_OUTAGE_MYSQL = {2002, 2003, 2006, 2013, 2055, 1927, 1053, 1429, 12701}


@contextlib.contextmanager
def translate_outage() -> Iterator[None]:
    """Turn 'the database is not there' into a 503 problem; everything else passes."""
    try:
        yield
    except PoolTimeout:
        # Every pooled connection is busy (e.g. the database hangs): shed load, do not queue.
        log.warning("database pool exhausted")
        raise ServiceUnavailable(
            "The database is busy; retry shortly.", headers={"Retry-After": "2"}
        ) from None
    except DBAPIError as exc:
        if exc.connection_invalidated or _mysql_code(exc) in _OUTAGE_MYSQL:
            log.warning("database unavailable: %s", type(exc.orig).__name__)
            raise ServiceUnavailable(
                "The database is unavailable; retry shortly.",
                headers={"Retry-After": "2"},
            ) from None
        if "database is locked" in str(exc.orig):
            log.error("sqlite stayed locked past the busy timeout")
            raise ServiceUnavailable(
                "The database is busy; retry shortly.", headers={"Retry-After": "1"}
            ) from None
        raise
