"""`memory-bank mcp`: the MCP server over stdio, on the embedded database or a remote server."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.server.stdio import stdio_server

from memory_bank import state as app_state
from memory_bank.http.lifespan import embedding_worker
from memory_bank.mcp import manifest as manifest_module
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.manifest import Manifest
from memory_bank.mcp.server import build_server, semantic_embedder
from memory_bank.mcp.stdio_auth import CannotStart, check_key, local_key, remote_tools
from memory_bank.settings import Settings


@dataclass(frozen=True)
class Session:
    """What a stdio session talks to and as whom: a client for the REST API, the key it
    presents, and the tools that key may use; in-process, also the app's semantic search
    (search_capabilities ranks English phrases by meaning with its model once it is ready)."""

    client: httpx.AsyncClient
    key: str
    view: Manifest
    semantic: Any = None


def run(
    settings: Settings,
    make_app: Callable[[Settings], Any],
    url: str | None = None,
    key: str | None = None,
    manifest_path: Path | None = None,
) -> int:
    """Serve MCP on stdin/stdout until the host closes the pipe (make_app builds the service
    for the embedded database; not called with url). CannotStart when the session could not
    act: a refused key, an unreachable server."""
    manifest = manifest_module.load(manifest_path)
    with _session(settings, make_app, manifest, url, key) as session:
        # SIGTERM from a host should end the session as cleanly as Ctrl-C.
        signal.signal(signal.SIGTERM, _interrupt)
        executor = Executor(session.client, lambda: session.key, key_setting="MEMORY_BANK_MCP_KEY")
        server = build_server(
            manifest, executor, lambda: session.view, semantic_embedder(session.semantic, manifest)
        )

        async def main() -> None:
            async with session.client, stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(main)
    return 0


def _interrupt(_signum: int, _frame: object) -> None:
    """Turn SIGTERM into the same clean exit as Ctrl-C."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def _session(
    settings: Settings,
    make_app: Callable[[Settings], Any],
    manifest: Manifest,
    url: str | None,
    key: str | None,
) -> Iterator[Session]:
    """The session, its key checked before any tool is listed."""
    if url:
        if not key:
            raise CannotStart("--url needs --key (an API key for that server)")
        names = remote_tools(url, key)
        client = httpx.AsyncClient(base_url=url.rstrip("/"), timeout=60)
        yield Session(client, key, manifest.only(names))
        return
    # Nothing but JSON-RPC may reach stdout; start-up chatter goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        app = make_app(settings)
    state = app_state.state_of(app)
    try:
        if key:
            scopes = check_key(state.db, key)
        else:
            key, scopes = local_key(state.db, state.secret)
        # One log line per tool call's inner request is noise in a host's server log.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url=IN_PROCESS_BASE, timeout=60)
        # The in-process transport runs no lifespan, so the embedding worker that `serve`
        # runs there is started here: saved memories get their vectors in this process too.
        # Leaving this block stops and joins it.
        with embedding_worker(state):
            yield Session(client, key, manifest.for_scopes(scopes), state.semantic)
    finally:
        # Then, in this order, the model's runtime (once the runs under way end: a model run
        # left on a thread at interpreter exit aborts the process) and the database pools.
        app_state.shutdown(state)
