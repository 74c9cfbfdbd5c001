"""A save or an edit request, whole: its body parsed once, review decided here, then the
memory written or a draft stored. Handlers make one call and shape the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, bodies, edits, memories, review
from memory_bank.domain.etags import IfMatch
from memory_bank.domain.semantic import Semantic
from memory_bank.settings import Settings
from memory_bank.store.database import Database
from memory_bank.store.user_settings import UserSettings


@dataclass(frozen=True)
class Outcome:
    """What a save or edit did: a memory written (or kept as it was), or a draft for review."""

    # The memory as it now is (None when the request became a draft).
    memory: dict[str, Any] | None = None
    # The DraftEnvelope when a person must confirm first.
    draft: dict[str, Any] | None = None
    # A save's similar-memory hints.
    similar: list[dict[str, Any]] = field(default_factory=list)
    # Whether a memory was created (a save; False when dedupe "skip" found it already kept) or
    # changed (an edit): embedding work was queued.
    written: bool = False


def save(
    db: Database,
    settings: Settings,
    principal: Principal,
    user_settings: UserSettings,
    body: Any,
    semantic: Semantic | None = None,
) -> Outcome:
    """Save a memory for the principal (or its org), or store a draft when review applies
    (semantic: the process's semantic search, for hints by meaning; None: hints by words)."""
    new = bodies.new_memory(body)
    if new.dedupe == "skip":
        # Answering with the memory already kept reads it: a write-only key gets the 403
        # before anything is stored, a draft included (review would otherwise keep one).
        acl.check_read(principal)
    if review.needs_review(settings, principal, user_settings, new.scope):
        return Outcome(draft=review.submit(db, settings, principal, new))
    saved = memories.save(
        db, principal, new, settings.max_memories_per_user, settings.similar_hints, semantic
    )
    return Outcome(memory=saved.memory, similar=saved.similar, written=saved.created)


def edit(
    db: Database,
    settings: Settings,
    principal: Principal,
    user_settings: UserSettings,
    memory_id: str,
    body: Any,
    if_match: IfMatch | None,
) -> Outcome:
    """Edit a memory the principal may change (merge-patch), or store the edit as a draft when
    review applies to the memory's scope; one transaction, the memory located once."""
    change = bodies.patch(body)

    def work(conn: Connection) -> Outcome:
        current = edits.changeable(conn, principal, memory_id, if_match)
        if review.needs_review(settings, principal, user_settings, acl.scope_of(current.user_id)):
            proposed = edits.changed_row(current, change)
            if proposed is None:  # an edit that changes nothing: no draft
                return Outcome(memory=memories.shape(current))
            return Outcome(draft=review.submit_edit(conn, settings, principal, current, proposed))
        keep = settings.max_revisions_per_memory
        edited = edits.apply(conn, principal, current, change, principal.source, keep)
        return Outcome(memory=memories.shape(edited), written=edited is not current)

    return db.writing(work, batched=True)
