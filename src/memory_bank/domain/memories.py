"""The memory domain: validate and normalise input, call storage, shape the output."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from memory_bank.auth import Principal
from memory_bank.domain import acl, cursor, org_log, similar
from memory_bank.domain.bodies import NewMemory
from memory_bank.domain.semantic import Semantic
from memory_bank.errors import MemoryNotFound, QuotaExceeded
from memory_bank.ids import is_id, iso, new_id, utcnow
from memory_bank.search import fusion
from memory_bank.search import index as search_index
from memory_bank.search.document import postings_of
from memory_bank.search.merge import merged
from memory_bank.store import data_keys, drafts, postings
from memory_bank.store import memories as store
from memory_bank.store.database import Database

log = logging.getLogger("memory_bank.memories")
NOT_FOUND = "No memory with this id."
# How long a deleted memory's id is remembered, so that a retried delete answers 204 again.
TOMBSTONE_KEPT = timedelta(hours=24)


def save(
    db: Database,
    principal: Principal,
    new: NewMemory,
    max_memories: int = 0,
    hints: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """Save a memory for the principal, or its org (scope "org", when allowed); the source
    comes from the credential. Returns the memory and the similar ones already kept (hints
    on), or, with dedupe "skip" and an exact duplicate kept, that one and None."""
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
        row = store.insert_memory(
            conn, owner, content, tags, contexts, index, memory_id=memory_id, commit=True
        )
        return row, True

    row, created = db.writing(work, batched=True)
    if not created:
        return shape(row), None
    # Read after the commit, outside the write: the hint never holds a write lock.
    alike = _hints_after_commit(db, owner.user_id, row.id, content) if hints else []
    if not acl.may_read(principal):
        # A key that may only write learns nothing of what else is kept: ids and scores.
        alike = [{"id": hint["id"], "score": hint["score"]} for hint in alike]
    return shape(row), alike


def _hints_after_commit(
    db: Database, owner: str, memory_id: str, content: str
) -> list[dict[str, Any]]:
    """The similar-memory hints for a committed save, or none when they cannot be had.

    The memory is stored by now: a failure here must not turn the save into an error, which a
    client would retry into a duplicate. It is logged (by type, never with content).
    """
    try:
        return similar.hints(db, owner, memory_id, content)
    except Exception as exc:
        log.warning("similar-memory hints failed after a save: %s", type(exc).__name__)
        return []


def owner_of(principal: Principal, scope: str | None) -> store.Owner:
    """Who a save with this scope belongs to (the principal, or its org); 403 if not allowed."""
    owner = acl.save_owner(principal, scope)
    return store.Owner(owner, principal.org_id, principal.source, principal.user_id)


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
            store.purge_tombstones(conn, owner, now - TOMBSTONE_KEPT)
            exists, created_by, revision = store.author(conn, owner, memory_id)
            if exists:
                acl.check_change(principal, owner, created_by)
                if check_match is not None:
                    check_match(revision)
                store.delete_memory(conn, owner, memory_id, now)
                org_log.record(conn, principal, owner, org_log.DELETED, memory_id=memory_id)
                return True
        # A retry of a delete that went through (the answer was lost, say) succeeds again:
        # the tombstone is the caller's own (or its org's), so this reveals nothing of others'.
        return any(
            store.was_deleted(conn, owner, memory_id) and acl.may_repeat_delete(principal, owner)
            for owner in readable
        )

    if not db.writing(work):
        raise MemoryNotFound(NOT_FOUND, field="id")


def sweep_tombstones(db: Database) -> int:
    """Forget every user's tombstones past their day (start-up, `memory-bank drafts purge`)."""
    before = utcnow() - TOMBSTONE_KEPT
    with db.reading() as conn:
        users = store.users_with_tombstones_before(conn, before)
    return sum(db.writing(_tombstone_purger(user_id, before)) for user_id in users)


def _tombstone_purger(user_id: str, before: datetime) -> Callable[[Connection], int]:
    """A write transaction that forgets one user's old tombstones."""
    return lambda conn: store.purge_tombstones(conn, user_id, before)


def page(
    db: Database,
    secret: bytes,
    principal: Principal,
    limit: int,
    after: str | None,
    scope: str = "all",
) -> dict[str, Any]:
    """One page of the memories the principal reads (scope: user, org or all), newest first,
    with the next cursor."""
    before_id = cursor.decode(secret, principal.user_id, "memories", after) if after else None
    rows: list[store.MemoryRow] = []
    with db.reading() as conn:
        for owner in acl.readable_owners(principal, scope):
            rows += store.list_memories(conn, owner, limit + 1, before_id)
    # Ids sort by creation time, so the owners' pages merge into one newest-first page.
    rows.sort(key=lambda row: row.id, reverse=True)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = (
        cursor.encode(secret, principal.user_id, "memories", rows[-1].id) if more else None
    )
    return {"memories": [shape(r) for r in rows], "next_cursor": next_cursor}


