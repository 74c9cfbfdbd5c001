"""`memory-bank mcp` over stdio with the official SDK client, on both engines."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
from mcp_helpers import CORE, assert_standalone_schema, expected_tools, payload

from mcp import Client, StdioServerParameters
from memory_bank.mcp.stdio_auth import LOCAL_LABEL, LOCAL_USER
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import migrate


def stdio_server(database_url: str, key: str | None = None) -> StdioServerParameters:
    """Parameters that spawn `python -m memory_bank.cli mcp` on a database."""
    env = {
        **os.environ,
        "MEMORY_BANK_DATABASE_URL": database_url,
        "MEMORY_BANK_LOG_LEVEL": "warning",
    }
    env.pop("MEMORY_BANK_MCP_KEY", None)
    if key:
        env["MEMORY_BANK_MCP_KEY"] = key
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memory_bank.cli", "mcp"], env=env
    )


def check_tool_list(tools) -> None:
    """Names, standalone valid schemas and annotations, as a host sees them."""
    by_name = {t.name: t for t in tools}
    assert list(by_name) == expected_tools()
    assert set(CORE) <= set(by_name)
    for tool in tools:
        assert_standalone_schema(tool.input_schema)
        if tool.output_schema is not None:
            assert_standalone_schema(tool.output_schema)
        assert tool.annotations.open_world_hint is False
        assert tool.description and len(tool.description) < 600
    for name in ("getMemory", "getMemorySearch", "getMemoryById", "search_capabilities"):
        assert by_name[name].annotations.read_only_hint is True
    delete = by_name["deleteMemoryById"].annotations
    assert delete.destructive_hint is True and delete.idempotent_hint is True
    save = by_name["postMemory"].annotations
    assert save.destructive_hint is False and save.idempotent_hint is False


READS = ["getMemory", "getMemorySearch", "getMemoryById"]
# Reads execute_capability reaches that tools/list does not show (x-mcp-listed: false).
UNLISTED_READS = ["getMemoryDraftById", "getMemoryRevisions"]


def check_read_only_tools(tools) -> None:
    """A read-only key sees the reads, and search-first tools that offer only reads."""
    by_name = {t.name: t for t in tools}
    assert list(by_name) == [*READS, "search_capabilities", "execute_capability"]
    execute = by_name["execute_capability"]
    names = execute.input_schema["properties"]["name"]["enum"]
    assert sorted(names) == sorted([*READS, *UNLISTED_READS])
    assert execute.annotations.read_only_hint is True


async def search_first_flow(client: Client, other_users_id: str) -> None:
    """Find the tool, save, find, isolate, reject bad input, delete — all through MCP."""
    found = await client.call_tool("search_capabilities", {"query": "save a memory"})
    assert found.structured_content["results"][0]["name"] == "postMemory"

    saved = await client.call_tool(
        "execute_capability",
        {
            "name": "postMemory",
            "arguments": {"content": "We picked Acme for the widget contract.", "tags": ["acme"]},
        },
    )
    assert not saved.is_error, saved.content
    memory = saved.structured_content["memory"]
    assert memory["content"] == "We picked Acme for the widget contract."

    hits = await client.call_tool("getMemorySearch", {"q": "what do I know about Acme"})
    assert [r["id"] for r in hits.structured_content["results"]] == [memory["id"]]

    theirs = await client.call_tool("getMemoryById", {"id": other_users_id})
    assert theirs.is_error and payload(theirs)["code"] == "memory_not_found"
    gone = await client.call_tool("deleteMemoryById", {"id": other_users_id})
    assert gone.is_error and payload(gone)["status"] == 404

    bad = await client.call_tool("postMemory", {"content": 42})
    assert bad.is_error and payload(bad)["field"] == "content"
    blank = await client.call_tool("postMemory", {"content": "   "})  # caught by REST itself
    assert blank.is_error and payload(blank)["field"] == "content"
    deep = await client.call_tool("postMemory", {"content": "x", "contexts": [{"snippet": ""}]})
    # Fields are named as REST names them, with REST's wording.
    assert deep.is_error and payload(deep)["field"] == "contexts.0.snippet"
    assert payload(deep)["detail"] == "'contexts.0.snippet' must not be empty."

    # Correcting it: the edit tool is not in tools/list, but search finds it and execute runs it.
    found = await client.call_tool("search_capabilities", {"query": "update a memory"})
    assert found.structured_content["results"][0]["name"] == "patchMemoryById"
    edited = await client.call_tool(
        "execute_capability",
        {
            "name": "patchMemoryById",
            "arguments": {
                "id": memory["id"],
                "content": "We picked Globex for the widget contract.",
                "if_match": '"1"',
            },
        },
    )
    assert not edited.is_error, edited.content
    assert edited.structured_content["memory"]["revision"] == 2
    stale = await client.call_tool(
        "execute_capability",
        {
            "name": "patchMemoryById",
            "arguments": {"id": memory["id"], "content": "Stale", "if_match": '"1"'},
        },
    )
    assert stale.is_error and payload(stale)["code"] == "revision_conflict"
    # An agent cannot set headers: the advice names the tool's argument and what to send.
    assert "if_match '\"2\"'" in payload(stale)["detail"]
    assert "If-Match" not in payload(stale)["detail"]
    history = await client.call_tool(
        "execute_capability", {"name": "getMemoryRevisions", "arguments": {"id": memory["id"]}}
    )
    assert [r["revision"] for r in history.structured_content["revisions"]] == [2, 1]
    hits = await client.call_tool("getMemorySearch", {"q": "Globex"})
    assert [r["id"] for r in hits.structured_content["results"]] == [memory["id"]]

    deleted = await client.call_tool("deleteMemoryById", {"id": memory["id"]})
    assert deleted.structured_content == {"ok": True, "status": 204, "id": memory["id"]}
    # The tool is idempotent as its annotation says: a retry succeeds the same way.
    again = await client.call_tool("deleteMemoryById", {"id": memory["id"]})
    assert again.structured_content == deleted.structured_content
    after = await client.call_tool("getMemorySearch", {"q": "Acme"})
    assert after.structured_content == {"results": [], "mode": "lexical"}


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


def start_stdio(
    *args: str, database_url: str, key: str | None = None
) -> subprocess.CompletedProcess:
    """Run `memory-bank mcp` with no host attached: it must stop before serving."""
    params = stdio_server(database_url, key)
    return subprocess.run(
        [params.command, *params.args, *args],
        env=params.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


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
