"""Problem classes and the one renderer that turns any error into problem+json."""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any

PROBLEM_JSON = "application/problem+json"
_TYPE_BASE = "https://memory-bank.dev/problems/"

log = logging.getLogger("memory_bank.errors")


class ApiError(Exception):
    """A failure with an HTTP status and a stable machine code."""

    status = 500
    code = "internal_error"
    title = "Internal Server Error"

    def __init__(
        self,
        detail: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        """The problem document for this error."""
        doc: dict[str, Any] = {
            "type": _TYPE_BASE + self.code,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if self.field is not None:
            doc["field"] = self.field
        doc.update(self.extra)
        return doc


class InvalidRequest(ApiError):
    """The request breaks the contract (shape, limit, encoding)."""

    status, code, title = 400, "invalid_request", "Bad Request"


class InvalidCursor(InvalidRequest):
    """A pagination cursor that this server did not issue."""

    code = "invalid_cursor"


class Unauthorized(ApiError):
    """No usable credential."""

    status, code, title = 401, "unauthorized", "Unauthorized"

    def __init__(self, detail: str, **kwargs: Any) -> None:
        headers = kwargs.pop("headers", None) or {}
        headers.setdefault("WWW-Authenticate", 'Bearer realm="memory-bank"')
        super().__init__(detail, headers=headers, **kwargs)


class InsufficientScope(ApiError):
    """A valid credential without the scope the operation needs."""

    status, code, title = 403, "insufficient_scope", "Forbidden"

    def __init__(self, scope: str) -> None:
        super().__init__(
            f"This credential lacks the {scope!r} scope this operation needs.",
            extra={"required_scope": scope},
            headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{scope}"'},
        )


class Forbidden(ApiError):
    """An action this principal may not take."""

    status, code, title = 403, "forbidden", "Forbidden"


class MemoryDisabledForUser(Forbidden):
    """The operator switched memory off for this user."""

    code = "memory_disabled"


class NotFound(ApiError):
    """No such item for this user (also for other users' items)."""

    status, code, title = 404, "not_found", "Not Found"


class MemoryNotFound(NotFound):
    """No such memory for this user."""

    code = "memory_not_found"


class PayloadTooLarge(ApiError):
    """A request body over the configured cap."""

    status, code, title = 413, "payload_too_large", "Content Too Large"


class UnsupportedMediaType(ApiError):
    """A body in a media type the operation does not take."""

    status, code, title = 415, "unsupported_media_type", "Unsupported Media Type"


class Conflict(ApiError):
    """The request conflicts with the current state."""

    status, code, title = 409, "conflict", "Conflict"


class QuotaExceeded(Conflict):
    """The user keeps as many memories as the server allows."""

    code = "quota_exceeded"


class ServiceUnavailable(ApiError):
    """The database is unreachable or the service is switched off."""

    status, code, title = 503, "service_unavailable", "Service Unavailable"


class MemoryDisabled(ServiceUnavailable):
    """The operator switched memory off for everyone."""

    code = "memory_disabled"


class DraftNotFound(NotFound):
    """No such live draft for this user (also: expired, confirmed, rejected, others')."""

    code = "draft_not_found"


# Codes for problems raised by Connexion itself, by status.
_CODES_BY_STATUS = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal_error",
    501: "not_implemented",
    503: "service_unavailable",
}


def problem_body(
    status: int, detail: str, code: str | None = None, field: str | None = None
) -> dict[str, Any]:
    """A problem document for a status that has no ApiError class."""
    code = code or _CODES_BY_STATUS.get(status, "error")
    doc: dict[str, Any] = {
        "type": _TYPE_BASE + code,
        "title": _title(status),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if field is not None:
        doc["field"] = field
    return doc


def _title(status: int) -> str:
    """The standard reason phrase for a status."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def encode(doc: dict[str, Any]) -> bytes:
    """Serialise a problem document."""
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")
