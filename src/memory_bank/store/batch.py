"""A save's writes on MySQL/MariaDB as one multi-statement batch: one round trip, COMMIT
included."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table
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


def insert(table: Table, rows: Sequence[Mapping[str, Any]]) -> Statement:
    """A multi-row INSERT of rows (all with the same keys, which must be table columns)."""
    columns = list(rows[0])
    for name in columns:
        table.c[name]  # a KeyError here is a programming error, never user input
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES " + ", ".join([one] * len(rows))
    return Statement(sql, tuple(row[name] for row in rows for name in columns))


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

    commit=True ends the batch with COMMIT, saving the commit's own round trip (0.3-0.4 ms of a
    save here). Only for the last write of a transaction: once it returns the work is durable,
    and the caller's commit that follows is skipped at the driver.
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
