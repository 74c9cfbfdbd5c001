"""Two real `serve` processes on one database, as two app hosts behind a load balancer: with
Redis as the rate limit storage they count together; with memory:// each counts alone."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from live_server import LiveServer, start_server, stop_server
from memory_bank.store import api_keys
from memory_bank.store.engine import writing
from memory_bank.store.migrate import signing_secret
from redis_store import forget, redis_url

LIMIT = 3


# Per module: starting a server takes seconds, and each test uses keys of its own (the
# failed-authentication test, the only one that fails any, from a client of its own).
@pytest.fixture(scope="module", params=["memory", "redis"])
def hosts(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, list[str], sa.Engine]]:
    """(storage, the two processes' base URLs, the database they share)."""
    storage = "memory://" if request.param == "memory" else redis_url()
    url = f"sqlite:///{tmp_path_factory.mktemp('hosts') / 'shared.db'}"
    env = {
        "MEMORY_BANK_RATE_LIMIT_STORAGE": storage,
        "MEMORY_BANK_RATE_LIMIT_PER_MINUTE": str(LIMIT),
        "MEMORY_BANK_AUTH_FAILURES_PER_MINUTE": "2",
        # The load balancer in front of both: its X-Forwarded-For names the client.
        "MEMORY_BANK_TRUSTED_PROXIES": "127.0.0.1",
    }
    servers: list[LiveServer] = []
    engine = sa.create_engine(url)
    try:
        # One after the other: the first start migrates the database.
        servers.append(start_server(url, env))
        servers.append(start_server(url, env))
        yield request.param, [s.base_url for s in servers], engine
    finally:
        for server in servers:
            stop_server(server)
        if request.param == "redis":
            # The deployment's prefix comes from its secret: a new database, a new prefix.
            forget(storage, signing_secret(engine))
        engine.dispose()


def _key(engine: sa.Engine, user: str) -> dict[str, str]:
    """Authorization headers for a new key of this user."""
    secret, _ = writing(
        engine,
        lambda conn: api_keys.create_key(conn, user, ("mcp:read", "mcp:write"), "test-suite"),
    )
    return {"Authorization": f"Bearer {secret}"}


def test_a_key_is_limited_at_the_count_of_every_process_together(hosts):
    storage, (one, two), engine = hosts
    alice = _key(engine, "alice")
    # Turns between the two processes, as a load balancer deals them.
    answers = [httpx.get(base + "/v1/memory", headers=alice) for base in [one, two] * LIMIT]
    codes = [r.status_code for r in answers]
    if storage == "memory":
        # Each process counted its own three: nothing refused yet, and then each refuses.
        assert codes == [200] * (2 * LIMIT), codes
        assert httpx.get(one + "/v1/memory", headers=alice).status_code == 429
        assert httpx.get(two + "/v1/memory", headers=alice).status_code == 429
        return
    # Counted together: the fourth request overall is refused, on whichever process.
    assert codes == [200] * LIMIT + [429] * LIMIT, codes
    refused = answers[LIMIT]
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "rate_limited" and refused.json()["status"] == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    # Another key of the same user has its own count on both.
    other = _key(engine, "alice")
    assert httpx.get(two + "/v1/memory", headers=other).status_code == 200
    assert httpx.get(one + "/v1/memory", headers=other).status_code == 200
    assert httpx.get(one + "/readyz").json()["status"] == "ready"


def test_failed_authentications_are_counted_by_every_process_together(hosts):
    storage, (one, two), engine = hosts
    client = {"X-Forwarded-For": "198.51.100.7"}
    good = {**_key(engine, "bob"), **client}
    assert httpx.get(one + "/v1/memory", headers=good).status_code == 200
    wrong = [{"Authorization": f"Bearer mb_{'x' * 40}{i:03d}", **client} for i in range(3)]
    codes = [
        httpx.get(base + "/v1/memory", headers=h).status_code
        for base, h in zip([one, two, one], wrong, strict=True)
    ]
    if storage == "memory":
        assert codes == [401, 401, 401], codes  # two on one, one on two: within each's two
        return
    assert codes == [401, 401, 429], codes
    assert httpx.get(two + "/v1/memory", headers=wrong[0]).status_code == 429
    # The key that worked on the first process works on the second, which never saw it:
    # the client's spent allowance refuses only keys not known good anywhere.
    assert httpx.get(two + "/v1/memory", headers=good).status_code == 200
    # Another client behind the same balancer has its own allowance.
    other = {**wrong[0], "X-Forwarded-For": "198.51.100.8"}
    assert httpx.get(two + "/v1/memory", headers=other).status_code == 401
