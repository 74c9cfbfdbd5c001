"""What one running app shares with its handlers: settings, database, secrets, spec facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connexion import context as connexion_context
from sqlalchemy import Engine

from memory_bank.settings import Settings
from memory_bank.spec import Requirement
from memory_bank.store.database import Database

STATE_KEY = "memory_bank"


@dataclass
class AppState:
    """The app's shared, read-mostly state."""

    settings: Settings
    # The database: its pools and what a write does (store/database.py).
    db: Database
    secret: bytes
    spec: dict[str, Any]
    # operationId -> what it needs of its caller, from the spec (enforced in http/security.py).
    requirements: dict[str, Requirement] = field(default_factory=dict)
    # The rate limits (http.ratelimit.Limiter; typed loosely: state imports no HTTP room).
    limiter: Any = None
    # Semantic search (domain.semantic.Semantic), None when MEMORY_BANK_EMBEDDINGS is off.
    semantic: Any = None

    @property
    def engine(self) -> Engine:
        """The database's main pool (for maintenance and for tests that inspect rows)."""
        return self.db.engine


def dispose(state: AppState) -> None:
    """Close the app's database pools (and semantic search's query threads)."""
    if state.semantic is not None:
        state.semantic.close()
    state.db.dispose()


def shutdown(state: AppState) -> None:
    """At the end of a process, its workers stopped: release the model's runtime once its runs
    end (one still running when the interpreter stops aborts the process), then the pools."""
    if state.semantic is not None:
        state.semantic.release()
    dispose(state)


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
