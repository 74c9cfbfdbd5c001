"""CORS: off unless origins are configured; then only those origins, with preflights."""

from __future__ import annotations

from typing import Any

from starlette.middleware.cors import CORSMiddleware

ALLOWED_METHODS = ["GET", "POST", "DELETE", "OPTIONS"]
# The MCP transport's own headers too, or a browser-based MCP client fails its preflight.
ALLOWED_HEADERS = [
    *("Authorization", "Content-Type", "X-Request-Id"),
    *("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id"),
]
EXPOSED_HEADERS = [
    *("Location", "Retry-After", "X-Request-Id", "WWW-Authenticate", "Mcp-Session-Id"),
]


def origins(setting: str) -> list[str]:
    """The configured origins (comma-separated, trailing slashes ignored)."""
    return [o.strip().rstrip("/") for o in setting.split(",") if o.strip()]


def cors_middleware(app: Any, allowed: list[str]) -> Any:
    """Starlette's CORS middleware for exactly these origins (no wildcard, no cookies)."""
    return CORSMiddleware(
        app,
        allow_origins=allowed,
        allow_methods=ALLOWED_METHODS,
        allow_headers=ALLOWED_HEADERS,
        expose_headers=EXPOSED_HEADERS,
        allow_credentials=False,
        max_age=600,
    )
