"""Structured request logs (one JSON line per request) and the X-Request-Id header."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank.http.scope import expect_operation_id, header, operation_id

ACCESS_LOGGER = "memory_bank.access"
REQUEST_ID_HEADER = b"x-request-id"
# An incoming id is kept only when it is short and plain, so it cannot forge log lines.
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")

log = logging.getLogger(ACCESS_LOGGER)


def _not_content_type_choice(record: logging.LogRecord) -> bool:
    """False for Connexion's per-request note that an operation takes several body types
    (PATCH takes merge-patch and plain JSON on purpose; each request validates its own)."""
    return not str(record.msg).startswith("this operation accepts multiple content types")


logging.getLogger("connexion.operations.openapi3").addFilter(_not_content_type_choice)


def configure_access_log(level: str) -> None:
    """Send access lines to stderr as bare JSON (the handler once per process)."""
    log.setLevel(level.upper())
    log.propagate = False
    if any(getattr(h, "_memory_bank", False) for h in log.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler._memory_bank = True  # type: ignore[attr-defined]
    log.addHandler(handler)


def request_id(scope: Scope) -> str:
    """The caller's X-Request-Id when it is sane, else a new one."""
    given = header(scope, REQUEST_ID_HEADER)
    if given and _SANE_ID.match(given):
        return given
    return uuid.uuid4().hex


def user_hash(user_id: str) -> str:
    """A short one-way handle for a user id: lines can be correlated, not read."""
    return hashlib.sha256(user_id.encode()).hexdigest()[:16]


class RequestLogMiddleware:
    """Give every response an X-Request-Id and log one JSON line per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        scope.setdefault("state", {})["request_id"] = rid
        expect_operation_id(scope)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != REQUEST_ID_HEADER
                ]
                headers.append((REQUEST_ID_HEADER, rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            # The line is built only when it will be written: most requests of a quiet log pay
            # nothing for it.
            if log.isEnabledFor(logging.INFO):
                log.info(json.dumps(_line(scope, rid, status, started), separators=(",", ":")))


def _line(scope: Scope, rid: str, status: int, started: float) -> dict[str, Any]:
    """The fields of one access line; never a credential, query string or body."""
    principal = scope.get("state", {}).get("principal")
    line: dict[str, Any] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
        "request_id": rid,
        "method": scope.get("method"),
        "route": operation_id(scope),
        "path": scope.get("path"),
        "status": status,
        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
    }
    if principal is not None:
        line["key_id"] = principal.key_id
        line["user"] = user_hash(principal.user_id)
    return line
