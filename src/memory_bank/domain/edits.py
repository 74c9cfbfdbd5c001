"""Editing a memory: merge-patch, revisions, restore, and the If-Match check.

An edit writes the memory, its index postings and a revision row in one transaction, and drops
the oldest revisions past MEMORY_BANK_MAX_REVISIONS_PER_MEMORY in it. A memory never edited has
no revision rows (a save writes none, so saves cost what they did); its first edit records
revision 1 from the memory itself, then the new state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, cursor, etags, org_log
from memory_bank.domain.bodies import Change
from memory_bank.domain.etags import IfMatch
from memory_bank.domain.memories import readable, shape, shape_context
from memory_bank.errors import (
    InvalidCursor,
    RevisionNotFound,
)
from memory_bank.ids import iso, utcnow
from memory_bank.search.document import postings_of
from memory_bank.store import batch, memory_writes, revisions, vectors
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.revisions import RevisionRow, context_keys

EDITED = "edited"


def etag(revision: int) -> str:
    """The ETag of a memory at this revision."""
    return etags.etag(revision)


def check_match(if_match: IfMatch | None, revision: int) -> None:
    """412 revision_conflict unless If-Match (when sent) is met by the current revision."""
    if if_match is not None:
        if_match.check(revision)


def changed_row(row: store.MemoryRow, change: Change) -> store.MemoryRow | None:
    """The memory with the change applied, or None when it changes nothing."""
    content = row.content if change.content is None else change.content
    tags = row.tags if change.tags is None else change.tags
    same_contexts = change.contexts is None or context_keys(change.contexts) == context_keys(
        row.contexts
    )
    if content == row.content and tags == row.tags and same_contexts:
        return None
    contexts = row.contexts if same_contexts else list(change.contexts or [])
    return replace(row, content=content, tags=tags, contexts=contexts)


def content_changed(conn: Connection, row: store.MemoryRow, contexts_changed: bool) -> None:
    """Write a memory's new state with its index entry, in the caller's transaction
    (content_statements, sent now)."""
    batch.run(conn, content_statements(conn, row, contexts_changed))


def content_statements(
    conn: Connection, row: store.MemoryRow, contexts_changed: bool, *, tags_changed: bool = True
) -> list[batch.Statement]:
    """The statements that write a memory's new state with its index entry.

    The one place an edit reaches the index: old postings go, new ones come, with the row; its
    vector goes too and, with semantic search on, a new embedding is queued (store/vectors.py),
    so no ranking ever uses a stale vector.
    """
    index = postings_of(row.content, row.tags, [c["snippet"] for c in row.contexts])
    contexts = row.contexts if contexts_changed else None
    return [
        *memory_writes.update_statements(conn, row, contexts, index, tags_changed=tags_changed),
        *vectors.changed_statements(conn, row.user_id, row.id),
    ]


def apply(
    conn: Connection,
    principal: Principal,
    current: store.MemoryRow,
    change: Change,
    source: str,
    keep_revisions: int = 0,
    *,
    also: Sequence[batch.Statement] = (),
) -> store.MemoryRow:
    """Make a change the memory's next revision (a no-op change returns it as it is), keeping
    only its newest keep_revisions revisions (0: all).

    The transaction's last write: its statements (and `also`, the caller's own) go as one
    batch with the COMMIT (store/batch.py), after the memory was read with its row locked.
    """
    edited = changed_row(current, change)
    if edited is None:
        batch.run(conn, also, commit=True)
        return current
    now = utcnow()
    # An org's audit entry is written before the batch, which commits.
    org_log.record(conn, principal, current.user_id, EDITED, memory_id=current.id)
    before = RevisionRow(
        current.revision,
        current.content,
        current.tags,
        current.contexts,
        current.source,
        current.updated_at,
    )
    edited = replace(edited, revision=current.revision + 1, updated_at=now)
    after = RevisionRow(edited.revision, edited.content, edited.tags, edited.contexts, source, now)
    statements = []
    if current.revision == 1:
        # Its first edit: the state it had until now becomes revision 1. A memory is at
        # revision 1 exactly until then (saves, confirms and imports store none), and every
        # edit stores its new revision, which the limit never drops: no read has to ask.
        statements.append(revisions.insert_statement(conn, current.user_id, current.id, before))
    statements += [
        *content_statements(
            conn,
            edited,
            edited.contexts is not current.contexts,
            tags_changed=edited.tags != current.tags,
        ),
        revisions.insert_statement(conn, edited.user_id, edited.id, after),
    ]
    oldest_kept = edited.revision - keep_revisions + 1
    if keep_revisions > 0 and oldest_kept > 1:
        # In the edit's own transaction: the history never holds more than the limit, and
        # the listing reports what went (dropped_revisions). Revisions are numbered from 1, so
        # below revision 2 there is nothing to drop.
        statements.append(revisions.drop_before_statement(edited.user_id, edited.id, oldest_kept))
    batch.run(conn, [*statements, *also], commit=True)
    return edited


def changeable(
    conn: Connection, principal: Principal, memory_id: str, if_match: IfMatch | None
) -> store.MemoryRow:
    """The memory, locked, once the principal may change it (acl) and If-Match names its
    current revision; 404/403/412 otherwise."""
    current = readable(conn, principal, memory_id, lock=True)
    acl.check_change(principal, current.user_id, current.created_by)
    check_match(if_match, current.revision)
    return current


def restore(
    db: Database,
    principal: Principal,
    memory_id: str,
    revision: int,
    if_match: IfMatch | None = None,
    keep_revisions: int = 0,
) -> dict[str, Any]:
    """Make an old revision's state the memory's newest revision (history only grows, up to
    keep_revisions)."""

    def work(conn: Connection) -> store.MemoryRow:
        current = changeable(conn, principal, memory_id, if_match)
        old = _revision(conn, current, revision)
        change = Change(old.content, old.tags, old.contexts)
        return apply(conn, principal, current, change, principal.source, keep_revisions)

    return shape(db.writing(work, batched=True))


def _revision(conn: Connection, current: store.MemoryRow, revision: int) -> RevisionRow:
    """One revision of the memory (its only one when never edited); 404 revision_not_found."""
    found = revisions.get_revision(conn, current.user_id, current.id, revision)
    if found is None and revision == current.revision:
        # Never edited: its current state is its one revision (no row stores it yet).
        return _as_revision(current)
    if found is None:
        raise RevisionNotFound(
            "This memory has no such revision (or no longer: past the server's limit, the "
            "oldest revisions are dropped).",
            field="revision",
        )
    return found


def _as_revision(row: store.MemoryRow) -> RevisionRow:
    """A never-edited memory as its one revision."""
    return RevisionRow(
        row.revision, row.content, row.tags, row.contexts, row.source, row.updated_at
    )


def history(
    db: Database,
    secret: bytes,
    principal: Principal,
    memory_id: str,
    limit: int,
    after: str | None,
) -> dict[str, Any]:
    """One page of a readable memory's revisions, newest first, with the next cursor and how
    many earlier revisions are no longer kept."""
    before: int | None = None
    if after:
        resumed = cursor.decode(secret, principal.user_id, f"revisions|{memory_id}", after)
        head, _, number = resumed.partition("@")
        if head != memory_id or not number.isdigit():
            raise InvalidCursor("The cursor was not issued for this listing.", field="cursor")
        before = int(number)
    with db.reading() as conn:
        current = readable(conn, principal, memory_id)
        rows = revisions.list_revisions(conn, current.user_id, memory_id, limit + 1, before)
        if not rows and before is None:
            rows = [_as_revision(current)]
        oldest = revisions.oldest(conn, current.user_id, memory_id) or current.revision
    more = len(rows) > limit
    rows = rows[:limit]
    mark = f"{memory_id}@{rows[-1].revision}" if more else None
    return {
        "revisions": [shape_revision(r) for r in rows],
        "next_cursor": cursor.encode(secret, principal.user_id, f"revisions|{memory_id}", mark)
        if mark
        else None,
        # Revisions are numbered from 1 without gaps, so those below the oldest kept were
        # dropped (MEMORY_BANK_MAX_REVISIONS_PER_MEMORY).
        "dropped_revisions": oldest - 1,
    }


def shape_revision(row: RevisionRow) -> dict[str, Any]:
    """A revision as the API returns it."""
    return {
        "revision": row.revision,
        "content": row.content,
        "tags": row.tags,
        "contexts": [shape_context(c) for c in row.contexts],
        "source": row.source,
        "edited_at": iso(row.edited_at),
    }
