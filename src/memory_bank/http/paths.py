"""Request paths route as they read: no segment the client escaped becomes a separator, no
control character is decoded, and an API path with a trailing slash is a 404, not a redirect."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from memory_bank import errors
from memory_bank.spec import METHODS, path_parameters

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Route:
    """A spec path template, as a pattern, whether it is literal, and its methods."""

    template: str
    pattern: re.Pattern[str]
    literal: bool
    methods: tuple[str, ...]
    # Integer path parameters: segment index -> (name, the largest value the spec allows).
    integers: tuple[tuple[int, str, int], ...] = ()


def route_table(spec: dict[str, Any]) -> list[Route]:
    """The spec's paths ({id} matches one segment), each with the methods it declares."""
    table = []
    for template, item in spec.get("paths", {}).items():
        methods = tuple(sorted(m.upper() for m in item if m in METHODS))
        pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
        table.append(
            Route(template, pattern, "{" not in template, methods, _integers(spec, template))
        )
    return table


def _integers(spec: dict[str, Any], template: str) -> tuple[tuple[int, str, int], ...]:
    """The template's integer path parameters, by segment, with their maximum."""
    schemas = {p["name"]: p.get("schema", {}) for p in path_parameters(spec, template)}
    found = []
    for position, segment in enumerate(template.split("/")):
        name = segment[1:-1] if segment.startswith("{") and segment.endswith("}") else None
        schema = schemas.get(name or "", {})
        if name and schema.get("type") == "integer":
            found.append((position, name, int(schema.get("maximum", _LARGEST))))
    return tuple(found)


# An integer parameter without a maximum still gets one: the router converts the segment with
# int(), which refuses (a 500) past Python's 4,300-digit limit.
_LARGEST = 2**63 - 1


class CanonicalPathMiddleware:
    """Keep escaped what would change where a request routes; refuse API paths ending in /."""

    def __init__(self, app: ASGIApp, routes: list[Route]) -> None:
        self.app = app
        self.routes = routes
        # Literal paths by their text: one dictionary lookup per request, not a regex each.
        self.literal = {r.template: r for r in routes if r.literal}
        self.bounded = [r for r in routes if r.integers]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        raw = scope.get("raw_path")
        if isinstance(raw, bytes) and b"%" in raw:
            # Decoded here, once, segment by segment: a server decodes %2F into a separator
            # (/v1/memory/drafts%2Fmdr_x routed to the draft), and a test client decodes twice.
            # Kept escaped, a segment stays one segment (and no id has a slash in it).
            path = "/".join(
                unquote(part.decode("latin-1")).replace("/", "%2F") for part in raw.split(b"/")
            )
        if _CONTROL.search(path):
            # A decoded path with a line break once matched a view but not Connexion's router,
            # so it skipped security. Kept escaped, the path routes (and authenticates) like
            # any other and names no resource.
            path = _CONTROL.sub(lambda m: f"%{ord(m.group()):02X}", path)
        scope["path"] = path
        problem = self._misrouted(scope) if scope["type"] == "http" else None
        if problem is not None:
            await errors.send(send, problem)
            return
        await self.app(scope, receive, send)

    def _misrouted(self, scope: Scope) -> errors.ApiError | None:
        """The answer for a path that would otherwise reach the wrong route, if any."""
        path, method = scope.get("path", ""), scope.get("method", "")
        too_large = self._integer_out_of_range(path)
        if too_large is not None:
            return too_large
        if len(path) > 1 and path.endswith("/"):
            if any(r.pattern.match(path.rstrip("/")) for r in self.routes):
                # Starlette would redirect to the path without the slash, in an absolute URL
                # built from the Host header; an API client should learn its path is wrong.
                return errors.NotFound("No route at this path: API paths do not end with '/'.")
            return None
        route = self.literal.get(path)
        if route is not None:
            allowed = {*route.methods, *(("HEAD",) if "GET" in route.methods else ())}
            if method not in allowed and method != "OPTIONS":
                # /v1/memory/search is that resource, whatever the method: never the {id}
                # route below it with "search" for an id.
                return errors.MethodNotAllowed(
                    f"{method} is not allowed here.", headers={"Allow": ", ".join(route.methods)}
                )
        return None

    def _integer_out_of_range(self, path: str) -> errors.ApiError | None:
        """A 404 for an integer path segment past its maximum, before the router converts it.

        The router converts the segment with int(), which fails past 4,300 digits: a 500 with a
        traceback in the log, for any caller, signed in or not. A number no resource can have
        is no resource's, so the answer is a 404 with or without a key: it tells nothing about
        anyone's data. (A small negative number goes on, to the schema's minimum.)
        """
        segments = path.split("/")
        for route in self.bounded:
            if not route.pattern.match(path):
                continue
            for position, name, largest in route.integers:
                sign, digits = _signed(segments[position])
                if not digits.isdigit():
                    continue
                if len(digits) > len(str(largest)) or (sign != "-" and int(digits) > largest):
                    return errors.NotFound(
                        f"Nothing has this '{name}': it runs up to {largest}.", field=name
                    )
        return None


def _signed(segment: str) -> tuple[str, str]:
    """A path segment split as int() reads it: an optional sign, then the rest."""
    if segment[:1] in ("+", "-"):
        return segment[0], segment[1:]
    return "", segment
