"""Shared bits for the MCP tests: spec copies, schema checks, the SDK client over any transport."""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator

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
