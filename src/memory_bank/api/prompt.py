"""Handler for /v1/memory/prompt: the instructions snippet for hosts without MCP."""

from __future__ import annotations

from connexion import request

from memory_bank import state as app_state
from memory_bank.api.respond import Reply
from memory_bank.domain.prompt import render_prompt
from memory_bank.http.urls import base_url


def getMemoryPrompt() -> Reply:
    """The "## Memory Bank" Markdown snippet, with URLs for this server."""
    state = app_state.current()
    base = base_url(state.settings, request.scope)
    text = render_prompt(state.spec, base)
    return text, 200, {"Content-Type": "text/markdown"}
