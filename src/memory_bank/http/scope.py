"""Small helpers shared by the ASGI middlewares: headers, problem answers, routing facts."""

from __future__ import annotations

from typing import Any

from starlette.types import Scope, Send

from memory_bank.errors import PROBLEM_JSON, encode, problem_body


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


async def send_problem(
    send: Send,
    status: int,
    detail: str,
    code: str | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer with a problem+json body from middleware (before or instead of the app)."""
    body = encode(problem_body(status, detail, code=code))
    out: list[Any] = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})
