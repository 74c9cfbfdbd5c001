"""GET /v1/memory/prompt: the Markdown snippet, its credentials and its route."""

from __future__ import annotations

import pytest

from memory_bank.domain.prompt import render_prompt
from memory_bank.spec import load_spec


def test_prompt_is_markdown_built_for_this_server(service):
    r = service.client.get("/v1/memory/prompt", headers=service.auth("alice"))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/markdown")
    text = r.text
    assert text.startswith("## Memory Bank\n")
    for needed in (
        "confirm or edit",
        "Never store secrets, credentials",
        "tokens or personal data",
        "the user's own words",
        "`postMemory` (`POST http://testserver/v1/memory`)",
        "`getMemorySearch` (`GET http://testserver/v1/memory/search`)",
        "`getMemory` (`GET http://testserver/v1/memory`)",
        "`deleteMemoryById` (`DELETE http://testserver/v1/memory/{id}`)",
        "`patchMemoryById` (`PATCH http://testserver/v1/memory/{id}`)",
        "edit that one instead",
        "`If-Match`",
    ):
        assert needed in text, needed
    assert "getMemoryPrompt" not in text and "/healthz" not in text


def test_prompt_is_not_taken_for_a_memory_id(service):
    headers = service.auth("alice")
    saved = service.client.post("/v1/memory", json={"content": "x"}, headers=headers)
    assert saved.status_code == 201
    r = service.client.get("/v1/memory/prompt", headers=headers)
    assert r.status_code == 200 and "memory_not_found" not in r.text
    # /v1/memory/prompt is the prompt's route, whatever the method: DELETE is not allowed
    # there (it used to fall through to the {id} route with "prompt" for an id).
    r = service.client.delete("/v1/memory/prompt", headers=headers)
    assert r.status_code == 405 and r.headers["allow"] == "GET", r.text


def test_prompt_needs_a_read_credential(service):
    r = service.client.get("/v1/memory/prompt")
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    denied = service.client.get(
        "/v1/memory/prompt", headers=service.auth("alice", scopes=("mcp:write",))
    )
    assert denied.status_code == 403
    assert denied.json()["required_scope"] == "mcp:read"


def test_public_url_is_used_when_set(make_service):
    service = make_service(public_url="https://memory.example.org")
    r = service.client.get("/v1/memory/prompt", headers=service.auth("alice"))
    assert "`POST https://memory.example.org/v1/memory`" in r.text


def test_render_needs_the_operations_it_names():
    spec = load_spec()
    del spec["paths"]["/v1/memory/search"]
    with pytest.raises(ValueError, match="getMemorySearch"):
        render_prompt(spec, "http://x")
