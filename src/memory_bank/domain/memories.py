"""Memories whole: a save, a fetch, a delete and a listing, each in one transaction, and their
answers shaped (bodies are parsed in domain/bodies.py, edits live in domain/edits.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, org_log, similar
from memory_bank.domain.bodies import NewMemory
from memory_bank.domain.semantic import Semantic
from memory_bank.errors import MemoryNotFound, QuotaExceeded
from memory_bank.ids import is_id, iso, new_id, utcnow
from memory_bank.search.document import postings_of
from memory_bank.store import drafts, memory_writes, postings, tombstones
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.owners import Owner

log = logging.getLogger("memory_bank.memories")
NOT_FOUND = "No memory with this id."
# How long a deleted memory's id is remembered, so that a retried delete answers 204 again.
TOMBSTONE_KEPT = timedelta(hours=24)


@dataclass(frozen=True)
class Saved:
    """What a save answers: the memory, the similar ones already kept (hints), and whether
    it was created (False: dedupe "skip" found this exact memory already kept)."""

    memory: dict[str, Any]
    similar: list[dict[str, Any]]
    created: bool


def save(
    db: Database,
    principal: Principal,
    new: NewMemory,
    max_memories: int = 0,
    hints: bool = True,
    semantic: Semantic | None = None,
) -> Saved:
    """Save a memory for the principal, or its org (scope "org", when allowed); the source
    comes from the credential. With dedupe "skip" and an exact duplicate kept, that one."""
    content, tags, contexts = new.content, new.tags, new.contexts
    owner = owner_of(principal, new.scope)
    skip_duplicate = new.dedupe == "skip"
    if skip_duplicate:
        # Answering with the memory already kept reads it: a write-only key may not.
        acl.check_read(principal)

    def work(conn: Connection) -> tuple[store.MemoryRow, bool]:
        if skip_duplicate:
            kept = similar.duplicate_of(conn, owner.user_id, content)
            if kept is not None:
                return kept, False
        check_quota(conn, owner.user_id, max_memories)
        memory_id = new_id("mem")
        org_log.record(conn, principal, owner.user_id, org_log.CREATED, memory_id=memory_id)
        # The insert is the transaction's last step, so its COMMIT may ride along with it.
        index = postings_of(content, tags, [c.snippet for c in contexts])
        row = memory_writes.insert_memory(
            conn, owner, content, tags, contexts, index, memory_id=memory_id, commit=True
        )
        return row, True

    row, created = db.writing(work, batched=True)
    if not created:
        return Saved(shape(row), [], created=False)
    # Read after the commit, outside the write: the hint never holds a write lock.
    alike = []
    if hints:
        snippets = [c.snippet for c in contexts]
        alike = _hints_after_commit(db, owner.user_id, row.id, content, semantic, snippets)
    if not acl.may_read(principal):
        # A key that may only write learns nothing of what else is kept: ids and scores.
        alike = [{"id": hint["id"], "score": hint["score"]} for hint in alike]
    return Saved(shape(row), alike, created=True)


def _hints_after_commit(
    db: Database,
    owner: str,
    memory_id: str,
    content: str,
    semantic: Semantic | None,
    snippets: list[str],
) -> list[dict[str, Any]]:
    """The similar-memory hints for a committed save, or none when they cannot be had.

    The memory is stored by now: a failure here must not turn the save into an error, which a
    client would retry into a duplicate. It is logged (by type, never with content).
    """
    try:
        return similar.hints(db, owner, memory_id, content, semantic, snippets)
    except Exception as exc:
        log.warning("similar-memory hints failed after a save: %s", type(exc).__name__)
        return []


def owner_of(principal: Principal, scope: str | None) -> Owner:
    """Who a save with this scope belongs to (the principal, or its org); 403 if not allowed."""
    owner = acl.save_owner(principal, scope)
    return Owner(owner, principal.org_id, principal.source, principal.user_id)


def check_quota(conn: Connection, user_id: str, max_memories: int) -> None:
    """409 quota_exceeded when one more memory or draft would take the user (or org) past
    max_memories (0 = no limit): memories and live drafts, of saves and edits, count alike."""
    if max_memories <= 0:
        return
    # Counted inside the write transaction (the stats row locked on MariaDB), so concurrent
    # saves and drafts cannot both slip under the limit. A draft counts because it stores a
    # memory's worth of text until a person decides: an edit's draft as much as a save's.
    held = postings.memory_count(conn, user_id, lock=True)
    held += drafts.count_drafts(conn, user_id, utcnow())
    if held + 1 > max_memories:
        raise QuotaExceeded(
            f"This memory bank is full ({max_memories} memories and drafts waiting for "
            "review); delete some to save more.",
            extra={"limit": max_memories},
        )


def fetch(db: Database, principal: Principal, memory_id: str) -> dict[str, Any]:
    """One of the memories the principal reads (its own, its org's), or 404 (also for other
    users' and other orgs' ids)."""
    with db.reading() as conn:
        return shape(readable(conn, principal, memory_id))


def readable(
    conn: Connection, principal: Principal, memory_id: str, *, lock: bool = False
) -> store.MemoryRow:
    """The memory with this id among those the principal reads, or 404 (the one way any
    request finds a memory by id); lock=True locks its row to commit, for a change."""
    if not is_id(memory_id, "mem"):
        raise MemoryNotFound(NOT_FOUND, field="id")
    for owner in acl.readable_owners(principal):
        if lock:
            row = store.locked(conn, owner, memory_id)
        else:
            row = store.get_memories(conn, owner, [memory_id]).get(memory_id)
        if row is not None:
            return row
    raise MemoryNotFound(NOT_FOUND, field="id")


def remove(
    db: Database,
    principal: Principal,
    memory_id: str,
    check_match: Callable[[int], None] | None = None,
) -> None:
    """Delete a memory the principal may change (acl); again is fine; 404 for ids it cannot
    read, 403 for a readable org memory it may not delete; check_match vets its revision
    (If-Match, domain/edits.py)."""
    if not is_id(memory_id, "mem"):
        raise MemoryNotFound(NOT_FOUND, field="id")
    now = utcnow()
    readable = acl.readable_owners(principal)

    def work(conn: Connection) -> bool:
        for owner in readable:
            tombstones.purge(conn, owner, now - TOMBSTONE_KEPT)
            exists, created_by, revision = store.author(conn, owner, memory_id)
            if exists:
                acl.check_change(principal, owner, created_by)
                if check_match is not None:
                    check_match(revision)
                org_log.record(conn, principal, owner, org_log.DELETED, memory_id=memory_id)
                # The row is locked by the read above; the delete is the last write, so its
                # COMMIT rides in the same round trip.
                memory_writes.delete_memory(conn, owner, memory_id, now, locked=True, commit=True)
                return True
        # A retry of a delete that went through (the answer was lost, say) succeeds again:
        # the tombstone is the caller's own (or its org's), so this reveals nothing of others'.
        return any(
            tombstones.was_deleted(conn, owner, memory_id)
            and acl.may_repeat_delete(principal, owner)
            for owner in readable
        )

    if not db.writing(work, batched=True):
        raise MemoryNotFound(NOT_FOUND, field="id")


def sweep_tombstones(db: Database) -> int:
    """Forget every user's tombstones past their day (at start-up; a delete forgets its owner's)."""
    before = utcnow() - TOMBSTONE_KEPT
    with db.reading() as conn:
        users = tombstones.users_before(conn, before)
    return sum(db.writing(_tombstone_purger(user_id, before)) for user_id in users)


def _tombstone_purger(user_id: str, before: datetime) -> Callable[[Connection], int]:
    """A write transaction that forgets one user's old tombstones."""
    return lambda conn: tombstones.purge(conn, user_id, before)


def shape(row: store.MemoryRow) -> dict[str, Any]:
    """A memory as the API returns it (an org memory names its creator)."""
    shaped = {
        "id": row.id,
        "content": row.content,
        "tags": row.tags,
        "source": row.source,
        "scope": row.scope,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "revision": row.revision,
        "contexts": [shape_context(c) for c in row.contexts],
    }
    if row.scope == "org":
        shaped["created_by"] = row.created_by or ""
    return shaped


def shape_context(ctx: dict[str, Any]) -> dict[str, Any]:
    """A context as the API returns it."""
    has_citation = ctx["conversation_id"] is not None or ctx["message_id"] is not None
    return {
        "id": ctx["id"],
        "snippet": ctx["snippet"],
        "citation": (
            {"conversation_id": ctx["conversation_id"], "message_id": ctx["message_id"]}
            if has_citation
            else None
        ),
        "origin": ctx["origin"],
        "created_at": iso(ctx["created_at"]),
    }
