"""What middlewares read off an ASGI scope: headers and the operation Connexion routed to."""

from __future__ import annotations

from starlette.types import Scope


def header(scope: Scope, name: bytes) -> str | None:
    """One request header (first occurrence), decoded as latin-1."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def expect_operation_id(scope: Scope) -> None:
    """Make the operation Connexion routes this request to visible here, afterwards.

    Connexion records it in scope["extensions"], creating that dict when it is missing, but by
    then it holds a copy of the scope: under uvicorn, which sends no "extensions", the record
    was lost and every request counted as "other". A dict made here is shared by the copies.
    """
    scope.setdefault("extensions", {})


def operation_id(scope: Scope) -> str:
    """The spec operation Connexion routed this request to, or a stand-in for other routes."""
    routing = scope.get("extensions", {}).get("connexion_routing", {})
    found = routing.get("operation_id")
    if found:
        return str(found)
    return "other"
