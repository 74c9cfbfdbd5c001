"""Owner-scoped queries on drafts and their audit trail; every statement filters by user_id
(the owner key: a user, or an org's key for org drafts)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select

from memory_bank.ids import new_id
from memory_bank.store import batch
from memory_bank.store.memories import NewContext
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory_draft, review_audit
from memory_bank.store.sealing import data_keys

# Audit actions, as stored.
CREATED = "created"
CONFIRMED = "confirmed"
EDITED_CONFIRMED = "edited_and_confirmed"
REJECTED = "rejected"
EXPIRED = "expired"


@dataclass(frozen=True)
class DraftRow:
    """A pending draft, as stored."""

    id: str
    user_id: str
    org_id: str | None
    content: str
    tags: list[str]
    contexts: list[dict[str, Any]]
    source: str
    created_by_key: str
    created_at: datetime
    expires_at: datetime
    created_by: str | None = None
    # An edit's draft: the memory it changes and the revision it was proposed against.
    memory_id: str | None = None
    base_revision: int | None = None

    def owner(self) -> Owner:
        """The owner a confirmed memory gets: the draft's owner, creator and original source."""
        return Owner(self.user_id, self.org_id, self.source, self.created_by)

    def new_contexts(self) -> list[NewContext]:
        """The draft's contexts in the form a memory is written from."""
        return [
            NewContext(
                snippet=c["snippet"],
                conversation_id=c["conversation_id"],
                message_id=c["message_id"],
                origin=c["origin"],
            )
            for c in self.contexts
        ]


@dataclass(frozen=True)
class Actor:
    """Who acted on a draft: the credential's id and source (None for the expiry sweep)."""

    key_id: str | None
    source: str | None


def insert_draft(
    conn: Connection,
    owner: Owner,
    content: str,
    tags: Sequence[str],
    contexts: Sequence[NewContext],
    actor: Actor,
    now: datetime,
    expires_at: datetime,
    edit_of: tuple[str, int] | None = None,
) -> DraftRow:
    """Store a draft and its 'created' audit row in the caller's transaction; edit_of names
    the memory and revision an edit's draft changes."""
    stored_contexts = [
        {
            "id": new_id("mctx"),
            "snippet": c.snippet,
            "conversation_id": c.conversation_id,
            "message_id": c.message_id,
            "origin": c.origin,
        }
        for c in contexts
    ]
    memory_id, base_revision = edit_of or (None, None)
    row = DraftRow(
        id=new_id("mdr"),
        user_id=owner.user_id,
        org_id=owner.org_id,
        content=content,
        tags=list(tags),
        contexts=stored_contexts,
        source=owner.source,
        created_by_key=actor.key_id or "",
        created_at=now,
        expires_at=expires_at,
        created_by=owner.created_by,
        memory_id=memory_id,
        base_revision=base_revision,
    )
    # Sealed per owner, column and draft when encryption is on (store/sealing/data_keys.py).
    seal = data_keys.sealer(conn, owner.user_id, create=True)
    conn.execute(
        insert(memory_draft).values(
            id=row.id,
            user_id=row.user_id,
            org_id=row.org_id,
            content=seal.seal("memory_draft.content", row.id, content),
            tags=seal.seal("memory_draft.tags", row.id, json.dumps(row.tags, ensure_ascii=False)),
            contexts=seal.seal(
                "memory_draft.contexts", row.id, json.dumps(stored_contexts, ensure_ascii=False)
            ),
            source=row.source,
            created_by_key=row.created_by_key,
            created_at=now,
            expires_at=expires_at,
            created_by=row.created_by,
            memory_id=memory_id,
            base_revision=base_revision,
        )
    )
    audit(conn, row.user_id, row.id, CREATED, actor, now)
    return row


def get_draft(
    conn: Connection, user_id: str, draft_id: str, now: datetime, *, lock: bool = False
) -> DraftRow | None:
    """The user's live (unexpired) draft with this id, or None; lock=True locks its row to
    commit (MySQL/MariaDB), so that of two reviewers the second waits, then finds none."""
    stmt = select(memory_draft).where(
        memory_draft.c.user_id == user_id,
        memory_draft.c.id == draft_id,
        memory_draft.c.expires_at > now,
    )
    found = conn.execute(stmt.with_for_update() if lock else stmt).first()
    return _row(found, data_keys.sealer(conn, user_id)) if found is not None else None


def list_drafts(
    conn: Connection, user_id: str, now: datetime, limit: int, before_id: str | None
) -> list[DraftRow]:
    """One page of the user's live drafts, newest first."""
    stmt = select(memory_draft).where(
        memory_draft.c.user_id == user_id, memory_draft.c.expires_at > now
    )
    if before_id is not None:
        stmt = stmt.where(memory_draft.c.id < before_id)
    rows = conn.execute(stmt.order_by(memory_draft.c.id.desc()).limit(limit)).all()
    seal = data_keys.sealer(conn, user_id)
    return [_row(r, seal) for r in rows]


