"""What OAuth-minded MCP hosts find when they look: API-key instructions at every step.

memory-bank issues API keys, not OAuth tokens. A host that gets a 401 follows the challenge's
`resource_metadata`, finds no authorization server, looks for one at the server's own origin,
and finally tries dynamic client registration (POST /register). Each of those answers here says
how to get a key, so the host's last error message (which it shows the user) is the way out,
not "registration rejected (HTTP 404)".
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Scope, Send

from memory_bank import errors
from memory_bank.errors import KEY_HELP

METADATA_PATH = "/.well-known/oauth-protected-resource"
# Where clients look for an authorization server (RFC 8414, OpenID Connect discovery).
SERVER_METADATA_PATHS = (
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
)
REGISTER_PATH = "/register"
# RFC 6749 section 5.2: no double quote or backslash in an error_description.
_NO_OAUTH = (
    "memory-bank does not support OAuth or dynamic client registration. Create an API key "
    "with memory-bank keys create --user <you> --scopes mcp:read,mcp:write and configure it "
    "in the client as the header Authorization: Bearer mb_..."
)


def metadata(base: str, scopes: tuple[str, ...]) -> dict[str, Any]:
    """RFC 9728 protected-resource metadata for /mcp, with how to get a key."""
    return {
        "resource": f"{base}/mcp",
        "resource_name": "memory-bank",
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
        "resource_documentation": f"{base}/docs",
        # Not an RFC 9728 field (extra ones are allowed): there is no authorization server.
        "api_key_instructions": KEY_HELP,
    }


def answers(scope: Scope) -> bool:
    """Whether this request is one of the OAuth discovery steps answered here."""
    path = scope.get("path", "")
    if path == REGISTER_PATH:
        return scope.get("method") == "POST"
    return scope.get("method") in {"GET", "HEAD"} and path.startswith(SERVER_METADATA_PATHS)


async def answer(scope: Scope, send: Send) -> None:
    """No authorization server here (404), and no client registration (RFC 7591 error)."""
    if scope.get("path") != REGISTER_PATH:
        detail = f"There is no OAuth authorization server here. {KEY_HELP}"
        await errors.send(send, errors.NotFound(detail))
        return
    body = json.dumps({"error": "invalid_client_metadata", "error_description": _NO_OAUTH})
    payload = body.encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
        (b"content-length", str(len(payload)).encode()),
    ]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