def find(
    db: Database,
    principal: Principal,
    query: str,
    limit: int,
    scope: str = "all",
    mode: str | None = None,
    semantic: Semantic | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """The memories the principal reads (scope: user, org or all) that best match a query,
    with scores, best first, and the mode that ranked them.

    mode: "lexical" (BM25), "semantic" (cosine) or "hybrid" (search/fusion.py); the default is
    hybrid when semantic search is on. Without it, or when the query cannot be embedded in time,
    the answer is lexical and says so.
    """
    wanted = mode or ("hybrid" if semantic is not None else "lexical")
    found: dict[str, store.MemoryRow] = {}
    # The query is embedded on another thread while BM25 ranks here (onnxruntime and a remote
    # provider's network wait both release the GIL), so hybrid costs about the larger of the
    # two, not their sum.
    pending = semantic.begin(query) if wanted != "lexical" and semantic is not None else None
    with db.reading() as conn:
        owners = acl.readable_owners(principal, scope)
        rankings = _candidates(conn, owners, query, limit) if wanted == "hybrid" and pending else {}
        query_vector = pending() if pending is not None else None
        if query_vector is None or semantic is None:
            used, hits = "lexical", _lexical(conn, owners, query, limit)
        else:
            used = wanted
            hits = _semantic(conn, owners, limit, wanted, semantic, query_vector, rankings)
        for owner in owners:
            ids = [mid for who, mid, _ in hits if who == owner]
            found |= store.get_memories(conn, owner, ids)
    results = []
    for _, mid, score in hits:
        if mid in found:
            item = shape(found[mid])
            item["score"] = round(score, 6)
            results.append(item)
    return results, used


def _lexical(
    conn: Connection, owners: list[str], query: str, limit: int
) -> list[tuple[str, str, float]]:
    """BM25 over each owner's index, merged; each owner's index ranks with its own statistics."""
    # With encryption on, postings hold keyed hashes of terms: each owner's (a user's, an
    # org's) query terms are hashed with that owner's key.
    return merged(
        (
            (o, search_index.search(conn, o, query, limit, data_keys.sealer(conn, o).term_forms))
            for o in owners
        ),
        limit,
    )


def _candidates(
    conn: Connection, owners: list[str], query: str, limit: int
) -> dict[str, tuple[search_index.Ranking, float]]:
    """Each owner's BM25 candidates for the blend and their coverage of the query."""
    n = max(fusion.BLEND.candidates, limit)
    found = {}
    for owner in owners:
        ranking = search_index.rank(conn, owner, query, n, data_keys.sealer(conn, owner).term_forms)
        found[owner] = (ranking, search_index.coverage(conn, owner, ranking))
    return found


def _semantic(
    conn: Connection,
    owners: list[str],
    limit: int,
    mode: str,
    semantic: Semantic,
    query_vector: Any,
    rankings: dict[str, tuple[search_index.Ranking, float]],
) -> list[tuple[str, str, float]]:
    """Cosine ("semantic") or the adaptive blend ("hybrid", over these BM25 candidates) of each
    owner's vectors; only vectors of the provider's model take part."""
    blend = fusion.BLEND
    lexical: list[tuple[tuple[str, str], float]] = []
    dense: list[tuple[tuple[str, str], float]] = []
    cosine: dict[tuple[str, str], float] = {}
    coverage = 0.0
    n = max(blend.candidates, limit)
    for owner in owners:
        matrix = semantic.matrix(conn, owner)
        scores = matrix.scores(query_vector)
        dense += [((owner, mid), s) for mid, s in matrix.top(scores, n)]
        if mode == "semantic":
            continue
        ranking, covered = rankings[owner]
        lexical += [((owner, mid), s) for mid, s in ranking.hits]
        coverage = max(coverage, covered)
        for mid, _ in ranking.hits:
            row = matrix.row_of.get(mid)
            if row is not None:
                cosine[(owner, mid)] = float(scores[row])
    if mode == "semantic":
        dense.sort(key=lambda item: (item[1], item[0][1]), reverse=True)
        return [(o, mid, s) for (o, mid), s in dense[:limit]]
    cosine.update(dense)
    weight = blend.dense_weight(coverage)
    fused = fusion.fuse(lexical, dense, cosine, weight, limit)
    return [(o, mid, s) for (o, mid), s in fused]


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
