"""Media types compared as RFC 9110 says: the type and subtype case-insensitively."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class MediaTypeMiddleware:
    """Lower-case a request's Content-Type type and subtype, keeping its parameters as sent.

    `Application/JSON` is `application/json` (RFC 9110 8.3.1), but Connexion and the MCP
    transport match the media type as written, so it was a 415.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] == "http":
            headers = scope.get("headers") or []
            if any(name == b"content-type" and _mixed(value) for name, value in headers):
                scope = dict(scope)
                scope["headers"] = [
                    (name, normalised(value) if name == b"content-type" else value)
                    for name, value in headers
                ]
        await self.app(scope, receive, send)


def normalised(value: bytes) -> bytes:
    """A Content-Type value with its type/subtype lower-cased (parameters untouched)."""
    kind, sep, rest = value.partition(b";")
    return kind.strip().lower() + sep + rest


def _mixed(value: bytes) -> bool:
    """Whether the type/subtype has an upper-case letter (the common case costs one scan)."""
    kind = value.partition(b";")[0]
    return kind != kind.lower()
