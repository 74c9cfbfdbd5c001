"""Organisations as the operator sees them: members (from keys) and memory counts."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from memory_bank.ids import utcnow
from memory_bank.store import owners
from memory_bank.store.schema import api_key, memory_user_stats


@dataclass(frozen=True)
class OrgSummary:
    """One organisation: its members (users with a usable key of the org) and memories."""

    org_id: str
    members: int
    memories: int


def summaries(conn: Connection) -> list[OrgSummary]:
    """Every org that has a key or memories: a cross-org read, for the operator only."""
    now = utcnow()
    usable = (
        api_key.c.org_id.is_not(None),
        api_key.c.revoked_at.is_(None),
        (api_key.c.expires_at.is_(None)) | (api_key.c.expires_at > now),
    )
    members: dict[str, int] = dict(
        conn.execute(
            select(api_key.c.org_id, func.count(api_key.c.user_id.distinct()))
            .where(*usable)
            .group_by(api_key.c.org_id)
        ).all()
    )
    # Org owner keys sort together: "org:" up to the next character after ":".
    stats = memory_user_stats.c
    memories = {
        owners.org_of(owner) or "": int(count)
        for owner, count in conn.execute(
            select(stats.user_id, stats.doc_count).where(
                stats.user_id >= owners.ORG_PREFIX, stats.user_id < owners.ORG_PREFIX[:-1] + ";"
            )
        ).all()
    }
    names = sorted(set(members) | set(memories))
    return [OrgSummary(n, int(members.get(n, 0)), memories.get(n, 0)) for n in names]
