"""Spec -> MCP tool manifest: one tool per operation, with everything an executor needs."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from memory_bank.mcp.portable import portable
from memory_bank.spec import Operation, SpecError, json_schema, operations, resolve, scopes

MANIFEST_VERSION = 3
MAX_DESCRIPTION = 600
# Where a parameter may live, in the order that decides who keeps a plain name (see _claim).
LOCATIONS = ("path", "query", "header", "body")
# How deep an output schema names fields: the envelope's own (see _compact).
OUTPUT_LEVELS = 1


def build_manifest(
    spec: dict[str, Any], source: str = "openapi/memory-bank.yaml"
) -> dict[str, Any]:
    """The manifest for a spec: tools in spec order, each with its binding, then the operations
    that are no tool (search_capabilities still names them, with where to do them instead)."""
    tools, elsewhere = [], []
    for op in operations(spec):
        if op.definition.get("x-mcp") is False:
            elsewhere.append(_elsewhere(spec, op))
        else:
            tools.append(_tool(spec, op))
    names = [t["name"] for t in [*tools, *elsewhere]]
    if len(set(names)) != len(names):
        raise SpecError("operationIds must be unique")
    return {
        "manifest_version": MANIFEST_VERSION,
        "source": source,
        "api_version": str(spec.get("info", {}).get("version", "")),
        "tools": tools,
        "elsewhere": elsewhere,
    }


def render(manifest: dict[str, Any]) -> str:
    """The manifest as committed: JSON in spec order (YAML keeps key order), 2-space indent."""
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def _tool(spec: dict[str, Any], operation: Operation) -> dict[str, Any]:
    """One manifest entry for one operation."""
    route, method, op, shared = (
        operation.path,
        operation.method,
        operation.definition,
        operation.shared_parameters,
    )
    name = op.get("operationId")
    if not name:
        raise SpecError(f"{method.upper()} {route} has no operationId")
    title = op.get("x-mcp-title") or op.get("summary", name).rstrip(".")
    description = _description(name, op)
    input_schema, arguments = _input(spec, name, op, shared)
    outputs = _outputs(spec, name, op, arguments)
    tool: dict[str, Any] = {
        "name": name,
        "title": title,
        "description": description,
        # Hosts see the portable form; the executor validates calls against the full one.
        "inputSchema": portable(input_schema),
    }
    if outputs["schema"] is not None:
        tool["outputSchema"] = _compact(outputs["schema"])
    tool["annotations"] = _annotations(method)
    return {
        **tool,
        "x-memory-bank": {
            "scopes": list(scopes(spec, operation)),
            "http": {
                "method": method.upper(),
                "path": route,
                "arguments": arguments,
                "success": outputs["success"],
            },
            "inputSchema": input_schema,
            # Off tools/list (kept small for hosts), still found by search_capabilities and
            # run by execute_capability.
            **({"listed": False} if op.get("x-mcp-listed") is False else {}),
            **_ranking(name, op),
        },
    }


def _elsewhere(spec: dict[str, Any], operation: Operation) -> dict[str, Any]:
    """An operation that is no tool: what search_capabilities needs to name it and say where
    it is done instead (its REST route and scopes)."""
    op = operation.definition
    name = op.get("operationId")
    if not name:
        raise SpecError(f"{operation.method.upper()} {operation.path} has no operationId")
    text = " ".join(" ".join([op.get("summary", ""), op.get("description", "")]).split())
    return {
        "name": name,
        "title": op.get("x-mcp-title") or op.get("summary", name).rstrip("."),
        "description": text,
        "x-memory-bank": {
            "scopes": list(scopes(spec, operation)),
            "http": {"method": operation.method.upper(), "path": operation.path},
            **_ranking(name, op),
        },
    }


def _ranking(name: str, op: dict[str, Any]) -> dict[str, Any]:
    """What search_capabilities ranks by besides the text: the spec's example phrasings, and
    whether a phrase that names no action goes to this operation (`x-mcp-fallback`)."""
    examples = op.get("x-mcp-examples", [])
    if not isinstance(examples, list) or not all(isinstance(e, str) and e for e in examples):
        raise SpecError(f"{name}: x-mcp-examples must be a list of phrasings")
    out: dict[str, Any] = {}
    if examples:
        out["examples"] = examples
    if op.get("x-mcp-fallback") is True:
        out["fallback"] = True
    return out


def _description(name: str, op: dict[str, Any]) -> str:
    """Summary then description, whitespace collapsed; too long is a spec error, not a cut."""
    text = " ".join(" ".join([op.get("summary", ""), op.get("description", "")]).split())
    if len(text) > MAX_DESCRIPTION:
        raise SpecError(
            f"{name}: summary + description is {len(text)} characters; keep it under "
            f"{MAX_DESCRIPTION} so a host's tool list stays small"
        )
    return text


def _annotations(method: str) -> dict[str, Any]:
    """MCP hints from the HTTP method's semantics (the display name is the tool's `title`)."""
    if method == "get":
        hints = {"readOnlyHint": True}
    elif method in {"delete", "put"}:
        hints = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}
    elif method == "patch":
        hints = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False}
    else:
        hints = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}
    return {**hints, "openWorldHint": False}


def _input(
    spec: dict[str, Any], name: str, op: dict[str, Any], shared: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """One object schema over path, query, header and body fields, and where each one goes."""
    params: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*shared, *op.get("parameters", [])]:
        param = resolve(spec, raw)
        if param.get("in") == "cookie":
            raise SpecError(f"{name}: cookie parameters cannot be MCP arguments")
        params[(param["in"], param["name"])] = param  # operation-level overrides path-level
    # (in, wire name, schema, required, argument name)
    fields: list[tuple[str, str, dict[str, Any], bool, str]] = []
    for (where, wire), param in params.items():
        if where == "header" and wire.lower() in {"authorization", "content-type", "accept"}:
            continue
        if param.get("x-mcp") is False:
            continue
        schema = json_schema(spec, param.get("schema", {}))
        if param.get("description") and "description" not in schema:
            schema = {"description": " ".join(param["description"].split()), **schema}
        # A header's own name (If-Match) is no identifier: `x-mcp-name` gives its argument's.
        arg_name = param.get("x-mcp-name", wire)
        fields.append((where, wire, schema, bool(param.get("required")), arg_name))
    body = _request_body(spec, name, op)
    if body is not None:
        body_schema, body_required = body
        props = body_schema.get("properties")
        if isinstance(props, dict):
            # A body field marked `x-mcp: false` stays valid over REST but is no argument.
            hidden = _hidden_fields(spec, op)
            props = {k: v for k, v in props.items() if k not in hidden}
        if body_schema.get("type") == "object" and isinstance(props, dict):
            needed = set(body_schema.get("required", [])) if body_required else set()
            for wire, prop in props.items():
                fields.append(("body", wire, prop, wire in needed, wire))
        else:
            # A body that is not an object of named fields travels whole as one argument.
            fields.append(("body", "", body_schema, body_required, "body"))
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: dict[str, dict[str, Any]] = {}
    for where in LOCATIONS:
        for field_in, wire, schema, is_required, arg_name in fields:
            if field_in != where:
                continue
            arg = _claim(name, where, arg_name, properties)
            properties[arg] = schema
            arguments[arg] = {"in": where, "name": wire or None}
            if is_required:
                required.append(arg)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False
    return input_schema, arguments


def _hidden_fields(spec: dict[str, Any], op: dict[str, Any]) -> set[str]:
    """Body properties the spec marks `x-mcp: false` (read before extensions are dropped)."""
    body = resolve(spec, op["requestBody"])
    schema = resolve(spec, body["content"]["application/json"].get("schema", {}))
    return {
        k for k, v in schema.get("properties", {}).items() if resolve(spec, v).get("x-mcp") is False
    }


def _claim(op_name: str, where: str, wire: str, taken: dict[str, Any]) -> str:
    """The argument name for a field: its own name, or `<in>_<name>` when an earlier
    location (path, then query, then header, then body) already uses it."""
    if wire not in taken:
        return wire
    prefixed = f"{where}_{wire}"
    if prefixed in taken:
        raise SpecError(f"{op_name}: argument name {prefixed!r} is used twice")
    return prefixed


def _request_body(
    spec: dict[str, Any], name: str, op: dict[str, Any]
) -> tuple[dict[str, Any], bool] | None:
    """The JSON request body's resolved schema and whether the body is required."""
    raw = op.get("requestBody")
    if raw is None:
        return None
    body = resolve(spec, raw)
    content = body.get("content", {})
    if "application/json" not in content:
        raise SpecError(f"{name}: only application/json request bodies become MCP arguments")
    return json_schema(spec, content["application/json"].get("schema", {})), bool(
        body.get("required")
    )


