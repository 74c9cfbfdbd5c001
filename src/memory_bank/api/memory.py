"""Handlers for /v1/memory: save, search, list, get and delete."""

from __future__ import annotations

from typing import Any

from memory_bank import memories
from memory_bank import state as app_state
from memory_bank.api.respond import Reply, empty_reply, json_reply
from memory_bank.auth import current_principal


def postMemory(body: dict[str, Any]) -> Reply:
    """Save a memory for the caller."""
    state = app_state.current()
    max_memories = state.settings.max_memories_per_user
    memory = memories.save(state.engine, current_principal(), body, max_memories)
    return json_reply({"memory": memory}, 201, {"Location": f"/v1/memory/{memory['id']}"})


def getMemorySearch(q: str, limit: int = 20) -> Reply:
    """Search the caller's memories."""
    state = app_state.current()
    return json_reply({"results": memories.find(state.engine, current_principal(), q, limit)})


def getMemory(limit: int = 20, cursor: str | None = None) -> Reply:
    """List the caller's memories, newest first."""
    state = app_state.current()
    return json_reply(memories.page(state.engine, state.secret, current_principal(), limit, cursor))


def getMemoryById(id: str) -> Reply:
    """Fetch one of the caller's memories."""
    state = app_state.current()
    return json_reply({"memory": memories.fetch(state.engine, current_principal(), id)})


def deleteMemoryById(id: str) -> Reply:
    """Delete one of the caller's memories."""
    state = app_state.current()
    memories.remove(state.engine, current_principal(), id)
    return empty_reply()
