"""Handlers for /v1/memory: save, search, list, get, edit, revisions and delete."""

from __future__ import annotations

from typing import Any

from memory_bank import state as app_state
from memory_bank.api.context import current_header, current_principal, current_user_settings
from memory_bank.api.respond import Reply, empty_reply, json_reply
from memory_bank.domain import edits, filters, listing, memories, search, writes
from memory_bank.domain.etags import HEADER, IfMatch, parse_if_match


def postMemory(body: dict[str, Any]) -> Reply:
    """Save a memory for the caller, or a draft for review when review applies to them."""
    state = app_state.current()
    done = writes.save(
        state.db,
        state.settings,
        current_principal(),
        current_user_settings(),
        body,
        state.semantic,
    )
    if done.draft is not None:
        location = f"/v1/memory/drafts/{done.draft['draft']['id']}"
        return json_reply(done.draft, 202, {"Location": location})
    assert done.memory is not None
    _wake(state)
    etag = edits.etag(done.memory["revision"])
    if not done.written:  # dedupe "skip" found this exact memory already kept
        return json_reply({"memory": done.memory, "similar": []}, 200, {"ETag": etag})
    return json_reply(
        {"memory": done.memory, "similar": done.similar},
        201,
        {"Location": f"/v1/memory/{done.memory['id']}", "ETag": etag},
    )


def getMemorySearch(
    q: str,
    limit: int = 20,
    scope: str = "all",
    mode: str | None = None,
    tag: list[str] | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    updated_after: str | None = None,
    source: str | None = None,
    min_score: float | None = None,
) -> Reply:
    """Search the caller's memories and their org's (those that pass the filters) that reach the
    relevance floor (min_score; the calibrated default when absent)."""
    state = app_state.current()
    only = filters.parse(tag, created_after, created_before, updated_after, source)
    principal = current_principal()
    found, used, unavailable = search.find(
        state.db, principal, q, limit, scope, mode, state.semantic, only, min_score
    )
    body: dict[str, Any] = {"results": found, "mode": used}
    if unavailable:
        body["unavailable"] = unavailable
    return json_reply(body)


def getMemory(
    limit: int = 20,
    cursor: str | None = None,
    scope: str = "all",
    tag: list[str] | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    updated_after: str | None = None,
    source: str | None = None,
) -> Reply:
    """List the caller's memories and their org's that pass the filters, newest first."""
    state = app_state.current()
    only = filters.parse(tag, created_after, created_before, updated_after, source)
    principal = current_principal()
    return json_reply(listing.page(state.db, state.secret, principal, limit, cursor, scope, only))


def getMemoryById(id: str) -> Reply:
    """Fetch one of the caller's memories."""
    state = app_state.current()
    return _memory_reply(memories.fetch(state.db, current_principal(), id))


def patchMemoryById(id: str, body: dict[str, Any]) -> Reply:
    """Edit one of the caller's memories (merge-patch), or propose the edit for review."""
    state = app_state.current()
    principal, user_settings = current_principal(), current_user_settings()
    done = writes.edit(state.db, state.settings, principal, user_settings, id, body, _if_match())
    if done.draft is not None:
        location = f"/v1/memory/drafts/{done.draft['draft']['id']}"
        return json_reply(done.draft, 202, {"Location": location})
    assert done.memory is not None
    if done.written:
        _wake(state)
    return _memory_reply(done.memory)


def getMemoryRevisions(id: str, limit: int = 20, cursor: str | None = None) -> Reply:
    """List a memory's revisions, newest first."""
    state = app_state.current()
    found = edits.history(state.db, state.secret, current_principal(), id, limit, cursor)
    return json_reply(found)


def postMemoryRestore(id: str, revision: int) -> Reply:
    """Make an old revision of a memory its newest one."""
    state = app_state.current()
    keep = state.settings.max_revisions_per_memory
    restored = edits.restore(state.db, current_principal(), id, revision, _if_match(), keep)
    _wake(state)
    return _memory_reply(restored)


def deleteMemoryById(id: str) -> Reply:
    """Delete one of the caller's memories (If-Match: only at that revision)."""
    state = app_state.current()
    if_match = _if_match()
    memories.remove(state.db, current_principal(), id, None if if_match is None else if_match.check)
    return empty_reply()


def _if_match() -> IfMatch | None:
    """The request's If-Match, parsed (RFC 9110); a malformed one is a 400 naming it."""
    return parse_if_match(current_header(HEADER))


def _memory_reply(memory: dict[str, Any]) -> Reply:
    """A MemoryEnvelope with the memory's ETag."""
    return json_reply({"memory": memory}, 200, {"ETag": edits.etag(memory["revision"])})


def _wake(state: app_state.AppState) -> None:
    """Tell the embedding worker a job was queued, so it need not wait for its next poll."""
    if state.semantic is not None:
        state.semantic.wake.set()
