"""The spec -> manifest generator: shapes, schemas, annotations, bindings, naming rules."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator
from mcp_helpers import CORE, assert_standalone_schema, expected_tools, refs_in, spec_copy

from memory_bank.mcp.generate import MAX_DESCRIPTION, SpecError, build_manifest, render
from memory_bank.mcp.manifest import MANIFEST_PATH


def tools_by_name(spec=None):
    manifest = build_manifest(spec or spec_copy())
    return {t["name"]: t for t in manifest["tools"]}


def test_one_tool_per_operation_not_marked_off():
    names = list(tools_by_name())
    # The manifest holds the unlisted ones too (x-mcp-listed: false): execute_capability runs
    # them, tools/list leaves them out.
    unlisted = [n for n, t in tools_by_name().items() if t["x-memory-bank"].get("listed") is False]
    assert unlisted == [
        "getMemoryDrafts",
        "getMemoryDraftById",
        "patchMemoryById",
        "getMemoryRevisions",
        "postMemoryRestore",
    ]
    assert [n for n in names if n not in unlisted] == expected_tools()[:-2]
    assert [n for n in names if n in CORE] == CORE
    # x-mcp: false: no tool, but named (with its route) for search_capabilities.
    elsewhere = {e["name"]: e for e in build_manifest(spec_copy())["elsewhere"]}
    for off in ("getHealthz", "getReadyz", "getMemoryPrompt", "postMemoryDraftConfirm"):
        assert off not in names and off in elsewhere
        assert set(elsewhere[off]) == {"name", "title", "description", "x-memory-bank"}
    assert elsewhere["postMemoryDraftConfirm"]["x-memory-bank"]["scopes"] == ["memory:review"]
    assert elsewhere["postMemoryDraftConfirm"]["x-memory-bank"]["examples"]


def test_every_schema_stands_alone_and_is_valid():
    for tool in tools_by_name().values():
        assert_standalone_schema(tool["inputSchema"])
        assert tool["inputSchema"]["type"] == "object"
        # Hosts see the portable form; calls are validated against the full one.
        assert "additionalProperties" not in tool["inputSchema"]
        full = tool["x-memory-bank"]["inputSchema"]
        assert_standalone_schema(full)
        assert full["additionalProperties"] is False
        assert set(full["properties"]) == set(tool["inputSchema"]["properties"])
        if "outputSchema" in tool:
            assert_standalone_schema(tool["outputSchema"])
            assert tool["outputSchema"]["type"] == "object"
        assert 0 < len(tool["description"]) <= MAX_DESCRIPTION


def test_input_merges_path_query_body_and_keeps_limits():
    tools = tools_by_name()
    post = tools["postMemory"]["inputSchema"]
    assert post["required"] == ["content"]
    assert post["properties"]["content"]["maxLength"] == 8000
    assert post["properties"]["tags"]["maxItems"] == 32
    assert post["properties"]["tags"]["items"]["maxLength"] == 64
    snippet = post["properties"]["contexts"]["items"]["properties"]["snippet"]
    assert snippet["maxLength"] == 4000
    # The ignored compatibility field is marked x-mcp: false and is no argument; scope is one,
    # told to agents with when to share and what never to.
    assert "source" not in post["properties"]
    assert post["properties"]["scope"]["enum"] == ["user", "org"]
    assert "never for secrets" in post["properties"]["scope"]["description"]
    search = tools["getMemorySearch"]
    assert search["inputSchema"]["required"] == ["q"]
    assert search["inputSchema"]["properties"]["limit"]["maximum"] == 50
    assert search["x-memory-bank"]["http"] == {
        "method": "GET",
        "path": "/v1/memory/search",
        "arguments": {
            "q": {"in": "query", "name": "q"},
            "limit": {"in": "query", "name": "limit"},
            "scope": {"in": "query", "name": "scope"},
            "mode": {"in": "query", "name": "mode"},
            "min_score": {"in": "query", "name": "min_score"},
            **{
                name: {"in": "query", "name": name}
                for name in ("tag", "created_after", "created_before", "updated_after", "source")
            },
        },
        "success": {"200": "json"},
    }
    by_id = tools["getMemoryById"]
    assert by_id["inputSchema"]["required"] == ["id"]
    assert by_id["x-memory-bank"]["http"]["arguments"] == {"id": {"in": "path", "name": "id"}}
    assert tools["postMemory"]["x-memory-bank"]["scopes"] == ["mcp:write"]
    assert tools["getMemory"]["x-memory-bank"]["scopes"] == ["mcp:read"]


def test_nullable_becomes_json_schema_null():
    save = tools_by_name()["postMemory"]
    full = save["x-memory-bank"]["inputSchema"]
    origin = full["properties"]["contexts"]["items"]["properties"]["origin"]
    assert origin["type"] == ["string", "null"]
    validator = Draft202012Validator(origin)
    assert validator.is_valid(None) and validator.is_valid("active_conversation")
    assert not validator.is_valid("elsewhere")
    # Hosts see an optional string: leaving it out is how they say "none".
    shown = save["inputSchema"]["properties"]["contexts"]["items"]["properties"]["origin"]
    assert shown == {"type": "string", "enum": ["active_conversation", "searched_conversation"]}


def test_limits_only_the_server_can_check_stay_in_the_full_schema():
    tools = tools_by_name()
    content = tools["postMemory"]["inputSchema"]["properties"]["content"]
    assert content["maxLength"] == 8000 and "pattern" not in content and "minLength" not in content
    full = tools["postMemory"]["x-memory-bank"]["inputSchema"]["properties"]["content"]
    assert full["minLength"] == 1 and full["pattern"]
    limit = tools["getMemory"]["inputSchema"]["properties"]["limit"]
    assert "default" not in limit and limit["description"].endswith("Default: 20.")
    assert (
        tools["getMemory"]["x-memory-bank"]["inputSchema"]["properties"]["limit"]["default"] == 20
    )


def test_annotations_follow_the_method():
    tools = tools_by_name()
    for name in ("getMemory", "getMemorySearch", "getMemoryById"):
        assert tools[name]["annotations"]["readOnlyHint"] is True
        assert tools[name]["annotations"]["openWorldHint"] is False
    delete = tools["deleteMemoryById"]["annotations"]
    assert delete["destructiveHint"] is True and delete["idempotentHint"] is True
    assert delete["readOnlyHint"] is False and delete["openWorldHint"] is False
    create = tools["postMemory"]["annotations"]
    assert create["destructiveHint"] is False and create["idempotentHint"] is False
    # The display name is the tool's own title (MCP 2025-06-18); annotations do not repeat it.
    assert tools["postMemory"]["title"] == "Save a memory" and "title" not in create


def test_output_schema_accepts_both_saved_and_pending_answers():
    schema = tools_by_name()["postMemory"]["outputSchema"]
    validator = Draft202012Validator(schema)
    memory = {
        "id": "mem_1",
        "content": "c",
        "tags": [],
        "source": "s",
        "scope": "user",
        "created_at": "2026-12-02T09:31:54.123Z",
        "updated_at": "2026-12-02T09:31:54.123Z",
        "contexts": [],
    }
    draft = {
        "id": "mdr_1",
        "status": "pending_review",
        "content": "c",
        "tags": [],
        "source": "s",
        "scope": "user",
        "contexts": [],
        "created_at": "2026-12-02T09:31:54.123Z",
        "expires_at": "2026-12-09T09:31:54.123Z",
    }
    assert validator.is_valid({"memory": memory, "similar": []})
    assert validator.is_valid({"status": "pending_review", "message": "m", "draft": draft})
    assert not validator.is_valid({"something": "else"})
    assert not validator.is_valid({"memory": "not an object"})
    assert not validator.is_valid({"status": "saved", "message": "m", "draft": draft})


def test_output_schemas_name_the_envelope_only():
    # The memory object is not repeated in every tool (it was over half of tools/list).
    tools = tools_by_name()
    assert tools["getMemoryById"]["outputSchema"] == {
        "type": "object",
        "required": ["memory"],
        "properties": {"memory": {"type": "object"}},
    }
    page = tools["getMemory"]["outputSchema"]
    assert page["required"] == ["memories", "next_cursor"]
    assert page["properties"]["memories"] == {"type": "array", "items": {"type": "object"}}
    assert page["properties"]["next_cursor"] == {"type": ["string", "null"]}
    results = tools["getMemorySearch"]["outputSchema"]["properties"]["results"]
    assert results == {"type": "array", "items": {"type": "object"}}


def test_delete_without_body_describes_what_the_executor_returns():
    schema = tools_by_name()["deleteMemoryById"]["outputSchema"]
    assert Draft202012Validator(schema).is_valid({"ok": True, "status": 204, "id": "mem_1"})
    assert tools_by_name()["deleteMemoryById"]["x-memory-bank"]["http"]["success"] == {
        "204": "empty"
    }


def test_a_name_in_two_places_keeps_path_then_query_then_body():
    spec = spec_copy()
    spec["paths"]["/v1/books/{id}"] = {
        "put": {
            "operationId": "putBook",
            "summary": "Replace a book.",
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "id", "in": "query", "schema": {"type": "integer"}},
                {"name": "title", "in": "query", "schema": {"type": "string"}},
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["title"],
                            "properties": {"title": {"type": "string"}, "id": {"type": "string"}},
                        }
                    }
                },
            },
            "responses": {"200": {"description": "ok"}},
        }
    }
    tool = tools_by_name(spec)["putBook"]
    assert tool["x-memory-bank"]["http"]["arguments"] == {
        "id": {"in": "path", "name": "id"},
        "query_id": {"in": "query", "name": "id"},
        "title": {"in": "query", "name": "title"},
        "body_title": {"in": "body", "name": "title"},
        "body_id": {"in": "body", "name": "id"},
    }
    assert tool["inputSchema"]["required"] == ["id", "body_title"]
    assert tool["annotations"]["idempotentHint"] is True


def test_broken_specs_fail_loudly():
    spec = spec_copy()
    spec["paths"]["/v1/memory"]["get"]["description"] = "word " * MAX_DESCRIPTION
    with pytest.raises(SpecError, match="getMemory"):
        build_manifest(spec)
    spec = spec_copy()
    spec["paths"]["/v1/memory"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ] = {"$ref": "#/components/schemas/Nope"}
    with pytest.raises(SpecError, match="does not resolve"):
        build_manifest(spec)
    spec = spec_copy()
    tags = spec["components"]["schemas"]["Tags"]
    tags["items"] = {"$ref": "#/components/schemas/Tags"}
    with pytest.raises(SpecError, match="recursive \\$ref #/components/schemas/Tags"):
        build_manifest(spec)


def test_the_error_wording_extensions_stay_server_side():
    tool = tools_by_name()["getMemoryById"]
    full = tool["x-memory-bank"]["inputSchema"]["properties"]["id"]
    assert full["x-format"].startswith("a memory id")
    assert full["x-other-ids"] == {"mdr_": "getMemoryDraftById"}
    assert "example" not in full and not any(
        k.startswith("x-") for k in tool["inputSchema"]["properties"]["id"]
    )


def test_output_is_deterministic_and_matches_the_shipped_manifest():
    first = render(build_manifest(spec_copy()))
    assert first == render(build_manifest(spec_copy()))
    assert MANIFEST_PATH.read_text(encoding="utf-8") == first
    assert refs_in(first) == []
