"""Handler for trading a one-time panel sign-in code for a short-lived key."""

from __future__ import annotations

from typing import Any

from connexion import context as connexion_context

from memory_bank import state as app_state
from memory_bank.api.respond import Reply, json_reply
from memory_bank.errors import NotFound, Unauthorized
from memory_bank.http import ratelimit
from memory_bank.ids import iso
from memory_bank.web import signin


def postPanelSession(body: dict[str, Any]) -> Reply:
    """Spend a sign-in code from `memory-bank serve` and return a panel key."""
    state = app_state.current()
    settings = state.settings
    if not settings.panel_enabled:
        raise NotFound("The panel is switched off on this server.")
    # A refused code is a failed authentication: it counts against the client like a bad key.
    client = ratelimit.client_address(connexion_context.scope)
    state.limiter.before_lookup(client, body["code"])
    try:
        session = signin.exchange(
            state.db, state.secret, body["code"], settings.panel_session_hours
        )
    except Unauthorized:
        state.limiter.failed(client, body["code"])
        raise
    reply = {
        "key": session.key,
        "user_id": session.user_id,
        "expires_at": iso(session.expires_at),
    }
    return json_reply(reply, 201, {"Cache-Control": "no-store"})
