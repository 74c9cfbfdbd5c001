"""Run a tool call as the REST request its manifest binding describes, with the caller's key."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from memory_bank import errors
from memory_bank.mcp.manifest import Capability

# httpx base URL for in-process calls; only the path reaches the app.
IN_PROCESS_BASE = "http://memory-bank.internal"


class Executor:
    """Executes capabilities through an httpx client (in-process ASGI app or a remote server)."""

    def __init__(self, client: httpx.AsyncClient, credential: Callable[[], str | None]) -> None:
        self.client = client
        self.credential = credential
        self._validators: dict[str, Draft202012Validator] = {}

    async def call(self, capability: Capability, arguments: dict[str, Any]) -> types.CallToolResult:
        """Validate the arguments, send the request, and shape the answer as a tool result."""
        problem = self.check(capability.name, capability.input_schema, arguments)
        if problem is not None:
            return error_result(problem)
        request = self._request(capability, arguments)
        try:
            response = await self.client.send(request)
        except httpx.HTTPError as exc:
            detail = f"Cannot reach memory-bank at {self.client.base_url}: {type(exc).__name__}."
            return error_result(errors.ServiceUnavailable(detail).document())
        return _result(capability, arguments, response)

    def check(self, name: str, schema: dict[str, Any], arguments: Any) -> dict[str, Any] | None:
        """A 400 problem naming the field when the arguments break the input schema."""
        validator = self._validators.get(name)
        if validator is None:
            validator = self._validators[name] = Draft202012Validator(schema)
        error = best_match(validator.iter_errors(arguments))
        if error is None:
            return None
        field = _field(error)
        message = error.message if len(error.message) <= 200 else f"breaks {error.validator!r}"
        detail = (
            f"Invalid argument {field!r}: {message}" if field else f"Invalid arguments: {message}"
        )
        return errors.InvalidRequest(detail, field=field).document()

    def _request(self, capability: Capability, arguments: dict[str, Any]) -> httpx.Request:
        """The HTTP request for a call, built from the binding alone."""
        path = capability.path
        params = httpx.QueryParams()
        headers: dict[str, str] = {"Accept": "application/json, application/problem+json, text/*"}
        body: Any = None
        has_body = any(b["in"] == "body" for b in capability.arguments.values())
        for arg, value in arguments.items():
            where, wire = capability.arguments[arg]["in"], capability.arguments[arg]["name"]
            if where == "path":
                path = path.replace("{" + wire + "}", quote(_text(value), safe=""))
            elif where == "query":
                values = value if isinstance(value, list) else [value]
                for item in values:
                    params = params.add(wire, _text(item))
            elif where == "header":
                headers[wire] = _text(value)
            elif wire is None:
                body = value
            else:
                body = body if isinstance(body, dict) else {}
                body[wire] = value
        if has_body and body is None:
            body = {}
        token = self.credential()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is None:
            return self.client.build_request(
                capability.method, path, params=params, headers=headers
            )
        return self.client.build_request(
            capability.method, path, params=params, headers=headers, json=body
        )


def _text(value: Any) -> str:
    """A path, query or header value as the REST API spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field(error: ValidationError) -> str | None:
    """The argument an input-schema error is about, as a dotted path (contexts[0].snippet)."""
    parts: list[str] = []
    for step in error.absolute_path:
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}" if parts else str(step))
    extra: str | None = None
    if error.validator == "required":
        found = re.match(r"'([^']+)' is a required property", error.message)
        extra = found.group(1) if found else None
    elif error.validator == "additionalProperties":
        found = re.search(r"\('([^']+)'", error.message)
        extra = found.group(1) if found else None
    if extra:
        parts.append(f".{extra}" if parts else extra)
    return "".join(parts) or None


def _result(
    capability: Capability, arguments: dict[str, Any], response: httpx.Response
) -> types.CallToolResult:
    """A tool result from a REST response: problem -> isError, success -> structured JSON."""
    status = response.status_code
    media = response.headers.get("content-type", "").split(";")[0].strip()
    if status >= 400:
        try:
            problem = response.json()
        except ValueError:
            problem = errors.for_status(status)(response.text[:500] or "Error.").document()
        return error_result(problem)
    kind = capability.success.get(str(status)) or (
        "json" if media.endswith("json") else "text" if media.startswith("text/") else "empty"
    )
    if kind == "json":
        return structured_result(response.json())
    if kind == "text":
        return types.CallToolResult(content=[types.TextContent(text=response.text)])
    done: dict[str, Any] = {"ok": True, "status": status}
    for arg, binding in capability.arguments.items():
        if binding["in"] == "path" and arg in arguments:
            done[arg] = _text(arguments[arg])
    return structured_result(done)


def structured_result(body: Any) -> types.CallToolResult:
    """A success carrying structured content and the same JSON as text."""
    text = json.dumps(body, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)


def error_result(problem: dict[str, Any]) -> types.CallToolResult:
    """A failed call carrying the problem document as JSON text.

    The problem is text only: a host may check structured content against the tool's output
    schema even on errors, and a problem never matches a success schema."""
    text = json.dumps(problem, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
