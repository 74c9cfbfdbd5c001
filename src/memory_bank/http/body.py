"""Request bodies: a size cap, a deadline, and chunked bodies read whole so Connexion can
validate them."""

from __future__ import annotations

import time

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank import errors


class BodyLimitMiddleware:
    """Answer 413 when a body is declared or turns out larger than cap bytes."""

    def __init__(self, app: ASGIApp, cap: int) -> None:
        self.app = app
        self.cap = cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.cap
        declared = _content_length(scope)
        if declared is not None and declared > cap:
            await _too_large(send, cap)
            return
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

        async def capped_send(message: Message) -> None:
            if not over:
                await send(message)
            elif message["type"] == "http.response.start":
                await _too_large(send, cap)

        await self.app(scope, capped_receive, capped_send)


class BodyDeadlineMiddleware:
    """Answer 408 (and close) when a request body takes longer than `seconds` to arrive.

    Servers time out idle connections between requests, not a body that trickles in: a client
    sending one byte a minute would hold a connection and a handler forever. The deadline runs
    from the start of the request until the last body chunk; waiting for a disconnect after
    that (streaming answers do) is not limited.
    """

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http" or self.seconds <= 0:
            await self.app(scope, receive, send)
            return
        deadline = time.monotonic() + self.seconds
        complete = False
        late = False

        async def timed_receive() -> Message:
            nonlocal complete, late
            if complete:
                return await receive()
            if late:
                return {"type": "http.request", "body": b"", "more_body": False}
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                # Whoever reads the body sees it end here; the answer becomes a 408 below.
                late = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        async def timed_send(message: Message) -> None:
            if not late:
                await send(message)
            elif message["type"] == "http.response.start":
                await errors.send(
                    send,
                    errors.RequestTimeout(
                        f"The request body did not arrive within {self.seconds:g} seconds.",
                        headers={"Connection": "close"},
                    ),
                )

        await self.app(scope, timed_receive, timed_send)


class ChunkedBodyMiddleware:
    """Read a chunked request body whole and hand it on with a Content-Length.

    Connexion reads a body only when Content-Length announces one ("RequestBody is required"
    otherwise). Runs inside BodyLimitMiddleware, so what it reads is already capped.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if (
            scope["type"] != "http"
            or _content_length(scope) is not None
            or not any(key == b"transfer-encoding" for key, _ in scope.get("headers", []))
        ):
            await self.app(scope, receive, send)
            return
        body = await _read_all(receive)
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"transfer-encoding"] + [
            (b"content-length", str(len(body)).encode())
        ]
        await self.app(scope, _replay(body, receive), send)


async def _read_all(receive: Receive) -> bytes:
    """The whole request body (what came before the client went away, if it did)."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
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
    """Answer 413 and close the connection (the rest of the body is not read)."""
    await errors.send(
        send,
        errors.PayloadTooLarge(
            f"The request body is larger than {cap} bytes.", headers={"Connection": "close"}
        ),
    )
