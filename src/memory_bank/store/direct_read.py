"""Reads sent straight through the driver's cursor on MySQL/MariaDB (the credential lookup),
and driver errors raised as SQLAlchemy would raise them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from sqlalchemy import Connection, Select
from sqlalchemy.exc import DBAPIError

from memory_bank.caches import PerObject

# The MySQL drivers whose cursors this module (and store/batch.py) drive directly.
DRIVERS = frozenset({"pymysql", "mysqldb"})


def available(conn: Connection) -> bool:
    """Whether reads on this connection may go straight through its driver."""
    return conn.dialect.name in {"mysql", "mariadb"} and conn.dialect.driver in DRIVERS


def fetch_one(
    conn: Connection, statement: Select[Any], params: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The first row of a SELECT, as a mapping, read through the driver's cursor.

    For the credential lookup, which runs on every request: SQLAlchemy's statement execution
    and result objects were a measurable share of it on MySQL/MariaDB (docs/benchmarks.md).
    The statement is compiled by SQLAlchemy for the connection's dialect (cached per
    dialect), its values are bound by the driver, and listeners see it as usual. Only for
    columns the driver already returns as their Python type (strings, numbers, datetimes).

    Only on a connection in autocommit mode (the credential pool's): elsewhere the SELECT
    would open a transaction SQLAlchemy does not know about, nothing would end it, and the
    pooled connection would keep reading that old snapshot. Other connections go through
    SQLAlchemy, which ends what it begins.
    """
    dbapi_conn = conn.connection.dbapi_connection
    assert dbapi_conn is not None
    if not dbapi_conn.get_autocommit():
        found = conn.execute(statement, dict(params)).first()
        return None if found is None else dict(found._mapping)
    sql, names, columns = _compiled(conn, statement)
    args: Any = tuple(params[n] for n in names) if names is not None else dict(params)
    cursor = dbapi_conn.cursor()
    try:
        conn.dispatch.before_cursor_execute(conn, cursor, sql, args, None, False)
        cursor.execute(sql, args)
        row = cursor.fetchone()
    except conn.dialect.loaded_dbapi.Error as exc:
        reraise(conn, cursor, sql, args, exc)
    finally:
        cursor.close()
    return None if row is None else dict(zip(columns, row, strict=True))


# One entry per statement this module runs (built once at import) and driver.
_COMPILED: PerObject[tuple[str, list[str] | None, list[str]]] = PerObject(bound=64)


def _compiled(conn: Connection, statement: Select[Any]) -> tuple[str, list[str] | None, list[str]]:
    """The statement's SQL for this dialect, its positional parameter names, its columns."""

    def make() -> tuple[str, list[str] | None, list[str]]:
        compiled = statement.compile(dialect=conn.dialect)
        positions = list(compiled.positiontup) if compiled.positiontup is not None else None
        return compiled.string, positions, list(statement.selected_columns.keys())

    return _COMPILED.get(statement, make, conn.dialect.driver)


def reraise(conn: Connection, cursor: Any, sql: str, params: Any, exc: Any) -> NoReturn:
    """Raise a driver error as SQLAlchemy would (so retries and outage handling apply)."""
    dbapi_conn = conn.connection.dbapi_connection
    invalidated = conn.dialect.is_disconnect(exc, dbapi_conn, cursor)
    if invalidated:
        conn.invalidate(exc)
    raise DBAPIError.instance(
        sql,
        params,
        exc,
        conn.dialect.loaded_dbapi.Error,
        connection_invalidated=invalidated,
        dialect=conn.dialect,
    ) from exc
