"""Tool input schemas in the subset every major host accepts, and the check that holds them to it.

Gemini's function parameters, OpenAI (non-strict), Anthropic and VS Code each reject something
the others allow: type lists, `null` in an enum, an object without properties, `default`,
`additionalProperties` (Google's Python SDK crashes on it), `$ref`, `anyOf`... What all of them
accept is small: one `type` per node, string enums, named properties, a few bounds. The server
keeps validating every call against the full schema, so a host only loses hints.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
# The keywords a host may see. Every host accepts these as sent.
ALLOWED = frozenset(
    {"type", "description", "properties", "required", "items", "enum"}
    | {"minimum", "maximum", "maxLength", "maxItems"}
)
# Keywords the server enforces itself and a host only trips on: dropped from what hosts see.
# (`pattern` dialects differ between hosts; `minLength` is refused by strict modes.)
SERVER_SIDE = frozenset({"additionalProperties", "pattern", "minLength", "format", "title"})
# Gemini's rule for parameter names; OpenAI's and Gemini's for tool names.
PROPERTY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def portable(schema: dict[str, Any]) -> dict[str, Any]:
    """The host-facing form of a full input schema: nullable becomes optional, a default moves
    into the description, server-enforced keywords go. Anything else is kept, so check() can
    refuse what has no portable spelling (oneOf, a free-form object, ...)."""
    return _node(copy.deepcopy(schema), root=True)


def _node(node: Any, root: bool = False) -> Any:
    """One schema node made portable (see portable())."""
    if not isinstance(node, dict):
        return node
    node = _not_null(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (key in SERVER_SIDE and not (key == "title" and root)) or key.startswith("x-"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _node(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _node(value)
        elif key != "default":
            out[key] = value
    if "default" in node:
        said = out.get("description", "").rstrip()
        sep = " " if said.endswith(".") else ". " if said else ""
        out["description"] = f"{said}{sep}Default: {_spelled(node['default'])}."
    return out


def _not_null(node: dict[str, Any]) -> dict[str, Any]:
    """A nullable schema as its non-null part: leaving a value out is how hosts say none."""
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        node = {**node, "type": rest[0] if len(rest) == 1 else rest}
    if "enum" in node and None in node["enum"]:
        node = {**node, "enum": [v for v in node["enum"] if v is not None]}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            rest_of = {k: v for k, v in node.items() if k != "anyOf"}
            node = {**kept[0], **rest_of}
        else:
            node = {**node, "anyOf": kept}
    return node


def _spelled(value: Any) -> str:
    """A default value as a description says it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == {} or value == []:
        return "none"
    return str(value)


def check(name: str, schema: Any) -> list[str]:
    """What keeps a tool out of the portable subset, one finding per line (none: it is in)."""
    found: list[str] = []
    if not TOOL_NAME.match(name):
        found.append(f"{name}: the tool name must match {TOOL_NAME.pattern}")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return [*found, f"{name}: the input schema must be an object schema"]
    if not isinstance(schema.get("properties"), dict):
        found.append(f"{name}: the input schema needs `properties` (OpenAI), even when empty")
    _check(schema, "", found.append, name)
    return found


def _check(node: Any, path: str, say: Callable[[str], None], name: str) -> None:
    """Findings for one node (at path, "" for the root) and everything below it."""
    where = f"{name}: {path or 'the input schema'}:"
    if not isinstance(node, dict):
        say(f"{where} a schema must be an object")
        return
    for key in node:
        if key not in ALLOWED and not (key == "title" and not path):
            say(f"{where} `{key}` is not accepted by every host")
    kind = node.get("type")
    if not isinstance(kind, str) or kind not in TYPES:
        say(f"{where} `type` must be one of {', '.join(sorted(TYPES))}, not {kind!r}")
        return
    if "enum" in node:
        values = node["enum"]
        if kind != "string" or not values or not all(isinstance(v, str) for v in values):
            say(f"{where} an enum must be a non-empty list of strings on a string")
    if kind == "array":
        if isinstance(node.get("items"), dict):
            _check(node["items"], f"{path}[]", say, name)
        else:
            say(f"{where} an array needs one `items` schema")
    if kind != "object":
        return
    properties = node.get("properties")
    if not isinstance(properties, dict) or (not properties and path):
        say(f"{where} an object needs named `properties` (no free-form objects)")
        properties = properties if isinstance(properties, dict) else {}
    required = node.get("required", [])
    if len(set(required)) != len(required) or not set(required) <= set(properties):
        say(f"{where} `required` names a property twice or one that does not exist")
    for prop, sub in properties.items():
        if not PROPERTY_NAME.match(prop):
            say(f"{where} the property name {prop!r} must match {PROPERTY_NAME.pattern}")
        _check(sub, f"{path}.{prop}" if path else prop, say, name)
