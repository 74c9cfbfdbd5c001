"""The spec describes what the server really issues and accepts: id and cursor patterns that
match every value it mints, and links whose values always fit the parameters they feed."""

from __future__ import annotations

import re
from typing import Any

from memory_bank.domain import cursor
from memory_bank.ids import new_id
from memory_bank.spec import load_spec, operations


def _resolve(spec: dict[str, Any], node: Any) -> Any:
    """Follow local $refs."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _parameter(spec: dict[str, Any], operation_id: str, name: str) -> dict[str, Any]:
    """The schema of one parameter of an operation."""
    for op in operations(spec):
        if op.id == operation_id:
            for param in [*op.shared_parameters, *op.definition.get("parameters", [])]:
                param = _resolve(spec, param)
                if param["name"] == name:
                    return _resolve(spec, param["schema"])
    raise AssertionError(f"{operation_id} has no parameter {name}")


def test_issued_ids_and_cursors_match_the_spec_patterns():
    spec = load_spec()
    memory_id = _parameter(spec, "getMemoryById", "id")
    draft_id = _parameter(spec, "getMemoryDraftById", "id")
    page = _parameter(spec, "getMemory", "cursor")
    for _ in range(50):
        mid, did = new_id("mem"), new_id("mdr")
        assert re.fullmatch(memory_id["pattern"], mid) and len(mid) <= memory_id["maxLength"]
        assert re.fullmatch(draft_id["pattern"], did)
        issued = cursor.encode(b"secret", "alice", "memories", mid)
        assert re.fullmatch(page["pattern"], issued) and len(issued) <= page["maxLength"]
        assert re.fullmatch(page["pattern"], cursor.encode(b"secret", "alice", "drafts", did))
    # What schemathesis found schema-valid and the server refused is no longer schema-valid.
    for malformed in ("0", "abc", "a.b", "settings", "..", "mdr_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C"):
        assert not re.fullmatch(page["pattern"], malformed)
        assert not re.fullmatch(memory_id["pattern"], malformed)
    # The examples (which fuzzers send first) are well-formed too.
    for schema in (memory_id, draft_id, page):
        assert re.fullmatch(schema["pattern"], schema["example"])


def _request_field(spec: dict[str, Any], operation_id: str, pointer: list[str]) -> Any:
    """The request-body schema of the field a response pointer echoes (memory/tags/0 ->
    NewMemory's tags items), or None when the request does not supply it (ids)."""
    op = next(o for o in operations(spec) if o.id == operation_id)
    body = op.definition.get("requestBody", {}).get("content", {}).get("application/json", {})
    node = _resolve(spec, body.get("schema"))
    for step in pointer[1:]:  # the envelope's key ("memory") is not in the request
        if node is None:
            return None
        if step.isdigit():
            node = _resolve(spec, node.get("items"))
        else:
            node = _resolve(spec, node.get("properties", {}).get(step))
    return node


def test_link_values_fit_the_parameters_they_feed():
    spec = load_spec()
    checked = 0
    for op in operations(spec):
        for response in op.definition.get("responses", {}).values():
            for name, link in _resolve(spec, response).get("links", {}).items():
                for parameter, expression in link.get("parameters", {}).items():
                    target = _parameter(spec, link["operationId"], parameter)
                    if not expression.startswith("$response.body#/"):
                        continue
                    pointer = expression.removeprefix("$response.body#/").split("/")
                    source = _request_field(spec, op.id, pointer)
                    if source is None or "maxLength" not in target:
                        continue
                    checked += 1
                    assert "maxLength" in source and source["maxLength"] <= target["maxLength"], (
                        f"{op.id} link {name}: {expression} may hold "
                        f"{source.get('maxLength', 'any number of')} characters, "
                        f"{link['operationId']}.{parameter} takes {target['maxLength']}"
                    )
    assert checked >= 1
