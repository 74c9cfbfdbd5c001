"""Run a tool call as the REST request its manifest binding describes, with the caller's key."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from memory_bank import errors
from memory_bank.http import jsontext, validation
from memory_bank.http.exceptions import where_from
from memory_bank.mcp.manifest import Capability

log = logging.getLogger("memory_bank.mcp")

# httpx base URL for in-process calls; only the path reaches the app.
# (localhost: a loopback name, which the allowed-hosts check always lets through).
IN_PROCESS_BASE = "http://localhost"
# Names the operation a tool call means; REST refuses the request when it routes elsewhere.
OPERATION_HEADER = "X-Memory-Bank-Operation"


class Executor:
    """Executes capabilities through an httpx client (in-process ASGI app or a remote server)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        credential: Callable[[], str | None],
        key_setting: str | None = None,
    ) -> None:
        self.client = client
        self.credential = credential
        # Where the session's key comes from when it is not the caller's HTTP header (stdio:
        # MEMORY_BANK_MCP_KEY), so a 401 names what the user can change.
        self.key_setting = key_setting
        self._validators: dict[str, Draft202012Validator] = {}

    async def call(self, capability: Capability, arguments: dict[str, Any]) -> types.CallToolResult:
        """Validate the arguments, send the request, and shape the answer as a tool result.

        Whatever goes wrong is an isError result carrying a problem, never an exception the
        host sees as a protocol error (or a traceback)."""
        try:
            problem = self.check(capability.name, capability.input_schema, arguments)
            if problem is None:
                problem = _path_problem(capability, arguments)
            if problem is not None:
                return error_result(problem)
            request = self._request(capability, arguments)
            try:
                response = await self.client.send(request)
            except httpx.HTTPError as exc:
                detail = (
                    f"Cannot reach memory-bank at {self.client.base_url}: {type(exc).__name__}."
                )
                return error_result(errors.ServiceUnavailable(detail).document())
            return _result(capability, arguments, response, self.key_setting)
        except Exception as exc:
            log.error("tool %s failed: %s", capability.name, where_from(exc))
            failed = errors.InternalError(f"The tool {capability.name} failed unexpectedly.")
            return error_result(failed.document())

    def check(self, name: str, schema: dict[str, Any], arguments: Any) -> dict[str, Any] | None:
        """A 400 problem naming the field when the arguments break the input schema.

        The wording is REST's (http/validation.describe), so an agent reads the same message
        whichever way it calls. Unknown argument names are refused whatever the advertised
        schema says about additional properties.
        """
        if isinstance(arguments, dict):
            unknown = _unknown(name, schema, arguments)
            if unknown is not None:
                return unknown.document()
        surrogate = jsontext.lone_surrogate(arguments)
        if surrogate is not None:
            field = surrogate or None
            return errors.InvalidRequest(
                jsontext.unpaired_surrogate_message(field), field=field
            ).document()
        validator = self._validators.get(name)
        if validator is None:
            validator = self._validators[name] = Draft202012Validator(schema)
        error = best_match(validator.iter_errors(arguments))
        if error is None:
            return None
        return validation.invalid(error).document()

    def _request(self, capability: Capability, arguments: dict[str, Any]) -> httpx.Request:
        """The HTTP request for a call, built from the binding alone."""
        path = capability.path
        params = httpx.QueryParams()
        headers: dict[str, str] = {
            "Accept": "application/json, application/problem+json, text/*",
            # The server refuses the call if it routes anywhere else (http/security.py).
            OPERATION_HEADER: capability.name,
        }
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


def _unknown(
    name: str, schema: dict[str, Any], arguments: dict[str, Any]
) -> errors.ApiError | None:
    """The problem for the first argument the tool does not take, with what it does take."""
    known = schema.get("properties", {})
    extra = [a for a in arguments if a not in known]
    if not extra:
        return None
    first = extra[0]
    if "arguments" in known and "name" in known:
        # execute_capability: the capability's own arguments were put beside `name` instead
        # of under `arguments`.
        detail = (
            f"'{first}' is not an argument of {name}: put the capability's arguments under "
            '\'arguments\', as in {"name": "postMemory", "arguments": {"content": "..."}}.'
        )
        return errors.InvalidRequest(detail, field=first)
    missing = [r for r in schema.get("required", []) if r not in arguments]
    hint = validation.suggestion(first, list(known), missing)
    return errors.InvalidRequest(f"'{first}' is not a known argument{hint}", field=first)


def _path_problem(capability: Capability, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A 400 problem when a path argument is not exactly one path segment.

    The input schema already holds ids to their pattern; this holds whatever else a path
    argument might be to one segment, so no value can reach another route (`..`, `a/b`).
    """
    for arg, value in arguments.items():
        if capability.arguments[arg]["in"] != "path":
            continue
        text = _text(value)
        if text in {"", ".", ".."} or "/" in text or "\\" in text:
            detail = f"'{arg}' must be a single id, not a path."
            return errors.InvalidRequest(detail, field=arg).document()
    return None


def _result(
    capability: Capability,
    arguments: dict[str, Any],
    response: httpx.Response,
    key_setting: str | None = None,
) -> types.CallToolResult:
    """A tool result from a REST response: problem -> isError, success -> structured JSON."""
    status = response.status_code
    media = response.headers.get("content-type", "").split(";")[0].strip()
    if status >= 400:
        try:
            problem = response.json()
        except ValueError:
            problem = errors.for_status(status)(response.text[:500] or "Error.").document()
        if isinstance(problem, dict):
            problem = _in_tool_terms(capability, problem, key_setting)
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


def _in_tool_terms(
    capability: Capability, problem: dict[str, Any], key_setting: str | None
) -> dict[str, Any]:
    """A problem whose advice names the tool's arguments and settings, not HTTP headers.

    REST's wording tells a client which header to send; an agent calling a tool can only change
    an argument (or, over stdio, the key its host passes), so that is what the detail names."""
    code = problem.get("code")
    if code == "revision_conflict" and isinstance(problem.get("revision"), int):
        argument = next(
            (
                name
                for name, binding in capability.arguments.items()
                if binding["in"] == "header" and str(binding["name"]).lower() == "if-match"
            ),
            None,
        )
        if argument is not None:
            revision = problem["revision"]
            detail = (
                f"The memory changed: it is at revision {revision} now. Read it again "
                f"(getMemoryById) and, if your change still applies, call {capability.name} "
                f"again with {argument} '\"{revision}\"' (the revision number in double quotes)."
            )
            return {**problem, "detail": detail}
    if code == "unauthorized" and key_setting is not None:
        detail = (
            f"The API key this session runs with ({key_setting}) is no longer accepted: it was "
            "revoked or has expired. Create one with `memory-bank keys create --user <you> "
            f"--scopes mcp:read,mcp:write`, set it as {key_setting} in the host's configuration "
            "for this server, and restart the server."
        )
        return {**problem, "detail": detail}
    return problem


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
