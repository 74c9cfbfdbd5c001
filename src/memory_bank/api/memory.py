"""Handlers for /v1/memory: save, search, list, get and delete."""

from __future__ import annotations

from typing import Any

from memory_bank import state as app_state
from memory_bank.api.context import current_principal, current_switches
from memory_bank.api.respond import Reply, empty_reply, json_reply
from memory_bank.domain import memories, review


def postMemory(body: dict[str, Any]) -> Reply:
    """Save a memory for the caller, or a draft for review when review applies to them."""
    state = app_state.current()
    principal = current_principal()
    scope = body.get("scope") if isinstance(body, dict) else None
    if review.needs_review(state.settings, principal, current_switches(), scope):
        envelope = review.submit(state.engine, state.settings, principal, body)
        location = f"/v1/memory/drafts/{envelope['draft']['id']}"
        return json_reply(envelope, 202, {"Location": location})
    memory = memories.save(state.engine, principal, body, state.settings.max_memories_per_user)
    if state.semantic is not None:
        state.semantic.wake.set()  # its embedding job is queued: no need to wait for a poll
    return json_reply({"memory": memory}, 201, {"Location": f"/v1/memory/{memory['id']}"})


def getMemorySearch(q: str, limit: int = 20, scope: str = "all", mode: str | None = None) -> Reply:
    """Search the caller's memories and their org's."""
    state = app_state.current()
    found, used = memories.find(
        state.engine, current_principal(), q, limit, scope, mode, state.semantic
    )
    return json_reply({"results": found, "mode": used})


def getMemory(limit: int = 20, cursor: str | None = None, scope: str = "all") -> Reply:
    """List the caller's memories and their org's, newest first."""
    state = app_state.current()
    principal = current_principal()
    return json_reply(memories.page(state.engine, state.secret, principal, limit, cursor, scope))


def getMemoryById(id: str) -> Reply:
    """Fetch one of the caller's memories."""
    state = app_state.current()
    return json_reply({"memory": memories.fetch(state.engine, current_principal(), id)})


def deleteMemoryById(id: str) -> Reply:
    """Delete one of the caller's memories."""
    state = app_state.current()
    memories.remove(state.engine, current_principal(), id)
    return empty_reply()
