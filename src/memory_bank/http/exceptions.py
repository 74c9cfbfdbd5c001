"""Connexion's error hooks: whatever reaches them leaves as one of our problems (errors.py)."""

from __future__ import annotations

import logging
import re
from typing import Any

from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from starlette.exceptions import HTTPException

from memory_bank import errors
from memory_bank.errors import PROBLEM_JSON, ApiError
from memory_bank.spec import spec_methods
from memory_bank.state import STATE_KEY

log = logging.getLogger("memory_bank.errors")

_FIELD_PATTERNS = (
    re.compile(r"parameter '([^']+)'$"),
    re.compile(r" - '([^']+)'$"),
    re.compile(r"^'([^']+)' is a required property"),
    re.compile(r"Extra query parameter\(s\) ([^ ]+) not in spec"),
)
# Where a validator message names the field: "<value> is too long - 'tags.0'" (body) or
# "<value> is too long for query parameter 'q'" (parameters, see validation.py).
_SUFFIX = re.compile(r"( - '[^']+'| for \w+ parameter '[^']+')$")
# jsonschema's "<value repr> <predicate>" messages; the value is replaced by the field name so
# a response never echoes kilobytes of the client's own input back.
_PREDICATES = (
    " is too long",
    " is too short",
    " should be non-empty",
    " does not match ",
    " is not of type ",
    " is not one of ",
    " is greater than ",
    " is less than ",
    " has non-unique elements",
)
_UNEXPECTED = re.compile(r"^Additional properties are not allowed \('([^']+)'")


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
    raw = str(exc.detail or exc.title or "")
    field = _field_of(raw) if status == 400 else None
    detail = _clean_detail(raw, field)
    if status >= 500:
        log.error("connexion problem %s: %s", status, detail)
        detail = "The server could not handle this request."
    if status == 400 and detail.startswith(("Expecting", "Unterminated", "Extra data")):
        detail = f"The body is not valid JSON: {detail}"
    problem = errors.for_status(status)(detail, field=field, headers=dict(exc.headers or {}))
    if status == 401:
        problem = errors.Unauthorized("A valid API key is required (Authorization: Bearer mb_...).")
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
    detail = _clean_detail(str(exc.detail or "")) or "Error."
    return response(errors.for_status(exc.status_code)(detail, headers=headers))


async def _bad_encoding(_request: ConnexionRequest, _exc: Exception) -> ConnexionResponse:
    """A body that is not UTF-8 (Connexion's JSON validator lets the decode error out)."""
    return response(errors.InvalidRequest("The body is not valid UTF-8 JSON.", field="body"))


async def _unexpected(_request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """Log an unexpected error and answer with a generic 500 (no details leak)."""
    log.error("unhandled error: %r", exc, exc_info=exc)
    return response(errors.InternalError("The server hit an unexpected error."))


def _field_of(detail: str) -> str | None:
    """The request field a Connexion validation message is about, if it says."""
    first = detail.strip().split("\n", 1)[0].strip()
    unexpected = _UNEXPECTED.match(first)
    if unexpected:
        # An unknown property: the field at fault is the property itself.
        parent = re.search(r" - '([^']+)'$", first)
        return f"{parent.group(1)}.{unexpected.group(1)}" if parent else unexpected.group(1)
    for pattern in _FIELD_PATTERNS:
        match = pattern.search(first)
        if match:
            return match.group(1)
    return None


def _clean_detail(detail: str, field: str | None = None) -> str:
    """A short message for a validator error: first line, value replaced by the field name."""
    first = detail.strip().split("\n", 1)[0].strip()
    core = _SUFFIX.sub("", first)
    found = max(((core.rfind(p), p) for p in _PREDICATES), default=(-1, ""))
    at, predicate = found
    if at > 0:
        subject = f"'{field}'" if field else "The body"
        rest = core[at + 1 :]
        if predicate == " does not match " and "x00" in rest:
            rest = "must not contain NUL characters"
        return f"{subject} {rest}."
    return first[:500] or "The request is invalid."
