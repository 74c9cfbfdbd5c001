"""What one running app shares with its handlers: settings, engine, secrets, spec facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connexion import context as connexion_context
from sqlalchemy import Engine

from memory_bank.settings import Settings

STATE_KEY = "memory_bank"


@dataclass
class AppState:
    """The app's shared, read-mostly state."""

    settings: Settings
    engine: Engine
    secret: bytes
    spec: dict[str, Any]
    # operationId -> scopes its security requirement lists (enforced in auth.bearer_info).
    required_scopes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)


def current() -> AppState:
    """The state of the app serving the current request (set by the outer middleware)."""
    state: AppState = connexion_context.scope["state"][STATE_KEY]
    return state


def from_scope(scope: Any) -> AppState:
    """The state from an ASGI scope (set by the app's outer middleware)."""
    state: AppState = scope["state"][STATE_KEY]
    return state
