"""Shared bits for the MCP tests: spec copies, schema checks, the SDK client over any transport."""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator

from memory_bank.spec import load_spec


def spec_copy() -> dict[str, Any]:
    """A fresh copy of the real spec to modify."""
    return copy.deepcopy(load_spec())


def refs_in(node: Any) -> list[str]:
    """Every $ref anywhere in a JSON document."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.append(str(value))
            found.extend(refs_in(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(refs_in(item))
    return found


def assert_standalone_schema(schema: dict[str, Any]) -> None:
    """A valid Draft 2020-12 schema with no $ref (several hosts reject $ref)."""
    Draft202012Validator.check_schema(schema)
    assert refs_in(schema) == [], json.dumps(schema)[:300]


def payload(result: Any) -> Any:
    """The JSON a tool result carries as text."""
    return json.loads(result.content[0].text)


# The tool list a host sees: the manifest's tools, then the two search-first tools.
TOOLS = [
    "postMemory",
    "getMemory",
    "getMemorySearch",
    "getMemoryDraftById",
    "getMemoryById",
    "deleteMemoryById",
    "search_capabilities",
    "execute_capability",
]
