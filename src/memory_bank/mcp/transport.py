"""The streamable HTTP transport's rules, checked before the SDK sees a request: POST only
(the server is stateless: no stream to GET, no session to DELETE), and a browser's Origin
must be one this service knows (the MCP transport's defence against DNS rebinding)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import Scope

from memory_bank import errors
from memory_bank.http import cors
from memory_bank.http.scope import header
from memory_bank.http.urls import LOOPBACK
from memory_bank.settings import Settings

ALLOWED = "POST"


@dataclass(frozen=True)
class AllowedOrigins:
    """Origins a browser may call /mcp from: configured ones, and any port on loopback."""

    exact: frozenset[str]

    def allows(self, origin: str) -> bool:
        """Whether an Origin header value is one of them."""
        value = origin.strip().lower().rstrip("/")
        if value in self.exact:
            return True
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError:
            return False
        return parts.scheme in {"http", "https"} and (parts.hostname or "") in LOOPBACK


def allowed_origins(settings: Settings) -> AllowedOrigins:
    """MEMORY_BANK_CORS_ORIGINS and the public URL's origin (loopback is always allowed)."""
    found = {o.lower() for o in cors.origins(settings.cors_origins)}
    if settings.public_url:
        public = urlsplit(settings.public_url)
        found.add(f"{public.scheme}://{public.netloc}".lower())
    return AllowedOrigins(frozenset(found))


def refusal(scope: Scope, origins: AllowedOrigins) -> errors.ApiError | None:
    """The problem for a request the transport refuses before authentication, if any."""
    if scope.get("method") != ALLOWED:
        return errors.MethodNotAllowed(
            "The MCP endpoint is stateless: send JSON-RPC messages with POST (no stream to "
            "GET, no session to DELETE).",
            headers={"Allow": ALLOWED},
        )
    origin = header(scope, b"origin")
    if origin is not None and not origins.allows(origin):
        return errors.OriginNotAllowed(
            "This Origin may not use the MCP endpoint; its operator can add it to "
            "MEMORY_BANK_CORS_ORIGINS.",
            field="Origin",
        )
    return None
