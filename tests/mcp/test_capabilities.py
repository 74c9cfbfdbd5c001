"""The two search-first tools: what they show a caller, and what search_capabilities returns."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from memory_bank.mcp import capabilities, manifest


def test_results_carry_what_an_agent_needs_to_call():
    found = capabilities.search_results(manifest.load(), "save a memory", 1)["results"]
    assert [r["name"] for r in found] == ["postMemory"]
    assert found[0]["inputSchema"]["required"] == ["content"]
    assert found[0]["annotations"]["readOnlyHint"] is False
    Draft202012Validator(capabilities.search_tool()["outputSchema"]).validate({"results": found})


def test_a_read_only_view_finds_and_offers_only_reads():
    read_only = manifest.load().for_scopes(("mcp:read",))
    assert set(read_only.names) == {
        "getMemory",
        "getMemorySearch",
        "getMemoryDraftById",
        "getMemoryById",
        "getMemoryRevisions",
    }
    found = capabilities.search_results(read_only, "save a memory", 5)["results"]
    assert "postMemory" not in [r["name"] for r in found]
    execute = capabilities.execute_tool(read_only)
    assert execute["inputSchema"]["properties"]["name"]["enum"] == read_only.names
    # Only reads behind it, so hosts may treat it as a read.
    assert execute["annotations"]["readOnlyHint"] is True
    assert "destructiveHint" not in execute["annotations"]
    arguments = execute["inputSchema"]["properties"]["arguments"]["properties"]
    assert "content" not in arguments and {"q", "id", "limit", "cursor"} <= set(arguments)


def test_execute_lists_every_argument_name_without_a_free_form_object():
    full = manifest.load()
    execute = capabilities.execute_tool(full)
    arguments = execute["inputSchema"]["properties"]["arguments"]
    assert arguments["type"] == "object" and "additionalProperties" not in arguments
    assert set(arguments["properties"]) == {
        name for c in full.capabilities for name in c.definition["inputSchema"]["properties"]
    }
    contexts = arguments["properties"]["contexts"]
    assert set(contexts["items"]["properties"]) == {
        "snippet",
        "conversation_id",
        "message_id",
        "origin",
    }
    assert execute["annotations"]["destructiveHint"] is True


def test_execute_is_validated_against_every_capability_not_the_view():
    # A read-only key may still name a write: REST then refuses it with the scope it lacks.
    schema = capabilities.execute_input(manifest.load())
    assert "postMemory" in schema["properties"]["name"]["enum"]
    assert schema["additionalProperties"] is False
