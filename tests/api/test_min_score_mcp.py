"""min_score over MCP: the search tool answers [] for a question nothing saved is relevant to,
the ranking's top-k with min_score 0, and a problem for a floor outside 0 to 1 (packaged
MiniLM)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from mcp import Client
from memory_bank.app import state_of
from memory_bank.domain import vector_jobs
from memory_bank.mcp import manifest
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import build_server

NONSENSE = "quantum chromodynamics lattice"


@pytest.fixture
def minilm(make_service: Callable[..., Any]) -> Any:
    return make_service(embeddings="local:all-MiniLM-L6-v2", embeddings_worker=False)


def test_the_search_tool_takes_min_score(minilm):
    alice = minilm.auth("alice")
    for text in ("Leo has football practice every Saturday", "The boiler service is in June"):
        r = minilm.client.post("/v1/memory", json={"content": text}, headers=alice)
        assert r.status_code == 201, r.text
    state = state_of(minilm.app)
    while vector_jobs.drain_once(minilm.db, state.semantic):
        pass
    secret = alice["Authorization"].removeprefix("Bearer ")

    async def run() -> dict[str, Any]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=minilm.app), base_url=IN_PROCESS_BASE
        ) as http:
            server = build_server(manifest.load(), Executor(http, lambda: secret))
            async with Client(server) as client:
                calls = {
                    "default": {"q": NONSENSE},
                    "zero": {"q": NONSENSE, "min_score": 0},
                    "bad": {"q": NONSENSE, "min_score": 2},
                }
                out = {}
                for name, arguments in calls.items():
                    result = await client.call_tool("getMemorySearch", arguments)
                    out[name] = json.loads(result.content[0].text)
                return out

    got = anyio.run(run)
    assert got["default"]["results"] == []
    assert len(got["zero"]["results"]) == 2
    assert got["bad"]["status"] == 400
    assert got["bad"]["code"] == "invalid_request" and got["bad"]["field"] == "min_score"