def count_drafts(conn: Connection, user_id: str, now: datetime) -> int:
    """How many live drafts the user has waiting, of saves and of edits alike (each holds a
    whole memory's text until it is confirmed or rejected)."""
    stmt = (
        select(func.count())
        .select_from(memory_draft)
        .where(memory_draft.c.user_id == user_id, memory_draft.c.expires_at > now)
    )
    return int(conn.execute(stmt).scalar() or 0)


def delete_draft(conn: Connection, user_id: str, draft_id: str) -> bool:
    """Remove the user's draft; False when another transaction already did.

    Decided by a locking read, not by the DELETE's row count (Spider reports 0 for every
    DELETE): of two reviewers, the second waits for the first's commit, then finds no row.
    """
    this_draft = (memory_draft.c.user_id == user_id, memory_draft.c.id == draft_id)
    if conn.execute(select(memory_draft.c.id).where(*this_draft).with_for_update()).first() is None:
        return False
    conn.execute(delete(memory_draft).where(*this_draft))
    return True


def purge_expired(conn: Connection, user_id: str, now: datetime) -> int:
    """Delete the user's expired drafts, auditing each; returns how many."""
    ids = [
        r.id
        for r in conn.execute(
            select(memory_draft.c.id).where(
                memory_draft.c.user_id == user_id, memory_draft.c.expires_at <= now
            )
        ).all()
    ]
    gone = 0
    for draft_id in ids:
        if delete_draft(conn, user_id, draft_id):
            audit(conn, user_id, draft_id, EXPIRED, Actor(None, None), now)
            gone += 1
    return gone


def users_with_expired(conn: Connection, now: datetime) -> list[str]:
    """Users that have expired drafts: the one cross-user query, for the operator's sweep."""
    rows = conn.execute(
        select(memory_draft.c.user_id).where(memory_draft.c.expires_at <= now).distinct()
    ).all()
    return [r.user_id for r in rows]


def delete_statement(user_id: str, draft_id: str) -> batch.Statement:
    """The DELETE of the user's draft, for a transaction that read it with its row locked
    (get_draft(lock=True)); batch.run sends it."""
    return batch.Statement(
        "DELETE FROM memory_draft WHERE user_id = %s AND id = %s", (user_id, draft_id)
    )


def audit_statement(
    user_id: str,
    draft_id: str,
    action: str,
    actor: Actor,
    now: datetime,
    memory_id: str | None = None,
) -> batch.Statement:
    """The INSERT of one audit row; batch.run sends it."""
    return batch.Statement(
        "INSERT INTO review_audit (id, user_id, draft_id, action, actor_key_id, actor_source, "
        "memory_id, at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (new_id("rva"), user_id, draft_id, action, actor.key_id, actor.source, memory_id, now),
    )


def audit(
    conn: Connection,
    user_id: str,
    draft_id: str,
    action: str,
    actor: Actor,
    now: datetime,
    memory_id: str | None = None,
) -> None:
    """Append one audit row."""
    conn.execute(
        insert(review_audit).values(
            id=new_id("rva"),
            user_id=user_id,
            draft_id=draft_id,
            action=action,
            actor_key_id=actor.key_id,
            actor_source=actor.source,
            memory_id=memory_id,
            at=now,
        )
    )


def _row(r: Any, seal: data_keys.Sealer) -> DraftRow:
    """A draft from a result row, opened."""
    return DraftRow(
        id=r.id,
        user_id=r.user_id,
        org_id=r.org_id,
        content=seal.open("memory_draft.content", r.id, r.content),
        tags=json.loads(seal.open("memory_draft.tags", r.id, r.tags)),
        contexts=json.loads(seal.open("memory_draft.contexts", r.id, r.contexts)),
        source=r.source,
        created_by_key=r.created_by_key,
        created_at=r.created_at,
        expires_at=r.expires_at,
        created_by=r.created_by,
        memory_id=r.memory_id,
        base_revision=r.base_revision,
    )


@dataclass(frozen=True)
class AuditRow:
    """One review event of an owner's draft (no content: it may be gone)."""

    at: datetime
    draft_id: str
    action: str
    actor_key_id: str | None
    actor_source: str | None
    memory_id: str | None


def audit_rows(conn: Connection, user_id: str, limit: int) -> list[AuditRow]:
    """The owner's newest review events, newest first (ids sort by time)."""
    rows = conn.execute(
        select(review_audit)
        .where(review_audit.c.user_id == user_id)
        .order_by(review_audit.c.id.desc())
        .limit(limit)
    ).all()
    return [
        AuditRow(r.at, r.draft_id, r.action, r.actor_key_id, r.actor_source, r.memory_id)
        for r in rows
    ]
