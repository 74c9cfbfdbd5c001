"""Problem classes, one per status and code, and the one renderer of problem+json.

Every failure a client sees is an ApiError: handlers and the domain raise one, the HTTP layer
turns what frameworks raise into one (http/exceptions.py), and middleware that answers before
the app sends one with send(). The document is built in one place, ApiError.document().
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

# An ASGI send channel (the same shape as starlette.types.Send, kept framework-free here).
Send = Callable[[dict[str, Any]], Awaitable[None]]

PROBLEM_JSON = "application/problem+json"
_TYPE_BASE = "https://memory-bank.dev/problems/"
# What a client that hit a 401 needs to know (MCP hosts show the body; some try OAuth first).
KEY_HELP = (
    "This server uses API keys, not OAuth: create one with `memory-bank keys create --user "
    "<you> --scopes mcp:read,mcp:write` and send it as `Authorization: Bearer mb_...`."
)


class ApiError(Exception):
    """A failure with an HTTP status and a stable machine code."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal Server Error"

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
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def document(self) -> dict[str, Any]:
        """The RFC 9457 problem document for this error."""
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

    def body(self) -> bytes:
        """The problem document, serialised."""
        # backslashreplace: a lone surrogate that slipped into a field name still leaves as a
        # JSON escape instead of failing the answer.
        text = json.dumps(self.document(), ensure_ascii=False)
        return text.encode("utf-8", "backslashreplace")


def quoted(value: str) -> str:
    """A header parameter value as an RFC 9110 quoted-string: quotes and backslashes escaped,
    control characters dropped, so no value can end the parameter or add one."""
    kept = "".join(c for c in value if c == "\t" or (c >= " " and c != "\x7f"))
    return '"' + kept.replace("\\", "\\\\").replace('"', '\\"') + '"'


class InvalidRequest(ApiError):
    """The request breaks the contract (shape, limit, encoding)."""

    status, code, title = 400, "invalid_request", "Bad Request"


class InvalidCursor(InvalidRequest):
    """A pagination cursor that this server did not issue."""

    code = "invalid_cursor"


class Unauthorized(ApiError):
    """No usable credential."""

    status, code, title = 401, "unauthorized", "Unauthorized"

    def __init__(self, detail: str, *, reason: str | None = None, **kwargs: Any) -> None:
        headers = kwargs.pop("headers", None) or {}
        # RFC 6750 section 3.1: a request without a credential gets no error code.
        headers.setdefault("WWW-Authenticate", 'Bearer realm="memory-bank"')
        super().__init__(detail, headers=headers, **kwargs)
        # Why, in one sentence, without the instructions the detail adds.
        self.reason = reason or detail

    @classmethod
    def missing_key(cls) -> Unauthorized:
        """A request without an API key: the body says how to get one."""
        reason = "A valid API key is required (Authorization: Bearer mb_...)."
        return cls(f"{reason} {KEY_HELP}", reason=reason)

    @classmethod
    def invalid_token(cls, reason: str) -> Unauthorized:
        """A key that is unknown, revoked or expired (RFC 6750 error invalid_token)."""
        challenge = (
            'Bearer realm="memory-bank", error="invalid_token", '
            'error_description="The API key is not valid (unknown, revoked or expired)"'
        )
        return cls(f"{reason} {KEY_HELP}", reason=reason, headers={"WWW-Authenticate": challenge})


class Forbidden(ApiError):
    """An action this principal may not take."""

    status, code, title = 403, "forbidden", "Forbidden"


class InsufficientScope(Forbidden):
    """A valid credential without the scope the operation needs.

    When any one of several scopes would do, `scope` is the least one and `acceptable` lists
    them all: a challenge's scope list means all of them are needed (RFC 6750), so the
    alternatives go in its error_description and in the body."""

    code = "insufficient_scope"

    def __init__(self, scope: str, acceptable: tuple[str, ...] = ()) -> None:
        if len(acceptable) > 1:
            either = " or ".join(acceptable)
            detail = f"This credential has none of the scopes this needs: {either} (either one)."
            extra: dict[str, Any] = {"required_scope": scope, "acceptable_scopes": list(acceptable)}
            said = f"Needs {either}; this key has neither"
        else:
            detail = f"This credential lacks the {scope!r} scope this operation needs."
            extra = {"required_scope": scope}
            said = f"Needs the {scope} scope"
        challenge = (
            f'Bearer error="insufficient_scope", scope={quoted(scope)}, '
            f"error_description={quoted(said)}"
        )
        super().__init__(detail, extra=extra, headers={"WWW-Authenticate": challenge})


