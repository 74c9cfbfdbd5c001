"""The service's own base URL, as links in answers spell it."""

from __future__ import annotations

from starlette.types import Scope

from memory_bank.http.scope import header
from memory_bank.settings import Settings


def base_url(settings: Settings, scope: Scope) -> str:
    """The configured public URL, else the scheme and Host the request was addressed to."""
    host = header(scope, b"host")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return settings.base_url(f"{scope.get('scheme', 'http')}://{host}")