def _outputs(
    spec: dict[str, Any], name: str, op: dict[str, Any], arguments: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The output schema over every 2xx response, and how each success status comes back."""
    success: dict[str, str] = {}
    schemas: list[dict[str, Any]] = []
    empty: list[int] = []
    for status, raw in sorted(op.get("responses", {}).items()):
        if not re.fullmatch(r"2\d\d", str(status)):
            continue
        response = resolve(spec, raw)
        content = response.get("content") or {}
        if "application/json" in content:
            success[str(status)] = "json"
            schema = json_schema(spec, content["application/json"].get("schema", {}))
            if schema not in schemas:
                schemas.append(schema)
        elif any(m.startswith("text/") for m in content):
            success[str(status)] = "text"
        elif not content:
            success[str(status)] = "empty"
            empty.append(int(status))
        else:
            raise SpecError(f"{name}: response {status} has no JSON or text media type")
    if empty:
        schemas.append(_empty_result_schema(empty, arguments))
    if not schemas:
        return {"schema": None, "success": success}
    if len(schemas) == 1 and schemas[0].get("type") == "object":
        return {"schema": schemas[0], "success": success}
    # Several success shapes (e.g. 201 saved / 202 pending review): an object that is one of them.
    return {"schema": {"type": "object", "anyOf": schemas}, "success": success}


def _compact(node: Any, depth: int = 0, items: bool = False) -> Any:
    """An output schema that names the envelope (its fields, their types, which are required)
    and calls what it holds an object or a list of objects, no deeper.

    Every memory-bearing tool would otherwise repeat the whole memory object (over half of
    tools/list). Clients still check the shape of each result (MCP clients validate
    structured content against the output schema); the REST response itself is checked
    against the full spec schema where response validation is on.
    """
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key in ("type", "enum", "required"):
        # Below the named levels an object is just an object: its fields are not listed; a
        # list's items are named by type alone (their allowed values are the REST schema's).
        if key in node and (
            key == "type" or (key == "enum" and not items) or depth < OUTPUT_LEVELS
        ):
            out[key] = copy.deepcopy(node[key])
    if "anyOf" in node:
        out["anyOf"] = [_compact(option, depth, items) for option in node["anyOf"]]
    if "items" in node:
        out["items"] = _compact(node["items"], depth, True)  # a list is no level of its own
    if "properties" in node and depth < OUTPUT_LEVELS:
        out["properties"] = {k: _compact(v, depth + 1) for k, v in node["properties"].items()}
    return out


def _empty_result_schema(
    statuses: list[int], arguments: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """What the executor returns for a success without a body: ok, the status, the path args."""
    properties: dict[str, Any] = {
        "ok": {"type": "boolean", "const": True},
        "status": {"type": "integer", "enum": statuses},
    }
    for arg, where in arguments.items():
        if where["in"] == "path":
            properties[arg] = {"type": "string"}
    return {
        "type": "object",
        "description": "The operation succeeded and returned no body.",
        "required": sorted(properties),
        "properties": properties,
    }
