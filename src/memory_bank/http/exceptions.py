"""Connexion's error hooks: whatever reaches them leaves as one of our problems (errors.py)."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from starlette.exceptions import HTTPException

from memory_bank import errors
from memory_bank.errors import PROBLEM_JSON, ApiError
from memory_bank.spec import spec_methods
from memory_bank.state import STATE_KEY

log = logging.getLogger("memory_bank.errors")


def install(app: Any) -> None:
    """Register the hooks on a Connexion app."""
    app.add_error_handler(ApiError, _api_error)
    app.add_error_handler(ProblemException, _connexion_problem)
    app.add_error_handler(HTTPException, _http_exception)
    # Connexion decodes JSON bodies as UTF-8 before validating them; other bytes are the
    # client's mistake, not a server error.
    app.add_error_handler(UnicodeDecodeError, _bad_encoding)
    app.add_error_handler(Exception, _unexpected)


def response(exc: ApiError) -> ConnexionResponse:
    """A Connexion response carrying the problem."""
    status, _, body = errors.render(exc)
    return ConnexionResponse(
        status_code=status,
        mimetype=PROBLEM_JSON,
        content_type=PROBLEM_JSON,
        body=body,
        headers=exc.headers,
    )


async def _api_error(_request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """One of ours: render it (server-side failures are logged first)."""
    assert isinstance(exc, ApiError)
    if exc.status >= 500:
        log.error("%s: %s", exc.code, exc.detail)
    return response(exc)


async def _connexion_problem(_request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """A problem raised by Connexion's routing, security or validation."""
    assert isinstance(exc, ProblemException)
    status = int(exc.status or 500)
    # Validation errors are raised by our validators (http/validation.py) with their field;
    # what arrives here is Connexion's own wording (a missing body, a media type).
    detail = _first_line(str(exc.detail or exc.title or "")) or "The request is invalid."
    if status >= 500:
        log.error("connexion problem %s: %s", status, detail)
        detail = "The server could not handle this request."
    problem = errors.for_status(status)(detail, headers=dict(exc.headers or {}))
    if status == 401:
        problem = errors.Unauthorized.missing_key()
    return response(problem)


async def _http_exception(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """A plain HTTP exception (an unknown route, a method the route lacks)."""
    assert isinstance(exc, HTTPException)
    # Keep headers the exception carries (e.g. Allow on a 405, required by RFC 9110).
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette names only the first route that matched the path; list every method the
        # spec declares for it instead (RFC 9110: Allow lists what the resource supports).
        allowed = spec_methods(request.scope["state"][STATE_KEY].spec, request.url.path)
        if allowed:
            headers["Allow"] = ", ".join(allowed)
    detail = _first_line(str(exc.detail or "")) or "Error."
    return response(errors.for_status(exc.status_code)(detail, headers=headers))


async def _bad_encoding(_request: ConnexionRequest, _exc: Exception) -> ConnexionResponse:
    """A body that is not UTF-8 (Connexion's JSON validator lets the decode error out)."""
    return response(errors.InvalidRequest("The body is not valid UTF-8 JSON.", field="body"))


async def _unexpected(_request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """Log an unexpected error and answer with a generic 500 (no details leak)."""
    log.error("unhandled error: %s", where_from(exc))
    return response(errors.InternalError("The server hit an unexpected error."))


def where_from(exc: BaseException) -> str:
    """An exception's types and stack frames, chained ones included, without any message.

    A message can hold what the user sent (a UnicodeEncodeError's repr carries the whole
    string it failed on; a database error its parameters), and nothing a user stored may
    reach a log line. The frames say where it failed; a test reproduces why.
    """
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = type(current)
        frames = "".join(traceback.format_tb(current.__traceback__))
        parts.append(f"{kind.__module__}.{kind.__qualname__}\n{frames}".rstrip())
        current = current.__cause__ or current.__context__
    return "\nwhile handling: ".join(parts)


def _first_line(detail: str) -> str:
    """A framework's message, kept short: its first line."""
    return detail.strip().split("\n", 1)[0].strip()[:500]
