"""A new operation in a copy of the spec becomes a working tool with no code change."""

from __future__ import annotations

import json

import anyio
import httpx
import yaml
from jsonschema import Draft202012Validator
from mcp_helpers import assert_standalone_schema, payload, spec_copy
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp import Client
from memory_bank.mcp import manifest
from memory_bank.mcp.executor import Executor
from memory_bank.mcp.generate import build_manifest, render
from memory_bank.mcp.server import build_server

NEW_OPERATION = {
    "post": {
        "operationId": "postNotePage",
        "summary": "Add a page to a notebook.",
        "description": "Use to test that tools come from the spec alone.",
        "x-mcp-title": "Add a page",
        "security": [{"bearerAuth": ["mcp:write"]}],
        "parameters": [
            {"name": "book", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": "draft", "in": "query", "schema": {"type": "boolean"}},
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["text"],
                        "properties": {
                            "text": {"type": "string", "minLength": 1, "maxLength": 20},
                            "book": {"type": "string", "nullable": True},
                        },
                    }
                }
            },
        },
        "responses": {
            "201": {
                "description": "Added.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Page"}}},
            },
            "400": {"$ref": "#/components/responses/BadRequest"},
        },
    }
}
PAGE = {
    "type": "object",
    "required": ["book", "text", "draft", "seen_by"],
    "properties": {
        "book": {"type": "string"},
        "text": {"type": "string"},
        "draft": {"type": "boolean"},
        "seen_by": {"type": "string"},
        "note": {"type": "string", "nullable": True},
    },
}


async def _add_page(request: Request) -> Response:
    """A stand-in REST endpoint: echoes what arrived where, so the binding is visible."""
    if request.headers.get("authorization") != "Bearer mb_test":
        return JSONResponse({"status": 401, "code": "unauthorized"}, 401)
    body = await request.json()
    if body.get("text") == "boom":
        problem = {"status": 400, "code": "invalid_request", "field": "text", "detail": "no"}
        return JSONResponse(problem, 400, media_type="application/problem+json")
    return JSONResponse(
        {
            "book": request.path_params["book"],
            "text": body["text"],
            "draft": request.query_params.get("draft") == "true",
            "seen_by": json.dumps(body, sort_keys=True),
            "note": None,
        },
        201,
    )


def test_operation_added_to_a_spec_copy_appears_and_runs(tmp_path):
    spec = spec_copy()
    spec["paths"]["/v1/books/{book}/pages"] = NEW_OPERATION
    spec["components"]["schemas"]["Page"] = PAGE
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    path = tmp_path / "manifest.json"
    path.write_text(render(build_manifest(spec)))
    loaded = manifest.load(path)

    stub = Starlette(routes=[Route("/v1/books/{book}/pages", _add_page, methods=["POST"])])
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=stub), base_url="http://stub")
    server = build_server(loaded, Executor(client, lambda: "mb_test"))

    async def run() -> None:
        async with Client(server) as mcp_client:
            tools = {t.name: t for t in (await mcp_client.list_tools()).tools}
            assert "postNotePage" in tools and "postMemory" in tools
            tool = tools["postNotePage"]
            assert tool.title == "Add a page"
            assert tool.annotations.destructive_hint is False
            assert_standalone_schema(tool.input_schema)
            assert_standalone_schema(tool.output_schema)
            assert set(tool.input_schema["properties"]) == {"book", "draft", "text", "body_book"}
            Draft202012Validator(tool.output_schema)  # compiles

            result = await mcp_client.call_tool(
                "postNotePage",
                {"book": "a b?c", "draft": True, "text": "hello", "body_book": None},
            )
            assert not result.is_error, result.content
            assert result.structured_content["book"] == "a b?c"  # path value escaped and back
            assert result.structured_content["draft"] is True
            assert json.loads(result.structured_content["seen_by"]) == {
                "book": None,
                "text": "hello",
            }
            assert json.loads(result.content[0].text) == result.structured_content

            found = await mcp_client.call_tool(
                "search_capabilities", {"query": "add a page to my notebook"}
            )
            assert found.structured_content["results"][0]["name"] == "postNotePage"
            via = await mcp_client.call_tool(
                "execute_capability",
                {"name": "postNotePage", "arguments": {"book": "x", "text": "boom"}},
            )
            assert via.is_error and payload(via)["field"] == "text"

            bad = await mcp_client.call_tool("postNotePage", {"book": "x", "text": "t" * 21})
            assert bad.is_error and payload(bad)["field"] == "text"
            unknown = await mcp_client.call_tool("execute_capability", {"name": "nope"})
            assert unknown.is_error and payload(unknown)["field"] == "name"

    anyio.run(run)
    # The shipped manifest is untouched: the new tool lived only in the copy.
    assert "postNotePage" not in manifest.load().names
