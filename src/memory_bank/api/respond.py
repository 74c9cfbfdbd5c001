"""Shape handler return values the way Connexion wants them."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

Reply = tuple[Any, int, dict[str, str]] | Response


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A JSON body with its status; the content type is explicit because operations that
    also document problem+json errors have several response media types."""
    return body, status, {**(headers or {}), "Content-Type": "application/json"}


def empty_reply(status: int = 204) -> Reply:
    """A response without a body, and so without a content type (Connexion would pick one of
    the operation's media types and serialize an empty body into it)."""
    return Response(status_code=status)
