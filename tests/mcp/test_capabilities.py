"""The two search-first tools: what they show a caller, and what search_capabilities returns."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from memory_bank.mcp import capabilities, manifest

READ_ONLY = ("mcp:read",)


def _search(query: str, scopes: tuple[str, ...] | None = None, limit: int = 3) -> dict:
    """search_capabilities' answer for a key with these scopes (default: every capability)."""
    full = manifest.load()
    view = full if scopes is None else full.for_scopes(scopes)
    answer = capabilities.search_results(full, view, query, limit)
    Draft202012Validator(capabilities.search_tool()["outputSchema"]).validate(answer)
    return answer


def test_results_carry_what_an_agent_needs_to_call():
    found = _search("save a memory", limit=1)["results"]
    assert [r["name"] for r in found] == ["postMemory"]
    assert found[0]["inputSchema"]["required"] == ["content"]
    assert found[0]["annotations"]["readOnlyHint"] is False
    assert "note" not in found[0]


@pytest.mark.parametrize(
    ("phrase", "meant", "scope"),
    [
        ("save a memory: the printer is on floor 3", "postMemory", "mcp:write"),
        ("Speicher: der Drucker steht im 3. Stock", "postMemory", "mcp:write"),
        ("Enregistre que la clé du local vélo est chez Paul", "postMemory", "mcp:write"),
        ("fix the typo in that memory", "patchMemoryById", "mcp:write"),
        ("Elimina el recuerdo sobre el gimnasio", "deleteMemoryById", "mcp:write"),
        ("what's waiting for my approval?", "getMemoryDrafts", "memory:review"),
    ],
)
def test_a_key_without_the_scope_gets_what_it_asked_for_with_a_note(phrase, meant, scope):
    # Never a different action (a read-only key asking to save used to get getMemoryById).
    first = _search(phrase, READ_ONLY)["results"][0]
    assert first["name"] == meant
    assert f"This key cannot run {meant}: it needs {scope}" in first["note"]
    assert "do not run another capability" in first["note"]


def test_an_operation_that_is_no_tool_is_named_with_where_it_is_done():
    first = _search("approve the second draft")["results"][0]
    assert first["name"] == "postMemoryDraftConfirm" and "inputSchema" not in first
    assert "Not an MCP capability" in first["note"]
    assert "POST /v1/memory/drafts/{id}/confirm" in first["note"]


@pytest.mark.parametrize(
    ("phrase", "best"),
    [
        # A negated save is no action; a negated "forget" is a save.
        ("never mind, don't save that", None),
        ("no, don't make a memory of that", None),
        ("Nein, speicher das bitte nicht", None),
        ("Non, ne garde pas ça", None),
        ("No, no lo guardes", None),
        ("please don't forget: the dentist moved me to the 9th", "postMemory"),
        ("Vergiss nicht, dass Oma am 3. März Geburtstag hat", "postMemory"),
        ("N'oublie pas que le loyer augmente en juillet", "postMemory"),
        ("No olvides que la ITV del coche vence en agosto", "postMemory"),
        # Taking back what was saved, or another action beside the refusal, is done.
        ("scratch that, don't keep the note about the Lisbon hotel", "deleteMemoryById"),
        ("Vergiss das", "deleteMemoryById"),
        ("Oublie ça", "deleteMemoryById"),
        ("Olvida eso", "deleteMemoryById"),
        # A contrast is a correction.
        ("Corrige le souvenir : c'est le 19, pas le 18", "patchMemoryById"),
        ("actually it's the 19th, not the 18th - fix that", "patchMemoryById"),
    ],
)
def test_negation_and_correction(phrase, best):
    answer = _search(phrase)
    if best is None:
        assert answer["results"] == []
        assert answer["note"].startswith("Nothing to run: the user asked you not to do this")
        assert "deleteMemoryById" in answer["note"]
    else:
        assert answer["results"][0]["name"] == best, answer


def test_a_read_only_view_offers_only_reads():
    read_only = manifest.load().for_scopes(READ_ONLY)
    assert set(read_only.names) == {
        "getMemory",
        "getMemorySearch",
        "getMemoryDraftById",
        "getMemoryById",
        "getMemoryRevisions",
    }
    execute = capabilities.execute_tool(read_only)
    assert execute["inputSchema"]["properties"]["name"]["enum"] == read_only.names
    # Only reads behind it, so hosts may treat it as a read.
    assert execute["annotations"]["readOnlyHint"] is True
    assert "destructiveHint" not in execute["annotations"]
    arguments = execute["inputSchema"]["properties"]["arguments"]["properties"]
    assert "content" not in arguments and {"q", "id", "limit", "cursor"} <= set(arguments)


def test_execute_is_destructive_only_when_a_destructive_capability_is_behind_it():
    full = manifest.load()
    assert capabilities.execute_tool(full)["annotations"]["destructiveHint"] is True
    # A key that may save but reaches nothing destructive: not read-only, not destructive.
    saves = full.only(frozenset({"postMemory", "getMemory"}))
    hints = capabilities.execute_tool(saves)["annotations"]
    assert hints["readOnlyHint"] is False and hints["destructiveHint"] is False
    # A reviewer's read-only key reaches the review queue, a read.
    reviewer = full.for_scopes(("mcp:read", "memory:review"))
    assert "getMemoryDrafts" in reviewer.names
    assert capabilities.execute_tool(reviewer)["annotations"]["readOnlyHint"] is True


def test_execute_lists_every_argument_name_and_every_value_without_a_free_form_object():
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
    # Saving takes user and org, reading all too: the union is advertised.
    assert arguments["properties"]["scope"]["enum"] == ["user", "org", "all"]
    for name, shape in arguments["properties"].items():
        for capability in full.capabilities:
            own = capability.definition["inputSchema"]["properties"].get(name, {})
            assert set(own.get("enum", [])) <= set(shape.get("enum", [])), (name, capability)


def test_execute_is_validated_against_every_capability_not_the_view():
    # A read-only key may still name a write: REST then refuses it with the scope it lacks.
    schema = capabilities.execute_input(manifest.load())
    assert "postMemory" in schema["properties"]["name"]["enum"]
    assert "getMemoryDrafts" in schema["properties"]["name"]["enum"]
    assert schema["additionalProperties"] is False
