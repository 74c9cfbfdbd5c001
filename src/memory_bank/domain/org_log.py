"""The org audit log: what each write to an org's memories records, and reading it back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, cursor
from memory_bank.ids import iso, utcnow
from memory_bank.store import org_audit, owners
from memory_bank.store.database import Database

CREATED = org_audit.CREATED
DELETED = org_audit.DELETED
DRAFTED = org_audit.DRAFTED
REJECTED = org_audit.REJECTED
# The key id of an entry no key wrote (an operator's import): no key id is empty.
IMPORTED = ""


def record(
    conn: Connection,
    principal: Principal,
    owner: str,
    action: str,
    *,
    memory_id: str | None = None,
    draft_id: str | None = None,
) -> None:
    """Log a write by the principal when the owner is an org (personal writes are not logged)."""
    org_id = owners.org_of(owner)
    if org_id is None:
        return
    actor = org_audit.Actor(principal.user_id, principal.key_id, principal.source)
    org_audit.record(conn, org_id, action, actor, utcnow(), memory_id=memory_id, draft_id=draft_id)


def record_import(conn: Connection, org_id: str, memory_id: str, author: str, source: str) -> None:
    """Log an org memory that `memory-bank orgs import` wrote: `created`, by its author, from
    its source, at the time of the import; no key did it, so the entry names none."""
    actor = org_audit.Actor(author, IMPORTED, source)
    org_audit.record(conn, org_id, CREATED, actor, utcnow(), memory_id=memory_id)


def page(
    db: Database, secret: bytes, principal: Principal, limit: int, after: str | None
) -> dict[str, Any]:
    """One page of the principal's org audit log, newest first (org:admin only)."""
    org_id = acl.check_audit(principal)
    # Bound to the org as well as the user: a cursor from another org's log is refused.
    listing = f"org-audit|{org_id}"
    before_id = cursor.decode(secret, principal.user_id, listing, after) if after else None
    with db.reading() as conn:
        rows = org_audit.page(conn, org_id, limit + 1, before_id)
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "entries": [
            {
                "id": r.id,
                "action": r.action,
                "memory_id": r.memory_id,
                "draft_id": r.draft_id,
                "actor": r.actor_user_id,
                "source": r.actor_source,
                "at": iso(r.at),
            }
            for r in rows
        ],
        "next_cursor": cursor.encode(secret, principal.user_id, listing, rows[-1].id)
        if more
        else None,
    }
