"""The spec describes what the server really issues and accepts: id and cursor patterns that
match every value it mints, and links whose values always fit the parameters they feed. And the
one schema walker: $refs inlined, OpenAPI 3.0 spelled as JSON Schema for MCP and for draft 4."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from connexion.json_schema import Draft4RequestValidator
from jsonschema import Draft4Validator, Draft202012Validator

from memory_bank.domain import cursor
from memory_bank.ids import new_id
from memory_bank.spec import SpecError, inline, json_schema, load_spec, operations, resolve


def _parameter(spec: dict[str, Any], operation_id: str, name: str) -> dict[str, Any]:
    """The schema of one parameter of an operation."""
    for op in operations(spec):
        if op.id == operation_id:
            for param in [*op.shared_parameters, *op.definition.get("parameters", [])]:
                param = resolve(spec, param)
                if param["name"] == name:
                    return resolve(spec, param["schema"])
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
    node = resolve(spec, body.get("schema"))
    for step in pointer[1:]:  # the envelope's key ("memory") is not in the request
        if node is None:
            return None
        if step.isdigit():
            node = resolve(spec, node.get("items"))
        else:
            node = resolve(spec, node.get("properties", {}).get(step))
    return node


def test_link_values_fit_the_parameters_they_feed():
    spec = load_spec()
    checked = 0
    for op in operations(spec):
        for response in op.definition.get("responses", {}).values():
            for name, link in resolve(spec, response).get("links", {}).items():
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


def _doc(**schemas: Any) -> dict[str, Any]:
    """A spec holding just these component schemas."""
    return {"components": {"schemas": schemas}}


def test_inline_follows_every_ref_into_a_fresh_copy():
    spec = _doc(
        Name={"type": "string", "maxLength": 8},
        Alias={"$ref": "#/components/schemas/Name"},
        Pair={"type": "object", "properties": {"a": {"$ref": "#/components/schemas/Alias"}}},
        **{"a/b~c": {"type": "integer"}},
    )
    before = copy.deepcopy(spec)
    node = {
        "type": "array",
        "items": {"$ref": "#/components/schemas/Pair"},
        # The same reference twice, side by side, is no recursion.
        "allOf": [{"$ref": "#/components/schemas/Name"}, {"$ref": "#/components/schemas/Name"}],
        "x-size": {"$ref": "#/components/schemas/a~1b~0c"},
    }
    out = inline(spec, node)
    assert out["items"] == {
        "type": "object",
        "properties": {"a": spec["components"]["schemas"]["Name"]},
    }
    assert out["allOf"] == [{"type": "string", "maxLength": 8}] * 2
    assert out["x-size"] == {"type": "integer"}
    out["items"]["properties"]["a"]["maxLength"] = 1
    assert spec == before  # the copy shares nothing the caller could change in the spec
    assert resolve(spec, {"$ref": "#/components/schemas/Alias"}) == {
        "type": "string",
        "maxLength": 8,
    }


def test_refs_that_cannot_be_inlined_are_refused():
    tree = _doc(
        Tree={
            "type": "object",
            "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}
            },
        }
    )
    with pytest.raises(SpecError, match="recursive"):
        inline(tree, {"$ref": "#/components/schemas/Tree"})
    loop = _doc(A={"$ref": "#/components/schemas/B"}, B={"$ref": "#/components/schemas/A"})
    with pytest.raises(SpecError, match="recursive"):
        resolve(loop, {"$ref": "#/components/schemas/A"})
    with pytest.raises(SpecError, match="does not resolve"):
        json_schema(_doc(), {"properties": {"x": {"$ref": "#/components/schemas/Nope"}}})
    with pytest.raises(SpecError, match="only local"):
        inline(_doc(), {"$ref": "other.yaml#/X"})


NULLABLE = {
    "type": "object",
    "properties": {
        "plain": {"type": "string", "nullable": True},
        "choice": {"type": "string", "nullable": True, "enum": ["a", "b"]},
        "listed": {"type": "string", "nullable": True, "enum": ["a", None]},
        "legacy": {"type": "integer", "x-nullable": True},
        "untyped": {"nullable": True, "allOf": [{"type": "string"}, {"maxLength": 3}]},
        "data": {"type": "string", "enum": [{"nullable": True, "type": "string"}]},
    },
}


def test_nullable_becomes_null_in_type_and_enum_or_an_any_of():
    props = json_schema(_doc(), NULLABLE)["properties"]
    assert props["plain"] == {"type": ["string", "null"]}
    assert props["choice"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["listed"]["enum"] == ["a", None]
    assert props["legacy"] == {"type": ["integer", "null"]}
    # Without a type there is nothing for null to join: it becomes an alternative.
    untyped = props["untyped"]
    assert untyped["anyOf"][1] == {"type": "null"} and "nullable" not in untyped["anyOf"][0]
    assert Draft202012Validator(untyped).is_valid(None)
    # Enum values are data, not schemas: left as they are.
    assert props["data"]["enum"] == [{"nullable": True, "type": "string"}]


def test_draft_4_says_what_connexion_reads_nullable_as():
    schema = json_schema(_doc(), NULLABLE, "draft-04")
    props = schema["properties"]
    assert props["choice"]["type"] == ["string", "null"] and props["choice"]["enum"][-1] is None
    assert props["legacy"] == {"type": ["integer", "null"], "x-nullable": True}
    # Connexion's nullable relaxes type and enum only: null still meets this allOf, and fails.
    assert "anyOf" not in props["untyped"]
    connexion = Draft4RequestValidator(NULLABLE)
    plain = Draft4Validator(schema)
    for body in ({"untyped": None}, {"choice": None}, {"legacy": None}, {"choice": "c"}, {}):
        assert plain.is_valid(body) == connexion.is_valid(body), body
    assert not plain.is_valid({"untyped": None})


def test_extensions_the_error_wording_reads_are_kept():
    node = {
        "type": "string",
        "pattern": "^mem_",
        "example": "mem_1",
        "deprecated": False,
        "x-format": "a memory id",
        "x-other-ids": {"mdr_": "getMemoryDraftById"},
        "x-mcp": False,
    }
    assert json_schema(_doc(), node) == {
        "type": "string",
        "pattern": "^mem_",
        "x-format": "a memory id",
        "x-other-ids": {"mdr_": "getMemoryDraftById"},
    }
    # Draft 4 keeps everything: the export check's messages quote the example too.
    assert json_schema(_doc(), node, "draft-04") == node


def test_bounds_and_all_of_are_rewritten_for_2020_12_only():
    node = {
        "allOf": [
            {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
            {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
            },
        ]
    }
    out = json_schema(_doc(), node)
    assert out == {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "string"}, "n": {"type": "integer", "exclusiveMinimum": 0}},
    }
    assert json_schema(_doc(), node, "draft-04") == node
