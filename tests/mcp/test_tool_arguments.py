"""Tool arguments on the real app: an id argument reaches its own operation or nothing, a
mistake is an isError problem in REST's words, and a broken tool never becomes a traceback."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import payload
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from contract import captured_logs
from mcp import Client
from memory_bank.mcp import manifest
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import build_server

OWNER = ("mcp:read", "mcp:write", "memory:review")


def _run(service: Any, secret: str, calls: Any) -> Any:
    """Run calls(client) against an in-process MCP server over the service, as secret."""

    async def run() -> Any:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=service.app), base_url=IN_PROCESS_BASE
        ) as http:
            server = build_server(manifest.load(), Executor(http, lambda: secret))
            async with Client(server) as client:
                return await calls(client)

    return anyio.run(run)


def _draft(service: Any) -> tuple[str, str]:
    """alice's owner key, and the id of a draft an agent of hers saved for review."""
    owner = service.key("alice", scopes=OWNER)
    headers = {"Authorization": f"Bearer {owner}"}
    service.client.put("/v1/memory/settings", json={"review_required": True}, headers=headers)
    r = service.client.post(
        "/v1/memory", json={"content": "zqdraftbody waiting"}, headers=service.auth("alice")
    )
    assert r.status_code == 202, r.text
    return owner, r.json()["draft"]["id"]


def test_an_id_argument_reaches_its_own_operation_or_nothing(service):
    owner, draft = _draft(service)
    injected = [
        "settings",
        ".",
        "..",
        "",
        "drafts",
        f"drafts/{draft}",
        f"drafts%2F{draft}",
        "prompt",
        "search",
        "../memory/settings",
        f"mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C/../drafts/{draft}",
        "%2e%2e",
        draft,
    ]

    async def calls(client: Client) -> list[tuple[str, str, Any]]:
        seen = []
        for tool in ("getMemoryById", "deleteMemoryById", "getMemoryDraftById"):
            for value in injected:
                if tool == "getMemoryDraftById" and value == draft:
                    continue  # its own, well-formed id: the one value that may reach it
                result = await client.call_tool(tool, {"id": value})
                seen.append((tool, value, result))
                wrapped = await client.call_tool(
                    "execute_capability", {"name": tool, "arguments": {"id": value}}
                )
                seen.append((f"execute:{tool}", value, wrapped))
        return seen

    for tool, value, result in _run(service, owner, calls):
        text = result.content[0].text
        assert result.is_error, (tool, value, text)
        problem = json.loads(text)
        assert problem["status"] == 400 and problem["field"] == "id", (tool, value, problem)
        if tool.endswith("getMemoryById") and value == draft:
            # The wording says what a memory id is and where a draft id belongs, as REST's.
            assert "mem_ followed by 26 characters" in problem["detail"], problem
            assert "getMemoryDraftById" in problem["detail"], problem
        for leak in ("zqdraftbody", "review_in_effect", "## Memory Bank", "pending_review"):
            assert leak not in text, (tool, value, text)
    # The draft is still there, untouched by any of it.
    r = service.client.get(
        f"/v1/memory/drafts/{draft}", headers={"Authorization": f"Bearer {owner}"}
    )
    assert r.status_code == 200


def test_mistakes_are_explained_in_rest_words(service):
    secret = service.key("alice")

    async def calls(client: Client) -> dict[str, Any]:
        return {
            "text": await client.call_tool("postMemory", {"text": "Likes tea"}),
            "query": await client.call_tool("getMemorySearch", {"query": "tea"}),
            "flat": await client.call_tool(
                "execute_capability", {"name": "postMemory", "content": "Likes tea"}
            ),
            "long": await client.call_tool("postMemory", {"content": "x" * 8001}),
            "blank": await client.call_tool("postMemory", {"content": " \n "}),
            "gone": await client.call_tool(
                "getMemoryById", {"id": "mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C"}
            ),
        }

    got = {name: payload(result) for name, result in _run(service, secret, calls).items()}
    assert got["text"]["detail"] == "'text' is not a known argument; did you mean 'content'?"
    assert got["query"]["detail"] == "'query' is not a known argument; did you mean 'q'?"
    assert got["query"]["field"] == "query"
    assert "under 'arguments'" in got["flat"]["detail"] and got["flat"]["field"] == "content"
    assert got["long"]["detail"] == "'content' must be at most 8000 characters."
    assert got["blank"]["detail"] == "'content' must not be blank."
    assert got["gone"]["code"] == "memory_not_found" and got["gone"]["field"] == "id"


