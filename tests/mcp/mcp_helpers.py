"""Shared bits for the MCP tests: spec copies, schema checks, the SDK client over any transport
(stdio and Streamable HTTP run the same checks and flow)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

from jsonschema import Draft202012Validator

from mcp import Client, StdioServerParameters
from memory_bank.spec import load_spec


def spec_copy() -> dict[str, Any]:
    """A fresh copy of the real spec to modify."""
    return copy.deepcopy(load_spec())


def refs_in(node: Any) -> list[str]:
    """Every $ref anywhere in a JSON document."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.append(str(value))
            found.extend(refs_in(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(refs_in(item))
    return found


def assert_standalone_schema(schema: dict[str, Any]) -> None:
    """A valid Draft 2020-12 schema with no $ref (several hosts reject $ref)."""
    Draft202012Validator.check_schema(schema)
    assert refs_in(schema) == [], json.dumps(schema)[:300]


def payload(result: Any) -> Any:
    """The JSON a tool result carries as text."""
    return json.loads(result.content[0].text)


CORE = ["postMemory", "getMemory", "getMemorySearch", "getMemoryById", "deleteMemoryById"]


def expected_tools() -> list[str]:
    """Tool names a host should see: every spec operation not marked x-mcp: false or
    x-mcp-listed: false, in spec order, then the two search-first tools."""
    names = [
        op["operationId"]
        for item in load_spec()["paths"].values()
        for op in item.values()
        if isinstance(op, dict)
        and "operationId" in op
        and op.get("x-mcp") is not False
        and op.get("x-mcp-listed") is not False
    ]
    return [*names, "search_capabilities", "execute_capability"]


def assert_rpc_refusal(response: Any, status: int, code: str, field: str | None = None) -> Any:
    """A refusal of /mcp as MCP clients read it: the status, a JSON-RPC error in an
    application/json body whose message is the problem's detail and whose data is the problem."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    error = body["error"]
    assert error["code"] == -32600
    problem = error["data"]
    assert problem["status"] == status and problem["code"] == code
    assert error["message"] == problem["detail"]
    if field is not None:
        assert problem["field"] == field
    return problem


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
