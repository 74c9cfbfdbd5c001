"""What lives as long as the app: its shared state, given to every request, and its background
work (handler threads sized, SQLite checkpoints)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from starlette.types import ASGIApp, Receive, Scope, Send

from memory_bank.domain import vector_jobs
from memory_bank.http.threads import limit_handler_threads
from memory_bank.state import STATE_KEY, AppState
from memory_bank.store import checkpoint


class AppStateMiddleware:
    """Give every request the app's shared state (settings, engines, spec facts)."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] in {"http", "websocket"}:
            scope.setdefault("state", {})[STATE_KEY] = self.state
        await self.app(scope, receive, send)


class BackgroundWorkMiddleware:
    """While the app serves: handler threads sized for the pool, SQLite checkpoints running."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        # Start-up runs inside the server's event loop, whose thread pool this sizes.
        limit_handler_threads(self.state.settings.db_pool_size)
        # The lifespan lasts as long as the app serves: SQLite's checkpoints and the embedding
        # worker (when semantic search is on) run beside it.
        with checkpoint.in_background(self.state.db.engine), embedding_worker(self.state):
            await self.app(scope, receive, send)


def embedding_worker(state: AppState) -> AbstractContextManager[None]:
    """The embedding worker for as long as a block runs, when semantic search and the worker
    are on (a lifespan, or `memory-bank mcp`, whose in-process transport runs none)."""
    return vector_jobs.running(
        state.db,
        state.semantic if state.settings.embeddings_worker else None,
        state.settings.embeddings_lease_seconds,
    )
