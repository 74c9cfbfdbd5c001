"""`memory-bank mcp` over stdio with the official SDK client, on both engines."""

from __future__ import annotations

import anyio
from mcp_helpers import (
    check_read_only_tools,
    check_tool_list,
    payload,
    search_first_flow,
    start_stdio,
    stdio_server,
)

from mcp import Client
from memory_bank.mcp.stdio_auth import LOCAL_LABEL, LOCAL_USER
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import migrate


def test_stdio_lists_tools_and_runs_the_search_first_flow(service, database_url):
    bob = service.client.post(
        "/v1/memory", json={"content": "Bob's private plan"}, headers=service.auth("bob")
    )
    assert bob.status_code == 201

    async def run() -> None:
        async with Client(stdio_server(database_url)) as client:
            check_tool_list((await client.list_tools()).tools)
            await search_first_flow(client, bob.json()["memory"]["id"])
        # A second session acts with the same key: sessions leave nothing behind.
        async with Client(stdio_server(database_url)) as client:
            saved = await client.call_tool("postMemory", {"content": "Second session"})
            assert not saved.is_error, saved.content

    anyio.run(run)
    with service.engine.connect() as conn:
        local_keys = api_keys.list_keys(conn, LOCAL_USER)
    assert [(k.label, k.revoked_at) for k in local_keys] == [(LOCAL_LABEL, None)]
    assert set(local_keys[0].scopes) == {"mcp:read", "mcp:write"}
    # Bob's memory survived the other user's delete attempt.
    assert service.client.get("/v1/memory", headers=service.auth("bob")).json()["memories"]


def test_a_key_revoked_mid_session_names_the_setting_not_a_header(service, database_url):
    secret = service.key("carol")
    with service.engine.connect() as conn:
        (carol,) = api_keys.list_keys(conn, "carol")

    async def run() -> None:
        async with Client(stdio_server(database_url, key=secret)) as client:
            saved = await client.call_tool("postMemory", {"content": "Before the revoke"})
            assert not saved.is_error, saved.content
            writing(service.engine, lambda conn: api_keys.revoke_key(conn, carol.id))
            refused = await client.call_tool("postMemory", {"content": "After the revoke"})
            assert refused.is_error and payload(refused)["status"] == 401
            detail = payload(refused)["detail"]
            assert "MEMORY_BANK_MCP_KEY" in detail and "Authorization" not in detail, detail

    anyio.run(run)
    contents = [
        m["content"]
        for m in service.client.get("/v1/memory", headers=service.auth("carol")).json()["memories"]
    ]
    assert contents == ["Before the revoke"]


def test_a_revoked_local_key_is_replaced_not_reused(tmp_path):
    database_url = f"sqlite:///{tmp_path / 'memory-bank.db'}"

    async def save(content: str) -> None:
        async with Client(stdio_server(database_url)) as client:
            assert not (await client.call_tool("postMemory", {"content": content})).is_error

    anyio.run(save, "first")
    engine = make_engine(database_url)
    with engine.connect() as conn:
        (first,) = api_keys.list_keys(conn, LOCAL_USER)
    writing(engine, lambda conn: api_keys.revoke_key(conn, first.id))
    anyio.run(save, "after the revoke")
    with engine.connect() as conn:
        after = api_keys.list_keys(conn, LOCAL_USER)
    engine.dispose()
    assert len(after) == 2 and after[0].id == first.id
    assert after[1].revoked_at is None


def test_a_key_that_cannot_act_stops_stdio_at_start(tmp_path):
    database_url = f"sqlite:///{tmp_path / 'memory-bank.db'}"
    bad = start_stdio(database_url=database_url, key="mb_" + "x" * 43)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "MEMORY_BANK_MCP_KEY is refused" in bad.stderr
    assert "memory-bank keys create" in bad.stderr
    engine = make_engine(database_url)
    reviewer, _ = writing(
        engine, lambda conn: api_keys.create_key(conn, "local", ("memory:review",), "test-suite")
    )
    engine.dispose()
    review_only = start_stdio(database_url=database_url, key=reviewer)
    assert review_only.returncode == 2 and "neither mcp:read nor mcp:write" in review_only.stderr


def test_a_server_or_database_that_cannot_be_reached_stops_stdio_at_start(tmp_path):
    database_url = f"sqlite:///{tmp_path / 'unused.db'}"
    gone = start_stdio("--url", "http://127.0.0.1:9", database_url=database_url, key="mb_k")
    assert gone.returncode == 3 and "cannot reach memory-bank at http://127.0.0.1:9" in gone.stderr
    down = start_stdio(database_url="mysql+pymysql://root@127.0.0.1:9/nothing")
    assert down.returncode == 3 and down.stdout == ""
    assert "cannot use the database at mysql+pymysql://root@127.0.0.1:9/nothing" in down.stderr


def test_stdio_read_only_key_cannot_write(tmp_path):
    # Scope checks are storage-independent (the HTTP tests run this on both engines).
    database_url = f"sqlite:///{tmp_path / 'memory-bank.db'}"
    engine = make_engine(database_url)
    migrate(engine)
    read_only, _ = writing(
        engine, lambda conn: api_keys.create_key(conn, "local", ("mcp:read",), "test-suite")
    )
    engine.dispose()

    async def run() -> None:
        async with Client(stdio_server(database_url, key=read_only), mode="legacy") as client:
            check_read_only_tools((await client.list_tools()).tools)
            found = await client.call_tool("search_capabilities", {"query": "save a memory"})
            # What was asked for, with a note that this key cannot run it: never another tool.
            first = found.structured_content["results"][0]
            assert first["name"] == "postMemory" and "it needs mcp:write" in first["note"]
            # A write the list no longer shows is still refused by REST, naming the scope.
            denied = await client.call_tool("postMemory", {"content": "Should not be saved"})
            assert denied.is_error
            assert payload(denied)["code"] == "insufficient_scope"
            assert payload(denied)["required_scope"] == "mcp:write"
            listed = await client.call_tool("getMemory", {"limit": 5})
            assert not listed.is_error and listed.structured_content["memories"] == []

    anyio.run(run)
