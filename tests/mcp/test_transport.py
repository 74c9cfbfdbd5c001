"""The streamable HTTP transport's rules at /mcp: POST only, a browser's Origin checked, CORS
preflights answered without a key."""

from __future__ import annotations

from mcp_helpers import assert_rpc_refusal

from contract import assert_problem

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def test_only_post_is_served_and_before_authentication(service):
    # A stateless server has no stream to GET and no session to DELETE (the SDK would hold a
    # GET open forever); no key is needed to learn that.
    for method in ("GET", "DELETE", "PUT", "PATCH"):
        r = service.client.request(method, "/mcp", headers=MCP_HEADERS)
        assert_problem(r, 405, "method_not_allowed")
        assert r.headers["allow"] == "POST"


def test_a_foreign_origin_is_403_and_known_ones_pass(make_service):
    service = make_service(
        cors_origins="https://app.example", public_url="https://memory.example.com"
    )
    headers = {**MCP_HEADERS, **service.auth("alice"), "Host": "memory.example.com"}
    for origin in (
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
        "https://app.example:444",
    ):
        r = service.client.post("/mcp", json=LIST, headers={**headers, "Origin": origin})
        assert_rpc_refusal(r, 403, "origin_not_allowed", "Origin")
    for origin in (
        "https://app.example",
        "https://memory.example.com",
        "http://localhost:5173",
        "http://127.0.0.1:6274",
        "http://[::1]:3000",
        None,  # not a browser: no Origin at all
    ):
        extra = {"Origin": origin} if origin else {}
        r = service.client.post("/mcp", json=LIST, headers={**headers, **extra})
        assert r.status_code == 200, (origin, r.text)
        assert r.json()["result"]["tools"]


def test_cors_preflight_for_mcp_needs_no_key(make_service):
    service = make_service(cors_origins="https://app.example")
    r = service.client.options(
        "/mcp",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": (
                "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, "
                "mcp-session-id"
            ),
        },
    )
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    allowed = r.headers["access-control-allow-headers"].lower()
    for name in ("mcp-protocol-version", "mcp-method", "mcp-name", "authorization"):
        assert name in allowed, allowed
