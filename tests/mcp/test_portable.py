"""Input schemas in the subset every major host accepts (Gemini, OpenAI, Anthropic, VS Code)."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from memory_bank.mcp import manifest, portable
from memory_bank.mcp.server import tools_for

VIEWS = {"every scope": (), "read-only": ("mcp:read",), "write-only": ("mcp:write",)}


@pytest.mark.parametrize("view", list(VIEWS))
def test_every_tool_a_host_sees_is_portable(view):
    shipped = manifest.load()
    seen = shipped.for_scopes(VIEWS[view]) if VIEWS[view] else shipped
    tools = tools_for(seen)
    assert tools
    for tool in tools:
        assert portable.check(tool.name, tool.input_schema) == [], tool.name
        Draft202012Validator.check_schema(tool.input_schema)


def test_the_full_schema_still_guards_every_call():
    save = manifest.load().get("postMemory")
    full = Draft202012Validator(save.input_schema)
    assert not full.is_valid({"content": "x", "text": "unknown argument"})
    assert not full.is_valid({"content": ""})
    assert not full.is_valid({"content": "x\u0000y"})
    assert full.is_valid({"content": "x", "contexts": [{"snippet": "s", "origin": None}]})
    # What hosts see says less, never something else: every valid call is valid for it too.
    shown = Draft202012Validator(save.definition["inputSchema"])
    assert shown.is_valid(
        {"content": "x", "contexts": [{"snippet": "s", "origin": "active_conversation"}]}
    )


def test_portable_rewrites_what_has_another_spelling():
    full = {
        "type": "object",
        "properties": {
            "when": {"type": ["string", "null"], "minLength": 1, "pattern": "^x", "format": "date"},
            "kind": {"type": ["string", "null"], "enum": ["a", "b", None]},
            "limit": {"type": "integer", "default": 20, "description": "Per page."},
            "flag": {"type": "boolean", "default": False},
            "maybe": {"anyOf": [{"type": "integer", "maximum": 5}, {"type": "null"}]},
            "nested": {
                "type": "object",
                "additionalProperties": False,
                "title": "Nested",
                "properties": {"a": {"type": "string", "maxLength": 3}},
            },
        },
        "required": ["when"],
        "additionalProperties": False,
    }
    assert portable.portable(full) == {
        "type": "object",
        "properties": {
            "when": {"type": "string"},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "limit": {"type": "integer", "description": "Per page. Default: 20."},
            "flag": {"type": "boolean", "description": "Default: false."},
            "maybe": {"type": "integer", "maximum": 5},
            "nested": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}},
        },
        "required": ["when"],
    }
    assert full["additionalProperties"] is False  # the full schema is left as it was


@pytest.mark.parametrize(
    ("schema", "finding"),
    [
        ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}, "`type`"),
        ({"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}}, "enum"),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, "free-form"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "`items`"),
        ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}, "`oneOf`"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, "`$ref`"),
        ({"type": "object", "properties": {"a": {"type": "string", "const": "x"}}}, "`const`"),
        ({"type": "object", "properties": {"a-b": {"type": "string"}}}, "property name"),
        ({"type": "object", "properties": {}, "required": ["a"]}, "`required`"),
        ({"type": "object"}, "`properties`"),
        ({"type": "string"}, "object schema"),
    ],
)
def test_check_names_what_a_host_would_refuse(schema, finding):
    found = portable.check("tool", schema)
    assert any(finding in f for f in found), found


def test_check_refuses_a_tool_name_with_a_dot():
    assert portable.check("memory.save", {"type": "object", "properties": {}})
    assert portable.check("save_memory", {"type": "object", "properties": {}}) == []
