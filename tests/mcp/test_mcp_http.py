"""Streamable HTTP at /mcp on a real server process, with the official SDK client."""

from __future__ import annotations

import json

import anyio
import httpx
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import expected_tools, payload
from test_stdio import check_tool_list, search_first_flow, stdio_server

from live_server import start_server, stop_server
from mcp import Client


@pytest.fixture
def live(service, database_url):
    """A real `memory-bank serve` on the test database (keys come from `service`)."""
    server = start_server(database_url)
    yield server
    stop_server(server)


def mcp_client(base_url: str, key: str, mode: str = "auto") -> Client:
    """The SDK client for /mcp, presenting a bearer key."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    return Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode)


def test_http_end_to_end(live, service):
    # One server start per engine (starting one is the slow part): every /mcp check runs here.
    check_bearer_and_metadata(live, service)
    check_flow(live, service)
    check_tools_list_size(live, service)
    check_stdio_bridge(live, service)


def check_stdio_bridge(live, service):
    """`memory-bank mcp --url --key`: stdio for the host, REST calls to this server."""
    key = service.key("carol")
    params = stdio_server("sqlite:///unused-by-remote-mode.db")
    params.args += ["--url", live.base_url]
    params.env["MEMORY_BANK_MCP_KEY"] = key

    async def run() -> None:
        async with Client(params) as client:
            saved = await client.call_tool("postMemory", {"content": "Carol likes green tea"})
            assert not saved.is_error, saved.content
            found = await client.call_tool("getMemorySearch", {"q": "tea"})
            assert found.structured_content["results"][0]["content"] == "Carol likes green tea"

    anyio.run(run)
    mine = service.client.get("/v1/memory", headers=service.auth("carol")).json()["memories"]
    assert [m["content"] for m in mine] == ["Carol likes green tea"]


def check_bearer_and_metadata(live, service):
    """401 with the RFC 9728 pointer, the metadata document, 403 naming the scope."""
    metadata_url = f"{live.base_url}/.well-known/oauth-protected-resource"
    for headers in ({}, {"Authorization": "Bearer mb_not-a-real-key-at-all"}):
        r = httpx.post(f"{live.base_url}/mcp", json={}, headers=headers)
        assert r.status_code == 401
        assert r.headers["content-type"] == "application/problem+json"
        challenge = r.headers["www-authenticate"]
        assert (
            challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
        )
        assert r.json()["code"] == "unauthorized"

    meta = httpx.get(metadata_url)
    assert meta.status_code == 200
    doc = meta.json()
    assert doc["resource"] == f"{live.base_url}/mcp"
    assert doc["scopes_supported"] == ["mcp:read", "mcp:write"]
    assert doc["bearer_methods_supported"] == ["header"]

    reviewer = service.key("alice", scopes=("memory:review",))
    r = httpx.post(f"{live.base_url}/mcp", json={}, headers={"Authorization": f"Bearer {reviewer}"})
    assert r.status_code == 403
    assert r.json()["code"] == "insufficient_scope" and r.json()["required_scope"] == "mcp:read"
    assert 'error="insufficient_scope"' in r.headers["www-authenticate"]
    assert 'scope="mcp:read mcp:write"' in r.headers["www-authenticate"]


def check_flow(live, service):
    """Tool list, search-first flow, isolation and a read-only key, over HTTP."""
    key = service.key("alice")
    bob = service.client.post(
        "/v1/memory", json={"content": "Bob's private plan"}, headers=service.auth("bob")
    )

    async def run() -> None:
        async with mcp_client(live.base_url, key) as client:
            check_tool_list((await client.list_tools()).tools)
            await search_first_flow(client, bob.json()["memory"]["id"])
        read_only = service.key("alice", scopes=("mcp:read",))
        async with mcp_client(live.base_url, read_only, mode="legacy") as client:
            denied = await client.call_tool("postMemory", {"content": "Nope"})
            assert denied.is_error and payload(denied)["code"] == "insufficient_scope"
            listed = await client.call_tool("getMemory", {})
            assert listed.structured_content == {"memories": [], "next_cursor": None}

    anyio.run(run)


def check_tools_list_size(live, service):
    """What a host loads into its context stays small."""
    # One raw JSON-RPC call (stateless server), to measure what a host loads into context.
    r = httpx.post(
        f"{live.base_url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "Authorization": f"Bearer {service.key('alice')}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    assert r.status_code == 200, r.text
    tools = r.json()["result"]["tools"]
    assert [t["name"] for t in tools] == expected_tools()
    # Each tool costs a host's context; the biggest today (postMemory) is about 4 KB.
    for tool in tools:
        assert len(json.dumps(tool).encode()) < 6_000, tool["name"]