def test_unknown_tools_and_cursors_are_protocol_errors(service):
    secret = service.key("alice")

    async def calls(client: Client) -> list[Any]:
        errors = []
        for attempt in (
            lambda: client.call_tool("no_such_tool", {}),
            lambda: client.list_tools(cursor="2"),
        ):
            with pytest.raises(MCPError) as caught:
                await attempt()
            errors.append(caught.value)
        # A bad name given to execute_capability is that tool's argument error instead.
        errors.append(await client.call_tool("execute_capability", {"name": "no_such_tool"}))
        return errors

    unknown, cursor, wrapped = _run(service, secret, calls)
    assert unknown.error.code == -32602 and "no_such_tool" in unknown.error.message
    assert cursor.error.code == -32602
    assert wrapped.is_error and payload(wrapped)["field"] == "name"


def test_lone_surrogates_in_arguments_are_named_and_never_logged(service):
    secret = service.key("alice")
    mark = "zqsurrogatemark"

    async def calls(client: Client) -> list[Any]:
        return [
            await client.call_tool("postMemory", {"content": f"{mark} \ud800"}),
            await client.call_tool("postMemory", {"content": mark, "tags": ["ok", "\udfff"]}),
            await client.call_tool(
                "postMemory", {"content": mark, "contexts": [{"snippet": f"{mark}\udc00"}]}
            ),
        ]

    with captured_logs() as logs:
        results = _run(service, secret, calls)
    fields = [payload(r)["field"] for r in results]
    assert all(r.is_error for r in results)
    assert fields == ["content", "tags.1", "contexts.0.snippet"]
    logs.assert_never_shows(mark)
    mine = service.client.get("/v1/memory", headers={"Authorization": f"Bearer {secret}"})
    assert mine.json()["memories"] == []


def test_a_tool_that_breaks_is_a_clean_error_result():
    # A success the tool cannot read (text where JSON was promised) is an isError problem.
    async def text(_request: Any) -> PlainTextResponse:
        return PlainTextResponse("not json")

    stub = Starlette(routes=[Route("/v1/memory", text, methods=["GET"])])

    async def run() -> Any:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=stub), base_url="http://stub"
        ) as http:
            executor = Executor(http, lambda: "mb_x")
            return await executor.call(manifest.load().get("getMemory"), {})

    result = anyio.run(run)
    assert result.is_error and payload(result)["code"] == "internal_error"


def test_a_tool_reaches_its_own_operation_even_without_the_id_pattern(service):
    # Hosts are shown schemas without `pattern`, and an executor could validate against one
    # too; the server still refuses a call that routes anywhere but the tool's own operation
    # (the executor names it in a header).
    secret = service.key("alice", scopes=OWNER)
    capability = manifest.load().get("getMemoryById")
    assert "pattern" not in capability.definition["inputSchema"]["properties"]["id"]
    loose = copy.deepcopy(capability.input_schema)
    loose["properties"]["id"].pop("pattern")
    capability = dataclasses.replace(capability, input_schema=loose)

    async def run() -> list[Any]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=service.app), base_url=IN_PROCESS_BASE
        ) as http:
            executor = Executor(http, lambda: secret)
            return [await executor.call(capability, {"id": v}) for v in ("settings", "prompt")]

    for result in anyio.run(run):
        assert result.is_error and payload(result)["status"] == 400, result.content[0].text
        assert "review_in_effect" not in result.content[0].text
    # The header binds plain REST callers too: it only ever narrows what a request reaches.
    r = service.client.get(
        "/v1/memory/settings",
        headers={"Authorization": f"Bearer {secret}", "X-Memory-Bank-Operation": "getMemoryById"},
    )
    assert r.status_code == 400
