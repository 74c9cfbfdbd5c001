"""Human review: when a save becomes a draft, and confirming, rejecting or expiring drafts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, bodies, cursor, edits, org_log
from memory_bank.domain.bodies import NewMemory
from memory_bank.domain.etags import IfMatch
from memory_bank.domain.memories import check_quota, owner_of, shape, shape_context
from memory_bank.errors import DraftNotFound, MemoryNotFound
from memory_bank.ids import is_id, iso, utcnow
from memory_bank.search.document import postings_of
from memory_bank.settings import Settings
from memory_bank.store import batch, drafts, memory_writes
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.owners import Owner
from memory_bank.store.user_settings import UserSettings

REVIEW_SCOPE = "memory:review"
SAVED_FOR_REVIEW = "Saved for review: a person must confirm this before it is remembered."
EDIT_FOR_REVIEW = "Edit saved for review: a person must confirm it before the memory changes."


def needs_review(
    settings: Settings, principal: Principal, user_settings: UserSettings, scope: object = None
) -> bool:
    """Whether this principal's save must wait for a person (reviewers never wait). A save to
    the org follows the server's setting; the user's own opt-in covers their own memories."""
    if principal.has(REVIEW_SCOPE):
        return False
    if scope == "org":
        return settings.review_required
    return settings.review_required or user_settings.review_required


def submit(
    db: Database, settings: Settings, principal: Principal, new: NewMemory
) -> dict[str, Any]:
    """Store a save as a pending draft; returns the DraftEnvelope."""
    content, tags, contexts = new.content, new.tags, new.contexts
    owner = owner_of(principal, new.scope)
    now = utcnow()
    expires = now + timedelta(hours=settings.draft_ttl_hours)

    def work(conn: Connection) -> drafts.DraftRow:
        drafts.purge_expired(conn, owner.user_id, now)
        # The quota counts waiting drafts too: confirming one then keeps the total unchanged.
        check_quota(conn, owner.user_id, settings.max_memories_per_user)
        row = drafts.insert_draft(
            conn, owner, content, tags, contexts, _actor(principal), now, expires
        )
        org_log.record(conn, principal, owner.user_id, org_log.DRAFTED, draft_id=row.id)
        return row

    row = db.writing(work)
    return {"status": "pending_review", "message": SAVED_FOR_REVIEW, "draft": shape_draft(row)}


def submit_edit(
    conn: Connection,
    settings: Settings,
    principal: Principal,
    current: store.MemoryRow,
    edited: store.MemoryRow,
) -> dict[str, Any]:
    """Store an edit, in the caller's transaction, as a pending draft of the memory's next
    state (current, locked, becomes edited); returns the DraftEnvelope."""
    now = utcnow()
    expires = now + timedelta(hours=settings.draft_ttl_hours)
    owner = Owner(current.user_id, principal.org_id, principal.source, principal.user_id)
    contexts = [
        store.NewContext(c["snippet"], c["conversation_id"], c["message_id"], c["origin"])
        for c in edited.contexts
    ]
    drafts.purge_expired(conn, owner.user_id, now)
    # An edit's draft holds a memory's worth of text until a person decides: it counts
    # against the quota like a save's draft (confirming it then frees its place).
    check_quota(conn, owner.user_id, settings.max_memories_per_user)
    row = drafts.insert_draft(
        conn,
        owner,
        edited.content,
        edited.tags,
        contexts,
        _actor(principal),
        now,
        expires,
        edit_of=(current.id, current.revision),
    )
    org_log.record(
        conn, principal, owner.user_id, org_log.DRAFTED, memory_id=current.id, draft_id=row.id
    )
    return {"status": "pending_review", "message": EDIT_FOR_REVIEW, "draft": shape_draft(row)}


def fetch(db: Database, principal: Principal, draft_id: str) -> dict[str, Any]:
    """A live draft the principal may see (its own; its org's it created or reviews), or 404
    (also once confirmed, rejected or expired)."""
    _check_id(draft_id)
    with db.reading() as conn:
        row = _visible_draft(conn, principal, draft_id, utcnow())
    if row is None:
        raise DraftNotFound(
            "No pending draft with this id (it may have been confirmed, rejected or expired).",
            field="id",
        )
    return shape_draft(row)


def page(
    db: Database, secret: bytes, principal: Principal, limit: int, after: str | None
) -> dict[str, Any]:
    """One page of the principal's review queue, its org's drafts included, newest first
    (expired drafts are not shown)."""
    before_id = cursor.decode(secret, principal.user_id, "drafts", after) if after else None
    now = utcnow()
    rows: list[drafts.DraftRow] = []
    with db.reading() as conn:
        for owner in acl.draft_owners(principal):
            found = drafts.list_drafts(conn, owner, now, limit + 1, before_id)
            rows += [r for r in found if acl.may_see_draft(principal, owner, r.created_by)]
    rows.sort(key=lambda row: row.id, reverse=True)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = cursor.encode(secret, principal.user_id, "drafts", rows[-1].id) if more else None
    return {"drafts": [shape_draft(r) for r in rows], "next_cursor": next_cursor}


def confirm(
    db: Database,
    principal: Principal,
    draft_id: str,
    changes: dict[str, Any] | None,
    keep_revisions: int = 0,
) -> tuple[dict[str, Any], bool]:
    """Turn a draft (optionally with edited content/tags) into a memory, or an edit's draft
    into the memory's next revision, in one transaction; True when a memory was created.

    Confirming as proposed needs memory:review only. Confirming with changes writes the
    reviewer's own text into the memory, so it also needs the rights a direct edit of that
    memory needs (acl.check_change): a 403 otherwise, and the draft stays.
    """
    _check_id(draft_id)
    now = utcnow()

    def work(conn: Connection) -> tuple[store.MemoryRow, bool]:
        # Read with its row locked: of two reviewers, the second waits for the first's commit,
        # then finds no draft. The draft's delete then goes in the write batch.
        draft = _visible_draft(conn, principal, draft_id, now, lock=True)
        if draft is None:
            raise DraftNotFound("No pending draft with this id.", field="id")
        content, tags = bodies.draft_changes(changes, draft.content, draft.tags)
        edited = content != draft.content or tags != draft.tags
        if edited and draft.memory_id is None:
            # The memory will be its author's (created_by): changing its text is an edit of it.
            acl.check_change(principal, draft.user_id, draft.created_by)
        gone = drafts.delete_statement(draft.user_id, draft_id)
        if draft.memory_id is not None:
            memory = _confirm_edit(
                conn, principal, draft, (content, tags), now, keep_revisions, gone
            )
            return memory, False
        contexts = draft.new_contexts()
        index = postings_of(content, tags, [c.snippet for c in contexts])
        action = drafts.EDITED_CONFIRMED if edited else drafts.CONFIRMED
        memory, statements = memory_writes.insert_statements(
            conn, draft.owner(), content, tags, contexts, index, created_at=now
        )
        org_log.record(
            conn, principal, draft.user_id, action, memory_id=memory.id, draft_id=draft_id
        )
        audit = drafts.audit_statement(
            draft.user_id, draft_id, action, _actor(principal), now, memory.id
        )
        # One round trip with the COMMIT: the draft's delete, the memory and the audit row.
        batch.run(conn, [gone, *statements, audit], commit=True)
        return memory, True

    memory, created = db.writing(work, batched=True)
    return shape(memory), created


def _confirm_edit(
    conn: Connection,
    principal: Principal,
    draft: drafts.DraftRow,
    text: tuple[str, list[str]],
    now: datetime,
    keep_revisions: int,
    gone: batch.Statement,
) -> store.MemoryRow:
    """Apply an edit's draft (its content and tags as confirmed) as the memory's next
    revision, the draft's delete (`gone`) in the same batch; 412 when the memory moved on
    (the draft then stays, for a person to reject), 404 when it is gone, 403 when the
    reviewer changed the text without the rights to edit the memory."""
    assert draft.memory_id is not None
    content, tags = text
    current = store.locked(conn, draft.user_id, draft.memory_id)
    if current is None:
        raise MemoryNotFound("The memory this edit changes no longer exists.", field="id")
    edited = content != draft.content or tags != draft.tags
    if edited:
        acl.check_change(principal, current.user_id, current.created_by)
    assert draft.base_revision is not None
    IfMatch.revision(draft.base_revision).check(current.revision)
    contexts = [{**c, "created_at": now} for c in draft.contexts]
    change = bodies.Change(content, tags, contexts)
    action = drafts.EDITED_CONFIRMED if edited else drafts.CONFIRMED
    # The revision names who wrote its text: the draft's author, or the reviewer who changed it.
    source = principal.source if edited else draft.source
    org_log.record(conn, principal, draft.user_id, action, memory_id=current.id, draft_id=draft.id)
    audit = drafts.audit_statement(
        draft.user_id, draft.id, action, _actor(principal), now, current.id
    )
    return edits.apply(conn, principal, current, change, source, keep_revisions, also=[gone, audit])


def reject(db: Database, principal: Principal, draft_id: str) -> None:
    """Discard a draft; only the audit row (no content) remains."""
    _check_id(draft_id)
    now = utcnow()

    def work(conn: Connection) -> None:
        draft = _visible_draft(conn, principal, draft_id, now)
        if draft is None:
            raise DraftNotFound("No pending draft with this id.", field="id")
        if not drafts.delete_draft(conn, draft.user_id, draft_id):
            raise DraftNotFound("No pending draft with this id.", field="id")
        drafts.audit(conn, draft.user_id, draft_id, drafts.REJECTED, _actor(principal), now)
        org_log.record(conn, principal, draft.user_id, org_log.REJECTED, draft_id=draft_id)

    db.writing(work)


def _visible_draft(
    conn: Connection, principal: Principal, draft_id: str, now: datetime, *, lock: bool = False
) -> drafts.DraftRow | None:
    """The live draft with this id that the principal may see (acl), or None; lock=True
    locks its row to commit."""
    for owner in acl.draft_owners(principal):
        row = drafts.get_draft(conn, owner, draft_id, now, lock=lock)
        if row is not None:
            return row if acl.may_see_draft(principal, owner, row.created_by) else None
    return None


def sweep(db: Database) -> int:
    """Purge every user's expired drafts (start-up and `memory-bank drafts purge`)."""
    now = utcnow()
    with db.reading() as conn:
        users = drafts.users_with_expired(conn, now)
    purged = 0
    for user_id in users:
        purged += db.writing(_purger(user_id, now))
    return purged


def audit(db: Database, user_id: str, limit: int) -> list[drafts.AuditRow]:
    """An owner's review decisions, newest first: who confirmed, edited, rejected or let
    expire which draft, and when (the operator's `memory-bank drafts audit`)."""
    with db.reading() as conn:
        return drafts.audit_rows(conn, user_id, limit)


def _purger(user_id: str, now: datetime) -> Callable[[Connection], int]:
    """A write transaction that purges one user's expired drafts."""
    return lambda conn: drafts.purge_expired(conn, user_id, now)


def shape_draft(row: drafts.DraftRow) -> dict[str, Any]:
    """A draft as the API returns it."""
    created = iso(row.created_at)
    shaped: dict[str, Any] = {
        "id": row.id,
        "status": "pending_review",
        "content": row.content,
        "tags": row.tags,
        "source": row.source,
        "scope": acl.scope_of(row.user_id),
        # A draft's contexts were written with it, so they carry its creation time.
        "contexts": [shape_context({**c, "created_at": row.created_at}) for c in row.contexts],
        "created_at": created,
        "expires_at": iso(row.expires_at),
    }
    if shaped["scope"] == "org":
        shaped["created_by"] = row.created_by or ""
    if row.memory_id is not None:
        shaped["memory_id"] = row.memory_id
        shaped["base_revision"] = row.base_revision
    return shaped


def _check_id(draft_id: str) -> None:
    """404 for anything that is not a draft id (no lookup needed)."""
    if not is_id(draft_id, "mdr"):
        raise DraftNotFound("No pending draft with this id.", field="id")


def _actor(principal: Principal) -> drafts.Actor:
    """The audit actor for a principal."""
    return drafts.Actor(principal.key_id, principal.source)
