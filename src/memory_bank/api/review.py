"""Handlers for the review queue (/v1/memory/drafts) and per-user review settings."""

from __future__ import annotations

from typing import Any

from memory_bank import state as app_state
from memory_bank.api.context import current_principal
from memory_bank.api.respond import Reply, empty_reply, json_reply
from memory_bank.domain import edits, review, review_settings


def getMemoryDrafts(limit: int = 20, cursor: str | None = None) -> Reply:
    """List the caller's drafts waiting for review, newest first."""
    state = app_state.current()
    return json_reply(review.page(state.db, state.secret, current_principal(), limit, cursor))


def getMemoryDraftById(id: str) -> Reply:
    """Fetch one of the caller's pending drafts."""
    state = app_state.current()
    return json_reply({"draft": review.fetch(state.db, current_principal(), id)})


def postMemoryDraftConfirm(id: str, body: dict[str, Any] | None = None) -> Reply:
    """Confirm a draft, optionally edited: it becomes a memory."""
    state = app_state.current()
    keep = state.settings.max_revisions_per_memory
    memory, created = review.confirm(state.db, current_principal(), id, body, keep)
    etag = edits.etag(memory["revision"])
    if not created:  # an edit's draft: the memory's next revision
        return json_reply({"memory": memory}, 200, {"ETag": etag})
    return json_reply(
        {"memory": memory}, 201, {"Location": f"/v1/memory/{memory['id']}", "ETag": etag}
    )


def postMemoryDraftReject(id: str) -> Reply:
    """Reject a draft: it is discarded."""
    state = app_state.current()
    review.reject(state.db, current_principal(), id)
    return empty_reply()


def getMemorySettings() -> Reply:
    """The caller's review settings."""
    state = app_state.current()
    return json_reply(review_settings.settings_view(state.db, state.settings, current_principal()))


def putMemorySettings(body: dict[str, Any]) -> Reply:
    """Change the caller's review settings."""
    state = app_state.current()
    changed = review_settings.change_settings(state.db, state.settings, current_principal(), body)
    return json_reply(changed)
