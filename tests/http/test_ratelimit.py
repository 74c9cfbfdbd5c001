"""Rate limits: one bucket per API key however it is spelled, one per client for refused keys
(refused before any lookup once spent), and one token per MCP tool call."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from memory_bank.errors import RateLimited
from memory_bank.http.ratelimit import Limiter

SPELLINGS = ("Bearer {}", "bearer {}", "BEARER {}", "Bearer  {}", "Bearer\t{}", "bEaReR {} ")


def test_every_spelling_of_one_key_shares_its_bucket(make_service):
    service = make_service(rate_limit_per_minute=5)
    secret = service.key("alice")
    codes = [
        service.client.get(
            "/v1/memory", headers={"Authorization": spelling.format(secret)}
        ).status_code
        for spelling in SPELLINGS * 2
    ]
    # Each spelling is the same key: five requests pass, whatever the header looked like.
    assert codes == [200] * 5 + [429] * 7, codes
    # A second key of the same user has its own bucket.
    assert service.client.get("/v1/memory", headers=service.auth("alice")).status_code == 200


def _lookups(engine: sa.Engine) -> list[str]:
    """Statements the credential pool runs from now on (a list that fills as they run)."""
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if "FROM api_key" in statement:
            seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    return seen


def test_failed_authentications_are_limited_per_client_before_any_lookup(make_service):
    from memory_bank.app import state_of

    service = make_service(auth_failures_per_minute=3)
    good = service.auth("alice")
    assert service.client.get("/v1/memory", headers=good).status_code == 200
    lookups = _lookups(state_of(service.app).db.auth)
    wrong = [{"Authorization": f"Bearer mb_{'x' * 40}{i:03d}"} for i in range(6)]
    codes = [service.client.get("/v1/memory", headers=h).status_code for h in wrong]
    assert codes == [401, 401, 401, 429, 429, 429], codes
    refused = service.client.get("/v1/memory", headers=wrong[0])
    assert refused.json()["code"] == "rate_limited" and int(refused.headers["retry-after"]) >= 1
    # The limited attempts cost no database lookup at all.
    assert len(lookups) == 3, lookups
    # A key that works from this address keeps working: a neighbour behind the same proxy or
    # NAT is not locked out by one client with a bad key.
    assert service.client.get("/v1/memory", headers=good).status_code == 200
    # Another client has its own allowance.
    other = TestClient(service.app, client=("203.0.113.9", 4000), raise_server_exceptions=False)
    assert other.get("/v1/memory", headers=wrong[0]).status_code == 401
    # A panel sign-in code is an authentication too: refused the same way once spent.
    r = service.client.post("/v1/panel/session", json={"code": "forged.code"})
    assert r.status_code == 429, r.text


def test_behind_a_trusted_proxy_the_forwarded_client_is_limited(make_service):
    service = make_service(auth_failures_per_minute=2, trusted_proxies="testclient")
    wrong = {"Authorization": f"Bearer mb_{'y' * 43}"}

    def attempt(client_ip: str) -> int:
        headers = {**wrong, "X-Forwarded-For": client_ip}
        return service.client.get("/v1/memory", headers=headers).status_code

    assert [attempt("198.51.100.1") for _ in range(3)] == [401, 401, 429]
    # Another client behind the same proxy is not affected.
    assert attempt("198.51.100.2") == 401
    # Without the proxy setting, the proxy's own address would be the client (one bucket);
    # a client that is not a trusted proxy cannot choose its bucket with the header.
    direct = make_service(auth_failures_per_minute=2)
    codes = [
        direct.client.get(
            "/v1/memory", headers={**wrong, "X-Forwarded-For": f"198.51.100.{i}"}
        ).status_code
        for i in range(3)
    ]
    assert codes == [401, 401, 429]


def test_one_mcp_tool_call_costs_one_token(make_service):
    service = make_service(rate_limit_per_minute=4)
    headers = {
        **service.auth("alice"),
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }

    def call(n: int) -> tuple[int, bool | None]:
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "getMemory", "arguments": {}},
        }
        r = service.client.post("/mcp", json=body, headers=headers)
        result = r.json().get("result") if r.status_code == 200 else None
        return r.status_code, None if result is None else result.get("isError", False)

    # Four tool calls for four tokens: the /mcp request pays, the REST call it makes does not.
    assert [call(n) for n in range(4)] == [(200, False)] * 4
    assert call(5) == (429, None)


def test_limiter_forgets_a_key_once_it_is_refused():
    limiter = Limiter(0, 1)
    limiter.succeeded("key_1", "mb_good")
    limiter.failed("10.0.0.1", "mb_bad")
    limiter.before_lookup("10.0.0.1", "mb_good")  # known good: looked up as usual
    limiter.failed("10.0.0.1", "mb_good")  # revoked since: forgotten
    with pytest.raises(RateLimited) as refused:
        limiter.before_lookup("10.0.0.1", "mb_good")
    # The window holds the first failure for a minute: Retry-After says how long is left.
    assert 1 <= int(refused.value.headers["Retry-After"]) <= 60


def test_an_unreachable_rate_limit_store_fails_no_request_and_readyz_says_so(make_service):
    from live_server import free_port

    # Nothing listens there: the app starts, and counts in this process meanwhile.
    store = f"redis://127.0.0.1:{free_port()}/0"
    service = make_service(rate_limit_per_minute=3, rate_limit_storage=store)
    headers = service.auth("alice")
    codes = [service.client.get("/v1/memory", headers=headers).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429], codes
    ready = service.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "degraded" and "per process" in ready.json()["detail"]
    # With the default storage, nothing to say.
    assert make_service().client.get("/readyz").json() == {"status": "ready"}
