"""What one running app shares with its handlers: settings, engine, secrets, spec facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connexion import context as connexion_context
from sqlalchemy import Engine

from memory_bank.settings import Settings
from memory_bank.spec import Requirement
from memory_bank.store.engine import dispose_engines

STATE_KEY = "memory_bank"


@dataclass
class AppState:
    """The app's shared, read-mostly state."""

    settings: Settings
    engine: Engine
    secret: bytes
    spec: dict[str, Any]
    # The pool for the credential check (store.engine.make_auth_engine); may be engine itself.
    auth_engine: Engine
    # operationId -> what it needs of its caller, from the spec (enforced in http/security.py).
    requirements: dict[str, Requirement] = field(default_factory=dict)
    # The rate limits (http.ratelimit.Limiter; typed loosely: state imports no HTTP room).
    limiter: Any = None
    # Semantic search (domain.semantic.Semantic), None when MEMORY_BANK_EMBEDDINGS is off.
    semantic: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


def dispose(state: AppState) -> None:
    """Close the app's database pools (and semantic search's query threads)."""
    if state.semantic is not None:
        state.semantic.close()
    dispose_engines(state.engine, state.auth_engine)


def state_of(app: Any) -> AppState:
    """The shared state of an app made by create_app (for the CLI and for tests)."""
    state: AppState = app.memory_bank_state
    return state


def current() -> AppState:
    """The state of the app serving the current request (set by the outer middleware)."""
    state: AppState = connexion_context.scope["state"][STATE_KEY]
    return state


def from_scope(scope: Any) -> AppState:
    """The state from an ASGI scope (set by the app's outer middleware)."""
    state: AppState = scope["state"][STATE_KEY]
    return state
