"""Small server-wide values every worker must agree on (signing secret, index version)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, insert, select

from memory_bank.store.schema import service_state


def get(conn: Connection, name: str) -> str | None:
    """The value stored under name, if any."""
    value = conn.execute(select(service_state.c.value).where(service_state.c.name == name))
    found = value.scalar()
    return None if found is None else str(found)


def put(conn: Connection, name: str, value: str) -> None:
    """Store value under name, replacing what was there."""
    conn.execute(delete(service_state).where(service_state.c.name == name))
    conn.execute(insert(service_state).values(name=name, value=value))


def put_once(conn: Connection, name: str, value: str) -> None:
    """Store value under name unless something is stored there already."""
    if get(conn, name) is None:
        conn.execute(insert(service_state).values(name=name, value=value))
