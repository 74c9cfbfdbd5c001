"""Search-first tools: rank the capabilities a caller may use for a phrase, and run one by name."""

from __future__ import annotations

import copy
from typing import Any

from memory_bank.mcp import ranking
from memory_bank.mcp.manifest import Capability, Manifest
from memory_bank.mcp.portable import portable

SEARCH = "search_capabilities"
EXECUTE = "execute_capability"

# The full schemas calls are validated against; hosts see their portable form.
SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 512,
            "description": "What you want to do, in plain words.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "default": 3,
            "description": "Most matches to return.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
# What a host keeps of an argument's schema in execute_capability's list of argument names.
_SKELETON = ("type", "enum", "items", "properties", "required")


def search_tool() -> dict[str, Any]:
    """The search_capabilities tool definition."""
    return {
        "name": SEARCH,
        "title": "Find the right memory tool",
        "description": (
            'Find the memory-bank capability for what you want, in plain words ("save a '
            'memory", "what do I know about Acme", "forget that"): the best matches with their '
            "input schemas, to run with execute_capability."
        ),
        "inputSchema": portable(SEARCH_INPUT),
        "outputSchema": {
            "type": "object",
            "required": ["results"],
            "properties": {
                "results": {
                    "type": "array",
                    "items": {"type": "object", "required": ["name", "title", "score"]},
                }
            },
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


def execute_input(manifest: Manifest) -> dict[str, Any]:
    """The full schema execute_capability calls are validated against: any capability of the
    manifest (one the key may not use is refused by REST with the scope it lacks)."""
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": manifest.names},
            "arguments": {"type": "object", "default": {}},
        },
        "required": ["name"],
        "additionalProperties": False,
    }


def execute_tool(view: Manifest) -> dict[str, Any]:
    """The execute_capability tool definition, over the capabilities a caller may use."""
    hints = [c.definition.get("annotations", {}) for c in view.capabilities]
    read_only = all(h.get("readOnlyHint") is True for h in hints)
    annotations: dict[str, Any] = {"readOnlyHint": read_only}
    if not read_only:
        annotations["destructiveHint"] = any(h.get("destructiveHint") is True for h in hints)
        annotations["idempotentHint"] = False
    return {
        "name": EXECUTE,
        "title": "Run a memory tool by name",
        "description": (
            "Run a memory-bank capability by name with the arguments its inputSchema (from "
            "search_capabilities) takes; returns its result, or a problem naming the field."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": view.names},
                "arguments": {
                    "type": "object",
                    "description": "Its arguments (send only those of the one you run).",
                    "properties": _argument_names(view),
                },
            },
            "required": ["name"],
        },
        "annotations": {**annotations, "openWorldHint": False},
    }


def _argument_names(view: Manifest) -> dict[str, Any]:
    """Every capability's arguments, by name, as bare types: a host that accepts no free-form
    object (Gemini) can still pass them. The first capability to use a name types it; an enum
    lists every value any of them accepts (`scope`: user and org to save, all too to read)."""
    names: dict[str, Any] = {}
    for capability in view.capabilities:
        for name, schema in capability.definition["inputSchema"]["properties"].items():
            shape = _skeleton(schema)
            known = names.setdefault(name, shape)
            if known is not shape and "enum" in known and "enum" in shape:
                known["enum"] += [v for v in shape["enum"] if v not in known["enum"]]
    return names


def _skeleton(schema: Any) -> Any:
    """A schema's shape only: types, enums and nested names, no descriptions or bounds."""
    if not isinstance(schema, dict):
        return schema
    out = {k: copy.deepcopy(schema[k]) for k in _SKELETON if k in schema}
    if "items" in out:
        out["items"] = _skeleton(schema["items"])
    if "properties" in out:
        out["properties"] = {k: _skeleton(v) for k, v in schema["properties"].items()}
    return out


def search_results(
    manifest: Manifest,
    view: Manifest,
    query: str,
    limit: int,
    embedder: ranking.Embedder | None = None,
) -> dict[str, Any]:
    """The structured answer of search_capabilities: what the phrase asks for among every
    capability, each one the caller's key may not run (not in view) with a note saying so,
    never another capability in its place (ranked by meaning too with an embedder)."""
    found = ranking.answer(manifest, query, limit, embedder)
    usable = set(view.names)
    answer: dict[str, Any] = {
        "results": [_result(c, score, c.name in usable) for c, score in found.ranked]
    }
    if found.declined is not None and not found.ranked:
        answer["note"] = _declined(manifest, found.declined)
    return answer


def _result(capability: Capability, score: float, usable: bool) -> dict[str, Any]:
    """One match: what an agent needs to call it, or why it cannot."""
    tool = capability.definition
    result: dict[str, Any] = {
        "name": capability.name,
        "title": tool.get("title", capability.name),
        "description": tool.get("description", ""),
        "score": score,
    }
    if not capability.reachable:
        where = f"{capability.method} {capability.path}"
        needs = f" with a key that has {', '.join(capability.scopes)}" if capability.scopes else ""
        result["note"] = (
            f"Not an MCP capability: it is done over the REST API ({where}){needs}, or in the "
            "web panel. Tell the user; do not run another capability instead."
        )
        return result
    result["inputSchema"] = tool["inputSchema"]
    result["annotations"] = tool.get("annotations", {})
    if not usable:
        result["note"] = (
            f"This key cannot run {capability.name}: it needs {', '.join(capability.scopes)}. "
            "Tell the user (a key with that scope can); do not run another capability instead."
        )
    return result


def _declined(manifest: Manifest, declined: Capability) -> str:
    """What to do when the phrase says not to do something: nothing, or undo it if done."""
    title = str(declined.definition.get("title", declined.name)).lower()
    note = f"Nothing to run: the user asked you not to do this ({title})."
    undo = next(
        (
            c
            for c in manifest.capabilities
            if declined.method == "POST"
            and c.method == "DELETE"
            and c.path.rsplit("/", 1)[0] == declined.path
        ),
        None,
    )
    if undo is not None:
        note += f" If you already did it, undo it with {undo.name}."
    return note
