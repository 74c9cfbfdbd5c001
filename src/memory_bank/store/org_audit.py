"""The org audit log: one row per write to an org's memories or drafts; every statement
filters by the org's owner key (user_id, store/owners.py), so the log lives with the org's
memories."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select

from memory_bank.ids import new_id
from memory_bank.store.owners import org_owner
from memory_bank.store.schema import org_audit

# Actions, as stored.
CREATED = "created"
DELETED = "deleted"
DRAFTED = "drafted"
REJECTED = "rejected"


@dataclass(frozen=True)
class Actor:
    """Who wrote: the user, the key and its integration."""

    user_id: str
    key_id: str
    source: str


@dataclass(frozen=True)
class Entry:
    """One audit row."""

    id: str
    action: str
    memory_id: str | None
    draft_id: str | None
    actor_user_id: str
    actor_source: str
    at: datetime


def record(
    conn: Connection,
    org_id: str,
    action: str,
    actor: Actor,
    at: datetime,
    *,
    memory_id: str | None = None,
    draft_id: str | None = None,
) -> None:
    """Append one entry in the caller's transaction."""
    conn.execute(
        insert(org_audit).values(
            id=new_id("oau"),
            user_id=org_owner(org_id),
            org_id=org_id,
            action=action,
            memory_id=memory_id,
            draft_id=draft_id,
            actor_user_id=actor.user_id,
            actor_key_id=actor.key_id,
            actor_source=actor.source,
            at=at,
        )
    )


def page(conn: Connection, org_id: str, limit: int, before_id: str | None) -> list[Entry]:
    """One page of the org's entries, newest first."""
    stmt = select(org_audit).where(org_audit.c.user_id == org_owner(org_id))
    if before_id is not None:
        stmt = stmt.where(org_audit.c.id < before_id)
    rows = conn.execute(stmt.order_by(org_audit.c.id.desc()).limit(limit)).all()
    return [
        Entry(r.id, r.action, r.memory_id, r.draft_id, r.actor_user_id, r.actor_source, r.at)
        for r in rows
    ]
