"""Streamable HTTP at /mcp on a real server process, with the official SDK client."""

from __future__ import annotations

import anyio
import httpx
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from mcp.shared.exceptions import MCPError
from mcp_helpers import (
    READS,
    assert_rpc_refusal,
    check_read_only_tools,
    check_tool_list,
    expected_tools,
    payload,
    search_first_flow,
    start_stdio,
    stdio_server,
)

from live_server import start_server, stop_server
from mcp import Client
from memory_bank.mcp import manifest, portable
from memory_bank.mcp.server import tools_list_bytes


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
    check_an_oauth_client_ends_on_key_instructions(live)
    check_get_is_refused_at_once(live, service)
    check_flow(live, service)
    check_tools_list_size(live, service)
    check_stdio_bridge(live, service)
    check_org_sharing(live, service)
    check_sdk_reads_a_refusal(live, service)
    check_prompt_and_review_queue(live, service)


def check_sdk_reads_a_refusal(live, service):
    """The official Python SDK shows a 401's and a 403's words, not "Server returned an error
    response": the user learns how to get a key."""
    reviewer = service.key("alice", scopes=("memory:review",))
    for key, words in (
        ("mb_not_a_key", "memory-bank keys create"),
        (reviewer, "none of the scopes this needs: mcp:read or mcp:write"),
    ):
        for mode in ("legacy", "auto"):  # 2025-11-25 and 2026-07-28

            async def run(key=key, mode=mode) -> str:
                with pytest.raises(Exception) as refused:  # an exception group or the error
                    async with mcp_client(live.base_url, key, mode=mode) as client:
                        await client.list_tools()
                return str(_mcp_error(refused.value))

            shown = anyio.run(run)
            print(f"Python SDK ({mode}) shows: {shown}")
            assert "Server returned an error response" not in shown
            assert words in shown


