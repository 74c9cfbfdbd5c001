"""ASGI middleware around the whole app: shared state, body cap, security headers."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank import errors
from memory_bank.http.threads import limit_handler_threads
from memory_bank.state import STATE_KEY, AppState
from memory_bank.store import checkpoint

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class OuterMiddleware:
    """Give every request the app state, cap body size and add security headers."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] == "lifespan":
            # Start-up runs inside the server's event loop, whose thread pool this sizes.
            limit_handler_threads(self.state.settings.db_pool_size)
            # The lifespan lasts as long as the app serves: SQLite's checkpoints run beside it.
            with checkpoint.in_background(self.state.engine):
                await self.app(scope, receive, send)
            return
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = self.state
        path = scope.get("path", "")
        if _CONTROL.search(path):
            # A decoded path with a line break once matched a view but not Connexion's router,
            # so it skipped security. Kept escaped, the path routes (and authenticates) like
            # any other and names no resource.
            scope["path"] = _CONTROL.sub(lambda m: f"%{ord(m.group()):02X}", path)
        cap = self.state.settings.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > cap:
            await _too_large(send, cap)
            return
        if (
            declared is None
            and scope["type"] == "http"
            and _has_header(scope, b"transfer-encoding")
        ):
            # Connexion reads a body only when Content-Length announces one ("RequestBody is
            # required" otherwise), so a chunked body is read here, within the cap, and handed
            # on with its length.
            body = await _read_capped(receive, cap)
            if body is None:
                await _too_large(send, cap)
                return
            scope["headers"] = [
                (k, v) for k, v in scope["headers"] if k != b"transfer-encoding"
            ] + [(b"content-length", str(len(body)).encode())]
            receive = _replay(body, receive)
        seen = 0
        over = False

        async def capped_receive() -> Message:
            nonlocal seen, over
            if over:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    # Whoever reads the body (Connexion's validator may swallow exceptions)
                    # sees it end here; the answer is replaced by a 413 below.
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def secure_send(message: Message) -> None:
            if over:
                if message["type"] == "http.response.start":
                    await _too_large(send, cap)
                return
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, capped_receive, secure_send)


def _has_header(scope: Scope, name: bytes) -> bool:
    """Whether the request carries this header (names arrive lower-cased)."""
    return any(key == name for key, _ in scope.get("headers", []))


async def _read_capped(receive: Receive, cap: int) -> bytes | None:
    """The whole request body, or None as soon as it grows past cap bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away; what came is all there is
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive channel that gives the already-read body, then defers to the real one."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _content_length(scope: Scope) -> int | None:
    """The declared Content-Length, if any and valid."""
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _too_large(send: Send, cap: int) -> None:
    """Answer 413 with a problem body, the security headers and the connection closed."""
    too_large = errors.PayloadTooLarge(
        f"The request body is larger than {cap} bytes.", headers={"Connection": "close"}
    )
    status, headers, body = errors.render(too_large)
    headers += [h for h in SECURITY_HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
