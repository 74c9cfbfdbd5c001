"""The filters as MCP tool arguments: the same narrowing over MCP as over REST, a repeated tag
as a list, and a bad value as a problem naming its argument."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx

from mcp import Client
from memory_bank.ids import iso
from memory_bank.mcp import manifest
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import build_server

from .filter_bank import DAY, NOW, plant


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


def test_tools_take_the_filters(service):
    deploy = plant(service, "deploy runbook", ["Deploy", "ops"], created=NOW - 2 * DAY, source="ci")
    plant(service, "deploy checklist", ["deploy"], created=NOW - 20 * DAY, source="ci")
    plant(service, "deploy party", ["ops"], created=NOW - DAY)
    narrow = {"tag": ["deploy", "OPS"], "created_after": iso(NOW - 7 * DAY), "source": "ci"}

    async def calls(client: Client) -> dict[str, Any]:
        return {
            "list": await client.call_tool("getMemory", narrow),
            "search": await client.call_tool("getMemorySearch", {"q": "deploy", **narrow}),
            "run": await client.call_tool(
                "execute_capability",
                {"name": "getMemorySearch", "arguments": {"q": "deploy", **narrow}},
            ),
            "bad": await client.call_tool("getMemory", {"created_before": "last tuesday"}),
        }

    got = {k: json.loads(v.content[0].text) for k, v in _run(service, service.key(), calls).items()}
    assert [m["id"] for m in got["list"]["memories"]] == [deploy]
    assert [m["id"] for m in got["search"]["results"]] == [deploy]
    assert [m["id"] for m in got["run"]["results"]] == [deploy]
    assert got["bad"]["code"] == "invalid_request" and got["bad"]["field"] == "created_before"
