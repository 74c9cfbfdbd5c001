"""The one write path: a write is a list of statements, sent in one round trip (COMMIT
included) where the connection batches (MySQL/MariaDB's save pool), else one by one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, DateTime, Table
from sqlalchemy.pool import PoolProxiedConnection

from memory_bank.store import direct_read
from memory_bank.store.direct_read import reraise

# The client flag that lets one query carry several statements (the same bit in PyMySQL and
# mysqlclient). make_engine(multi_statements=True) sets it, for the pool that runs saves only
# (store.database.Database.saves): every other connection refuses a stacked statement, so a
# future injection bug anywhere else cannot append one.
MULTI_STATEMENTS = 1 << 16
DRIVERS = direct_read.DRIVERS

# Set in a pooled connection's info while a batch has committed its transaction (execute).
_COMMITTED = "memory_bank_batch_committed"


@dataclass(frozen=True)
class Statement:
    """One statement of a batch: driver SQL with %s marks, and its values in order."""

    sql: str
    params: tuple[Any, ...]


def supported(conn: Connection) -> bool:
    """Whether this connection sends batches in one round trip (one opened with the flag).

    Read from the connection's own URL, which make_engine gives the flag only for a pool that
    batches and strips it from every other.
    """
    if conn.dialect.driver not in DRIVERS:
        return False
    flags = int(str(conn.engine.url.query.get("client_flag", 0)))
    return bool(flags & MULTI_STATEMENTS)


# Rows per INSERT: well under SQLite's 32,766 bound values and MySQL's packet size for every
# table written here (at most 10 columns).
ROWS_PER_INSERT = 500


def inserts(table: Table, rows: Sequence[Mapping[str, Any]]) -> list[Statement]:
    """Multi-row INSERTs of rows (all with the same keys, which must be table columns); none
    for no rows."""
    if not rows:
        return []
    columns = list(rows[0])
    for name in columns:
        table.c[name]  # a KeyError here is a programming error, never user input
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    head = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES "
    return [
        Statement(
            head + ", ".join([one] * len(part)),
            tuple(row[name] for row in part for name in columns),
        )
        for part in (rows[at : at + ROWS_PER_INSERT] for at in range(0, len(rows), ROWS_PER_INSERT))
    ]


def run(conn: Connection, statements: Sequence[Statement], *, commit: bool = False) -> list[int]:
    """Send a write's statements in the caller's transaction; their row counts.

    Where the connection batches (supported) they travel in one round trip, and commit=True
    adds the COMMIT to it (execute). Elsewhere each is sent on its own and the caller's
    transaction commits as usual; commit then changes nothing. No statements send nothing.
    """
    if not statements:
        return []
    if supported(conn):
        return execute(conn, statements, commit=commit)
    sqlite = conn.dialect.name == "sqlite"
    counts = []
    for s in statements:
        if sqlite:
            # sqlite3 marks values with ?, and stores a datetime as SQLAlchemy's own DateTime
            # type would (the format every read of these columns expects).
            sql, params = s.sql.replace("%s", "?"), tuple(_sqlite_value(conn, v) for v in s.params)
        else:
            sql, params = s.sql, s.params
        counts.append(conn.exec_driver_sql(sql, params).rowcount)
    return counts


def _sqlite_value(conn: Connection, value: Any) -> Any:
    """A value as SQLAlchemy binds it for SQLite (datetimes as its DateTime type's text)."""
    if isinstance(value, datetime):
        return _sqlite_datetime(conn)(value)
    return value


def _sqlite_datetime(conn: Connection) -> Callable[[Any], Any]:
    """SQLAlchemy's bind processor of DateTime for this SQLite dialect."""
    process = DateTime().dialect_impl(conn.dialect).bind_processor(conn.dialect)
    assert process is not None
    return process


COMMIT = Statement("COMMIT", ())


def execute(
    conn: Connection, statements: Sequence[Statement], *, commit: bool = False
) -> list[int]:
    """Run the statements in the caller's transaction in one round trip; their row counts.

    Values are bound by the driver exactly as for any other statement: the batch joins
    statements whose SQL is written here, never text from a request. The engine's
    before_cursor_execute listeners see each statement on its own (the owner-scoping audit in
    the test suite relies on that). A failing statement stops the batch and raises like
    Connection.execute would; the caller's transaction then rolls back what ran before it.

    commit=True ends the batch with COMMIT, saving the commit's own round trip. Only for the
    last write of a transaction: once it returns the work is durable, and the caller's commit
    that follows is skipped at the driver.
    """
    if commit:
        statements = [*statements, COMMIT]
    dbapi_conn = conn.connection.dbapi_connection
    assert dbapi_conn is not None
    cursor = dbapi_conn.cursor()
    sql = ";\n".join(s.sql for s in statements)
    params = tuple(value for s in statements for value in s.params)
    try:
        for s in statements:
            conn.dispatch.before_cursor_execute(conn, cursor, s.sql, s.params, None, False)
        cursor.execute(sql, params)
        counts = [cursor.rowcount]
        while cursor.nextset():
            counts.append(cursor.rowcount)
    except conn.dialect.loaded_dbapi.Error as exc:
        reraise(conn, cursor, sql, params, exc)
    finally:
        cursor.close()
    if len(counts) != len(statements):
        raise RuntimeError(f"batch ran {len(counts)} of {len(statements)} statements")
    if commit:
        # SQLAlchemy's own commit of this transaction then sends nothing
        # (skip_commit_after_batch, which make_engine installs on the batch pool's dialect).
        conn.connection.info[_COMMITTED] = True
        return counts[:-1]
    return counts


def skip_commit_after_batch(dialect: Any) -> None:
    """Make this dialect's commit a no-op right after a batch has committed (execute above).

    SQLAlchemy ends every transaction with the driver's commit(), a round trip of its own even
    when the server has nothing left to commit. A rollback instead (the caller failed after a
    committed batch) clears the mark too, so it never carries over to the next transaction.
    """
    commit, rollback = dialect.do_commit, dialect.do_rollback

    def do_commit(dbapi_connection: Any) -> None:
        if _marks(dbapi_connection).pop(_COMMITTED, False):
            return
        commit(dbapi_connection)

    def do_rollback(dbapi_connection: Any) -> None:
        _marks(dbapi_connection).pop(_COMMITTED, None)
        rollback(dbapi_connection)

    dialect.do_commit, dialect.do_rollback = do_commit, do_rollback


def _marks(dbapi_connection: Any) -> dict[Any, Any]:
    """The info dict of the pooled connection SQLAlchemy passes to the dialect (empty for a
    bare DBAPI connection or the first connect's ad-hoc one, which no batch has marked)."""
    if not isinstance(dbapi_connection, PoolProxiedConnection):
        return {}
    try:
        return dbapi_connection.info
    except NotImplementedError:
        return {}
