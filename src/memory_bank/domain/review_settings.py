"""A user's own review settings: their opt-in, and what is in effect for them with the
server's setting (GET/PUT /v1/memory/settings)."""

from __future__ import annotations

from typing import Any

from memory_bank.auth import Principal
from memory_bank.settings import Settings
from memory_bank.store import user_settings
from memory_bank.store.database import Database


def settings_view(db: Database, settings: Settings, principal: Principal) -> dict[str, Any]:
    """The caller's review settings and what is in effect for them."""
    with db.reading() as conn:
        stored = user_settings.get(conn, principal.user_id)
    return _settings_body(settings, stored.review_required)


def change_settings(
    db: Database, settings: Settings, principal: Principal, body: dict[str, Any]
) -> dict[str, Any]:
    """Change the caller's own review opt-in."""
    wanted = body.get("review_required")
    changed = db.writing(
        lambda conn: user_settings.change(conn, principal.user_id, review_required=wanted),
    )
    return _settings_body(settings, changed.review_required)


def _settings_body(settings: Settings, review_required: bool) -> dict[str, Any]:
    """The UserSettings response."""
    return {
        "review_required": review_required,
        "server_review_required": settings.review_required,
        "review_in_effect": review_required or settings.review_required,
        "draft_ttl_hours": settings.draft_ttl_hours,
    }
