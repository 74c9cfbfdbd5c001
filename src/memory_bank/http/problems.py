"""The one place that renders every error as application/problem+json."""

from __future__ import annotations

import logging
import re
from typing import Any

from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse

from memory_bank.errors import PROBLEM_JSON, ApiError, encode, problem_body

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


def response(status: int, doc: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """A Connexion response carrying a problem document."""
    return ConnexionResponse(
        status_code=status,
        mimetype=PROBLEM_JSON,
        content_type=PROBLEM_JSON,
        body=encode(doc),
        headers=headers or {},
    )


def render_api_error(_request: ConnexionRequest, exc: Exception) -> Any:
    """Render one of our ApiErrors."""
    assert isinstance(exc, ApiError)
    if exc.status >= 500:
        log.error("%s: %s", exc.code, exc.detail)
    return response(exc.status, exc.body(), exc.headers)


def render_connexion_problem(_request: ConnexionRequest, exc: Exception) -> Any:
    """Render a problem raised by Connexion's routing, security or validation."""
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
    headers = dict(exc.headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="memory-bank"'
        detail = "A valid API key is required (Authorization: Bearer mb_...)."
    return response(status, problem_body(status, detail, field=field), headers)


def render_bad_encoding(_request: ConnexionRequest, _exc: Exception) -> Any:
    """Render a body that is not UTF-8 (Connexion's JSON validator lets the decode error out)."""
    return response(400, problem_body(400, "The body is not valid UTF-8 JSON.", field="body"))


def render_unexpected(_request: ConnexionRequest, exc: Exception) -> Any:
    """Log an unexpected error and answer with a generic 500 (no details leak)."""
    log.error("unhandled error: %r", exc, exc_info=exc)
    return response(500, problem_body(500, "The server hit an unexpected error."))


def render_status(status: int) -> Any:
    """A handler for a bare HTTP status Connexion or Starlette raised."""

    def _render(_request: ConnexionRequest, exc: Exception) -> Any:
        detail = str(getattr(exc, "detail", "") or "")
        # Keep headers the exception carries (e.g. Allow on a 405, required by RFC 9110).
        headers = dict(getattr(exc, "headers", None) or {})
        return response(status, problem_body(status, _clean_detail(detail) or "Error."), headers)

    return _render