def _mcp_error(error: BaseException) -> MCPError:
    """The SDK's MCPError, out of the exception groups its task groups wrap it in."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, MCPError), repr(error)
    return error


def check_prompt_and_review_queue(live, service):
    """prompts/list and prompts/get give the "## Memory Bank" instructions; a reviewer's key
    reaches the review queue through execute_capability."""
    reviewer = service.key("rita", scopes=("mcp:read", "memory:review"))

    async def run() -> None:
        async with mcp_client(live.base_url, reviewer) as client:
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["memory-bank"]
            got = await client.get_prompt("memory-bank")
            text = got.messages[0].content.text
            assert text.startswith("## Memory Bank")
            assert f"{live.base_url}/v1/memory" in text  # calls spelled against this server
            with pytest.raises(MCPError):
                await client.get_prompt("no-such-prompt")
            found = await client.call_tool(
                "search_capabilities", {"query": "what's waiting for my approval?"}
            )
            first = found.structured_content["results"][0]
            assert first["name"] == "getMemoryDrafts" and "note" not in first
            queue = await client.call_tool(
                "execute_capability", {"name": "getMemoryDrafts", "arguments": {"limit": 5}}
            )
            assert not queue.is_error, queue.content
            assert queue.structured_content == {"drafts": [], "next_cursor": None}

    anyio.run(run)


def check_org_sharing(live, service):
    """Through /mcp: a member shares with `scope`, a colleague finds it, an outsider gets the
    missing-id answer, and a key without an org is refused, storing nothing."""
    member = ("mcp:read", "mcp:write", "org:write")
    alice = service.key("mcp-alice", org="mcp-acme", scopes=member)
    bob = service.key("mcp-bob", org="mcp-acme", scopes=member)
    carol = service.key("mcp-carol", org="mcp-globex", scopes=member)
    dave = service.key("mcp-dave")

    async def run() -> None:
        async with mcp_client(live.base_url, alice) as client:
            saved = await client.call_tool(
                "postMemory", {"content": "Runbook: drain the worker first", "scope": "org"}
            )
            assert not saved.is_error, saved.content
            shared = payload(saved)["memory"]
            assert shared["scope"] == "org" and shared["created_by"] == "mcp-alice"
        async with mcp_client(live.base_url, bob) as client:
            found = await client.call_tool("getMemorySearch", {"q": "drain worker", "scope": "org"})
            assert [m["id"] for m in payload(found)["results"]] == [shared["id"]]
        async with mcp_client(live.base_url, carol) as client:
            theirs = await client.call_tool("getMemoryById", {"id": shared["id"]})
            ghost = await client.call_tool("getMemoryById", {"id": "mem_" + "0" * 26})
            assert theirs.is_error and ghost.is_error
            assert theirs.content[0].text.replace(shared["id"], "X") == ghost.content[
                0
            ].text.replace("mem_" + "0" * 26, "X")
        async with mcp_client(live.base_url, dave) as client:
            refused = await client.call_tool(
                "postMemory", {"content": "not shared", "scope": "org"}
            )
            assert refused.is_error and payload(refused)["code"] == "org_scope_forbidden"

    anyio.run(run)
    mine = service.client.get("/v1/memory", headers=service.auth("mcp-dave")).json()
    assert mine["memories"] == []


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

    # The bridge checks its key with the server before serving, and lists what it may use.
    refused = start_stdio("--url", live.base_url, database_url="sqlite:///unused.db", key="mb_nope")
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"{live.base_url} refused the key: The API key is not valid." in refused.stderr
    read_only = stdio_server("sqlite:///unused-by-remote-mode.db")
    read_only.args += ["--url", live.base_url]
    read_only.env["MEMORY_BANK_MCP_KEY"] = service.key("carol", scopes=("mcp:read",))

    async def reads_only() -> None:
        async with Client(read_only) as client:
            check_read_only_tools((await client.list_tools()).tools)

    anyio.run(reads_only)


def check_bearer_and_metadata(live, service):
    """401 with the RFC 9728 pointer and how to get a key, the metadata, 403 naming the
    scopes, and the OAuth discovery steps a host walks ending on API-key instructions."""
    metadata_url = f"{live.base_url}/.well-known/oauth-protected-resource"
    missing = httpx.post(f"{live.base_url}/mcp", json={})
    bad = httpx.post(f"{live.base_url}/mcp", json={}, headers={"Authorization": "Bearer mb_no"})
    for r in (missing, bad):
        problem = assert_rpc_refusal(r, 401, "unauthorized")
        challenge = r.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{metadata_url}"' in challenge
        assert "memory-bank keys create" in problem["detail"]
    # RFC 6750: no error code without a credential; invalid_token for one that is no key.
    assert "error=" not in missing.headers["www-authenticate"]
    assert 'error="invalid_token"' in bad.headers["www-authenticate"]

    meta = httpx.get(metadata_url)
    assert meta.status_code == 200
    doc = meta.json()
    assert doc["resource"] == f"{live.base_url}/mcp"
    assert doc["scopes_supported"] == ["mcp:read", "mcp:write"]
    assert doc["bearer_methods_supported"] == ["header"]
    assert "memory-bank keys create" in doc["api_key_instructions"]
    # Where an OAuth client looks next: no authorization server, no client registration.
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        none = httpx.get(f"{live.base_url}{path}")
        assert none.status_code == 404 and "memory-bank keys create" in none.json()["detail"]
    register = httpx.post(f"{live.base_url}/register", json={"redirect_uris": ["http://x/cb"]})
    assert register.status_code == 400
    assert register.json()["error"] == "invalid_client_metadata"
    assert "memory-bank keys create" in register.json()["error_description"]

    reviewer = service.key("alice", scopes=("memory:review",))
    r = httpx.post(f"{live.base_url}/mcp", json={}, headers={"Authorization": f"Bearer {reviewer}"})
    problem = assert_rpc_refusal(r, 403, "insufficient_scope")
    assert problem["required_scope"] == "mcp:read"
    assert problem["acceptable_scopes"] == ["mcp:read", "mcp:write"]
    challenge = r.headers["www-authenticate"]
    # A scope list in a challenge means "all of these": name one, say either will do.
    assert 'error="insufficient_scope"' in challenge and 'scope="mcp:read"' in challenge
    assert 'error_description="Needs mcp:read or mcp:write; this key has neither"' in challenge


class _NoTokens:
    """Token storage for an OAuth client that has nothing stored yet."""

    async def get_tokens(self):
        return None

    async def set_tokens(self, tokens):
        raise AssertionError("no token can be issued here")

    async def get_client_info(self):
        return None

    async def set_client_info(self, client_info):
        raise AssertionError("no client can be registered here")


def check_an_oauth_client_ends_on_key_instructions(live):
    """The SDK's OAuth client walks what the Inspector walks: the 401's resource metadata,
    no authorization server, the origin's discovery URLs, then client registration. Its
    final error (what a host shows) must say how to get a key."""
    provider = OAuthClientProvider(
        server_url=f"{live.base_url}/mcp",
        client_metadata=OAuthClientMetadata(redirect_uris=["http://127.0.0.1:5555/callback"]),
        storage=_NoTokens(),
    )

    async def run() -> None:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            with pytest.raises(OAuthRegistrationError) as refused:
                await http.post(f"{live.base_url}/mcp", json={})
        message = str(refused.value)
        assert "Registration failed: 400" in message
        assert "memory-bank keys create" in message and "Authorization: Bearer" in message

    anyio.run(run)


def check_get_is_refused_at_once(live, service):
    """The SDK client opens GET /mcp after connecting: a stateless server answers 405 at once
    (it used to hold an event stream open that never sent a byte)."""
    headers = {
        "Authorization": f"Bearer {service.key('alice')}",
        "Accept": "text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    r = httpx.get(f"{live.base_url}/mcp", headers=headers, timeout=5)
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    r = httpx.delete(f"{live.base_url}/mcp", headers=headers, timeout=5)
    assert r.status_code == 405


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
            check_read_only_tools((await client.list_tools()).tools)
            denied = await client.call_tool("postMemory", {"content": "Nope"})
            assert denied.is_error and payload(denied)["code"] == "insufficient_scope"
            listed = await client.call_tool("getMemory", {})
            assert listed.structured_content == {"memories": [], "next_cursor": None}

    anyio.run(run)


def check_tools_list_size(live, service):
    """What a host loads into its context stays small: the whole tools/list answer."""
    # One raw JSON-RPC call (stateless server), to measure what a host loads into context.
    sizes, names = {}, {}
    for scopes in (("mcp:read", "mcp:write"), ("mcp:read",)):
        r = httpx.post(
            f"{live.base_url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                "Authorization": f"Bearer {service.key('alice', scopes=scopes)}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18",
            },
        )
        assert r.status_code == 200, r.text
        sizes[scopes] = len(r.content)
        tools = r.json()["result"]["tools"]
        names[scopes] = [t["name"] for t in tools]
        for tool in tools:
            assert portable.check(tool["name"], tool["inputSchema"]) == []
    assert names[("mcp:read", "mcp:write")] == expected_tools()
    assert names[("mcp:read",)] == [*READS, "search_capabilities", "execute_capability"]
    full = manifest.load()
    assert sizes[("mcp:read", "mcp:write")] == tools_list_bytes(
        full.for_scopes(("mcp:read", "mcp:write"))
    )
    assert sizes[("mcp:read",)] == tools_list_bytes(full.for_scopes(("mcp:read",)))
    # With every scope, on both protocol versions the current SDKs negotiate.
    every = service.key(
        "alice", org="size-org", scopes=("mcp:read", "mcp:write", "memory:review", "org:admin")
    )
    for mode, version in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
        measured: list[tuple[str | None, int]] = []

        async def hook(response, measured=measured):
            await response.aread()
            if b'"tools/list"' in response.request.content:
                version = response.request.headers.get("mcp-protocol-version")
                measured.append((version, len(response.content)))

        async def run(mode=mode, hook=hook) -> None:
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {every}"},
                timeout=30,
                event_hooks={"response": [hook]},
            )
            async with Client(
                streamable_http_client(f"{live.base_url}/mcp", http_client=http), mode=mode
            ) as client:
                await client.list_tools()

        anyio.run(run)
        print(f"tools/list with every scope at {version}: {measured[0][1]} bytes")
        assert measured[0][0] == version and measured[0][1] <= 8 * 1024