class OriginNotAllowed(Forbidden):
    """A browser Origin the MCP endpoint does not accept (DNS rebinding defence)."""

    code = "origin_not_allowed"


class OrgScopeForbidden(Forbidden):
    """A save to the organisation by a key without an org or without org:write."""

    code = "org_scope_forbidden"


class MemoryDisabledForUser(Forbidden):
    """The operator switched memory off for this user."""

    code = "memory_disabled"


class NotFound(ApiError):
    """No such item for this user (also for other users' items), or no such route."""

    status, code, title = 404, "not_found", "Not Found"


class MemoryNotFound(NotFound):
    """No such memory for this user."""

    code = "memory_not_found"


class DraftNotFound(NotFound):
    """No such live draft for this user (also: expired, confirmed, rejected, others')."""

    code = "draft_not_found"


class RevisionNotFound(NotFound):
    """No such revision of a memory the caller reads."""

    code = "revision_not_found"


class UnknownTool(NotFound):
    """An MCP tool call names no tool of this server."""

    code = "unknown_tool"


class MethodNotAllowed(ApiError):
    """The route exists but not with this method."""

    status, code, title = 405, "method_not_allowed", "Method Not Allowed"


class RequestTimeout(ApiError):
    """The client took too long to send its request."""

    status, code, title = 408, "request_timeout", "Request Timeout"


class Conflict(ApiError):
    """The request conflicts with the current state."""

    status, code, title = 409, "conflict", "Conflict"


class QuotaExceeded(Conflict):
    """The user keeps as many memories as the server allows."""

    code = "quota_exceeded"


class RevisionConflict(ApiError):
    """If-Match named a revision that is no longer the memory's current one."""

    status, code, title = 412, "revision_conflict", "Precondition Failed"


class PayloadTooLarge(ApiError):
    """A request body over the configured cap."""

    status, code, title = 413, "payload_too_large", "Content Too Large"


class UnsupportedMediaType(ApiError):
    """A body in a media type the operation does not take."""

    status, code, title = 415, "unsupported_media_type", "Unsupported Media Type"


class MisdirectedRequest(ApiError):
    """A Host header naming a server this service is not (MEMORY_BANK_ALLOWED_HOSTS)."""

    status, code, title = 421, "misdirected_request", "Misdirected Request"


class RateLimited(ApiError):
    """The credential spent its allowance for now."""

    status, code, title = 429, "rate_limited", "Too Many Requests"


class InternalError(ApiError):
    """Something failed that the client cannot fix; the details go to the log only."""

    status, code, title = 500, "internal_error", "Internal Server Error"


class ServiceUnavailable(ApiError):
    """The database is unreachable or busy."""

    status, code, title = 503, "service_unavailable", "Service Unavailable"


class MemorySwitchedOff(ServiceUnavailable):
    """The operator switched memory off for everyone."""

    code = "memory_switched_off"


# The class that stands for a bare status (what a framework raised without a code of ours).
_BY_STATUS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        InvalidRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        RequestTimeout,
        Conflict,
        RevisionConflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        MisdirectedRequest,
        RateLimited,
        InternalError,
        ServiceUnavailable,
    )
}


def for_status(status: int) -> type[ApiError]:
    """The problem class of a status (4xx without its own class: 400; 5xx: 500)."""
    found = _BY_STATUS.get(status)
    if found is not None:
        return found
    return InvalidRequest if 400 <= status < 500 else InternalError


def render(exc: ApiError) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, raw headers (content type and length included) and body of a problem."""
    body = exc.body()
    headers = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in exc.headers.items()),
    ]
    return exc.status, headers, body


async def send(send: Send, exc: ApiError) -> None:
    """Answer an ASGI request with a problem (for middleware that answers instead of the app)."""
    status, headers, body = render(exc)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
