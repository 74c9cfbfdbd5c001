"""The executor builds each request from the binding alone and maps answers to tool results."""

from __future__ import annotations

import anyio
import httpx
from mcp_helpers import payload, spec_copy
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from memory_bank.mcp import manifest
from memory_bank.mcp.executor import Executor
from memory_bank.mcp.generate import build_manifest

OPERATIONS = {
    "/v1/things": {
        "get": {
            "operationId": "getThings",
            "summary": "List things.",
            "parameters": [
                {
                    "name": "tag",
                    "in": "query",
                    "schema": {"type": "array", "items": {"type": "string"}},
                },
                {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                {"name": "exact", "in": "query", "schema": {"type": "boolean"}},
            ],
            "responses": {"200": {"description": "text", "content": {"text/plain": {}}}},
        },
        "post": {
            "operationId": "postThings",
            "summary": "Store a list of numbers.",
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "ok",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        },
    }
}


async def _things(request: Request) -> Response:
    if request.method == "POST":
        return JSONResponse({"got": await request.json(), "auth": request.headers["authorization"]})
    tags = request.query_params.getlist("tag")
    exact = request.query_params.get("exact")
    return PlainTextResponse(
        f"tags={','.join(tags)} exact={exact} trace={request.headers['x-trace']}"
    )


def _manifest():
    spec = spec_copy()
    spec["paths"].update(OPERATIONS)
    return manifest.parse(build_manifest(spec))


def test_query_arrays_headers_text_and_whole_bodies():
    loaded = _manifest()
    stub = Starlette(routes=[Route("/v1/things", _things, methods=["GET", "POST"])])
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=stub), base_url="http://stub")
    executor = Executor(client, lambda: "mb_caller")

    async def run() -> None:
        text = await executor.call(
            loaded.get("getThings"), {"tag": ["a", "b c"], "exact": False, "X-Trace": "t1"}
        )
        assert not text.is_error and text.structured_content is None
        assert text.content[0].text == "tags=a,b c exact=false trace=t1"
        whole = await executor.call(loaded.get("postThings"), {"body": [1, 2]})
        assert whole.structured_content == {"got": [1, 2], "auth": "Bearer mb_caller"}
        too_many = await executor.call(loaded.get("postThings"), {"body": [1, 2, 3, 4]})
        assert too_many.is_error and payload(too_many)["field"] == "body"

    anyio.run(run)


def test_an_unreachable_server_is_a_503_problem():
    loaded = manifest.load()
    client = httpx.AsyncClient(base_url="http://127.0.0.1:9", timeout=5)
    executor = Executor(client, lambda: "mb_x")

    async def run() -> None:
        result = await executor.call(loaded.get("getMemory"), {})
        assert result.is_error
        assert payload(result)["status"] == 503 and "127.0.0.1:9" in payload(result)["detail"]

    anyio.run(run)
