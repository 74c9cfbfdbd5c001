"""Per-user switches (review opt-in, operator kill switch); each statement filters by user."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select
from sqlalchemy.dialects import mysql, sqlite

from memory_bank.ids import utcnow
from memory_bank.store.schema import user_settings


@dataclass(frozen=True)
class UserSettings:
    """One user's switches; a user without a row has the defaults."""

    review_required: bool = False
    memory_disabled: bool = False


def get(conn: Connection, user_id: str) -> UserSettings:
    """The user's switches (defaults when never set)."""
    row = conn.execute(select(user_settings).where(user_settings.c.user_id == user_id)).first()
    if row is None:
        return UserSettings()
    return UserSettings(bool(row.review_required), bool(row.memory_disabled))


def change(
    conn: Connection,
    user_id: str,
    *,
    review_required: bool | None = None,
    memory_disabled: bool | None = None,
) -> UserSettings:
    """Change some of the user's switches (creating the row) and return them all."""
    current = get(conn, user_id)
    wanted = UserSettings(
        current.review_required if review_required is None else review_required,
        current.memory_disabled if memory_disabled is None else memory_disabled,
    )
    values = {
        "review_required": wanted.review_required,
        "memory_disabled": wanted.memory_disabled,
        "updated_at": utcnow(),
    }
    # One upsert: a first write racing another cannot fail, and needs no SAVEPOINT (which
    # Spider refuses) to keep the transaction usable.
    if conn.dialect.name == "sqlite":
        lite = sqlite.insert(user_settings).values(user_id=user_id, **values)
        conn.execute(lite.on_conflict_do_update(index_elements=["user_id"], set_=values))
    else:
        upsert = mysql.insert(user_settings).values(user_id=user_id, **values)
        conn.execute(upsert.on_duplicate_key_update(**values))
    return wanted
