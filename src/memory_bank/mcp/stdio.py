"""`memory-bank mcp`: the MCP server over stdio, on the embedded database or a remote server."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.server.stdio import stdio_server

from memory_bank import state as app_state
from memory_bank.mcp import manifest as manifest_module
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import build_server
from memory_bank.settings import Settings
from memory_bank.store import keys
from memory_bank.store.engine import writing

LOCAL_USER = "local"
SESSION_LABEL = "memory-bank mcp (stdio session; revoked when it ends)"


def run(
    settings: Settings,
    make_app: Callable[[Settings], Any],
    url: str | None = None,
    key: str | None = None,
    manifest_path: Path | None = None,
) -> int:
    """Serve MCP on stdin/stdout until the host closes the pipe (make_app builds the service
    for the embedded database; not called with url)."""
    manifest = manifest_module.load(manifest_path)
    with _client(settings, make_app, url, key) as (client, credential):
        # SIGTERM from a host should end the session cleanly so the session key gets revoked.
        signal.signal(signal.SIGTERM, _interrupt)
        executor = Executor(client, lambda: credential)
        server = build_server(manifest, executor)

        async def main() -> None:
            async with client, stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(main)
    return 0


def _interrupt(_signum: int, _frame: object) -> None:
    """Turn SIGTERM into the same clean exit as Ctrl-C."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def _client(
    settings: Settings, make_app: Callable[[Settings], Any], url: str | None, key: str | None
) -> Iterator[tuple[httpx.AsyncClient, str]]:
    """An httpx client for the REST API and the key to present to it."""
    if url:
        if not key:
            raise ValueError("--url needs --key (an API key for that server)")
        yield httpx.AsyncClient(base_url=url.rstrip("/"), timeout=60), key
        return
    # Nothing but JSON-RPC may reach stdout; start-up chatter goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        app = make_app(settings)
    # One log line per tool call's inner request is noise in a host's server log.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    state = app_state.state_of(app)
    transport = httpx.ASGITransport(app=app)
    client = httpx.AsyncClient(transport=transport, base_url=IN_PROCESS_BASE, timeout=60)
    if key:
        yield client, key
        return
    secret, record = writing(
        state.engine,
        lambda conn: keys.create_key(
            conn, LOCAL_USER, ("mcp:read", "mcp:write"), "mcp-stdio", label=SESSION_LABEL
        ),
    )
    try:
        yield client, secret
    finally:
        # A host that closed our stdin sends SIGTERM after a short grace; let the revoke finish.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _revoke(state.engine, record.id)
        app_state.dispose(state)


def _revoke(engine: Any, key_id: str) -> None:
    """Revoke the session key; a failure here must not hide the session's own outcome."""
    with contextlib.suppress(Exception):
        writing(engine, lambda conn: keys.revoke_key(conn, key_id))
