"""Streamable HTTP at /mcp on the main server, bearer-protected, with RFC 9728 metadata."""

from __future__ import annotations

import contextvars
import json
from typing import Any

import anyio.to_thread
import httpx
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import ASGIApp, Receive, Scope, Send

from memory_bank import errors
from memory_bank.errors import (
    ApiError,
    InsufficientScope,
    ServiceUnavailable,
    Unauthorized,
    quoted,
)
from memory_bank.http import ratelimit
from memory_bank.http.scope import header
from memory_bank.http.security import Requirement, admitted
from memory_bank.http.urls import base_url
from memory_bank.mcp import manifest as manifest_module
from memory_bank.mcp import oauth, transport
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import REQUEST_HOST, build_server, semantic_embedder
from memory_bank.state import AppState

MCP_PATHS = ("/mcp", "/mcp/")
METADATA_PATH = oauth.METADATA_PATH
# The JSON-RPC error code of a request /mcp refuses before the MCP server sees it (a key
# missing or without the scope, a rate limit, a foreign Origin): "Invalid Request". Not
# -32001, which both official SDKs read as a request timeout.
REFUSED = -32600
# A key needs one of these to use /mcp at all; each tool's own scope is checked by REST.
MCP_SCOPES = ("mcp:read", "mcp:write")

# The presented key of the /mcp request being served; tool calls forward it to REST.
_credential: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memory_bank_mcp_credential", default=None
)
# That key's scopes: tools/list and search_capabilities show only what it may use.
_scopes: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "memory_bank_mcp_scopes", default=()
)


class McpMiddleware:
    """Serve /mcp and the protected-resource metadata; pass everything else on.

    loopback is the whole app, outermost middleware included: a tool call becomes the REST
    request its manifest binding describes and travels the same road as one from outside
    (host check, body cap, logs, rate limits, the bearer hook, validation), so MCP can never
    skip a check that REST makes.
    """

    def __init__(self, app: ASGIApp, state: AppState, loopback: ASGIApp) -> None:
        self.app = app
        self.state = state
        self.loopback = loopback
        self.origins = transport.allowed_origins(state.settings)
        self.manager: StreamableHTTPSessionManager | None = None
        self._server: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one ASGI call."""
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        path = scope.get("path", "")
        if scope["type"] == "http" and oauth.answers(scope):
            await oauth.answer(scope, send)
            return
        if scope["type"] != "http" or (
            path not in MCP_PATHS and not path.startswith(METADATA_PATH)
        ):
            await self.app(scope, receive, send)
            return
        if path.startswith(METADATA_PATH):
            await self._metadata(scope, send)
            return
        await self._mcp(scope, receive, send)

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the MCP session manager for as long as the app lives (its task group)."""
        # A fresh manager per lifespan: one instance can only be run once.
        manager = StreamableHTTPSessionManager(
            app=self._mcp_server(), stateless=True, json_response=True
        )
        async with manager.run():
            self.manager = manager
            try:
                await self.app(scope, receive, send)
            finally:
                self.manager = None

    def _mcp_server(self) -> Any:
        """The MCP server over this app, calling its REST API in-process."""
        if self._server is None:
            client = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=self.loopback),
                base_url=IN_PROCESS_BASE,
                timeout=60,
            )
            executor = Executor(client, _credential.get)
            tools = manifest_module.load()
            self._server = build_server(
                tools,
                executor,
                lambda: tools.for_scopes(_scopes.get()),
                semantic_embedder(self.state.semantic, tools),
            )
        return self._server

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the transport rules and the bearer key, then hand the request to the SDK with
        the key in context."""
        refused = transport.refusal(scope, self.origins)
        if refused is not None:
            if scope.get("method") == transport.ALLOWED:
                await _rpc_error(send, refused)  # a JSON-RPC client reads this one
            else:
                await errors.send(send, refused)
            return
        base = base_url(self.state.settings, scope)
        token = _bearer(scope)
        try:
            if not token:
                raise Unauthorized.missing_key()
            # The same check (and rate limit) as every REST call; each tool's own scope is
            # then checked by REST.
            caller = await anyio.to_thread.run_sync(
                admitted, self.state, scope, token, Requirement()
            )
            if not any(caller.principal.has(s) for s in MCP_SCOPES):
                raise InsufficientScope(MCP_SCOPES[0], acceptable=MCP_SCOPES)
            if self.manager is None:
                raise ServiceUnavailable("The MCP endpoint is not running (ASGI lifespan is off).")
        except ApiError as exc:
            await _problem(send, exc, base)
            return
        reset = _credential.set(token)
        reset_scopes = _scopes.set(caller.principal.scopes)
        reset_host = REQUEST_HOST.set(header(scope, b"host"))
        # The tool call has paid for its key: the REST request it makes in-process does not.
        paid = ratelimit.charged.set(caller.principal.key_id)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            ratelimit.charged.reset(paid)
            REQUEST_HOST.reset(reset_host)
            _scopes.reset(reset_scopes)
            _credential.reset(reset)

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """RFC 9728 protected-resource metadata for /mcp."""
        base = base_url(self.state.settings, scope)
        body = json.dumps(oauth.metadata(base, MCP_SCOPES)).encode()
        await _send(send, 200, body, [(b"content-type", b"application/json")])


def metadata_url(base: str) -> str:
    """Where the protected-resource metadata lives."""
    return f"{base}{METADATA_PATH}"


def _bearer(scope: Scope) -> str | None:
    """The bearer token of a request, if any."""
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            # Split as Connexion splits it for REST, so both read the same key from a header.
            parts = value.decode("latin-1").split(maxsplit=1)
            if len(parts) != 2 or parts[0].lower() != "bearer":
                return None
            return parts[1].strip() or None
    return None


async def _problem(send: Send, exc: ApiError, base: str) -> None:
    """A refusal before the SDK sees the request; 401 and 403 point at the metadata (RFC 9728
    section 5.1)."""
    challenge = exc.headers.get("WWW-Authenticate")
    if challenge is not None:
        exc.headers["WWW-Authenticate"] = (
            f"{challenge}, resource_metadata={quoted(metadata_url(base))}"
        )
    await _rpc_error(send, exc)


async def _rpc_error(send: Send, exc: ApiError) -> None:
    """A refusal as a JSON-RPC error in an application/json body, with the same status and
    headers (WWW-Authenticate) as REST's problem.

    MCP clients read a JSON-RPC error from any status, but report a problem+json body only as
    a bare status (the Python SDK: "Server returned an error response"), so the user would
    never see how to get a key. The message is the problem's detail; `data` is the problem.
    The id is null: the request is refused before its body is read."""
    document = exc.document()
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": REFUSED, "message": exc.detail, "data": document},
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in exc.headers.items()),
    ]
    await _send(send, exc.status, body, headers)


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Send a complete response."""
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
