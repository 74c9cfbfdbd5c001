"""A panel sign-in code is spent once across app hosts: two real `serve` processes on one
database, the code sent to each (one after the other, and both at once)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import sqlalchemy as sa

from live_server import start_server, stop_server
from memory_bank.store.migrate import signing_secret
from memory_bank.web.signin import make_code


def test_a_code_spent_on_one_process_is_refused_on_the_other(database_url):
    first = start_server(database_url)  # migrates the database
    second = start_server(database_url)
    engine = sa.create_engine(database_url)
    try:
        secret = signing_secret(engine)
        code = make_code(secret, "alice", 15)
        r = httpx.post(first.base_url + "/v1/panel/session", json={"code": code})
        assert r.status_code == 201, r.text
        key = {"Authorization": f"Bearer {r.json()['key']}"}
        # The key it bought works on both; the code itself, nowhere again.
        assert httpx.get(second.base_url + "/v1/memory", headers=key).status_code == 200
        again = httpx.post(second.base_url + "/v1/panel/session", json={"code": code})
        assert again.status_code == 401, again.text
        assert "already used" in again.json()["detail"]
        assert (
            httpx.post(first.base_url + "/v1/panel/session", json={"code": code}).status_code == 401
        )

        # Both at once: the database's unique key lets exactly one through.
        code = make_code(secret, "alice", 15)
        with ThreadPoolExecutor(2) as pool:
            answers = list(
                pool.map(
                    lambda base: httpx.post(base + "/v1/panel/session", json={"code": code}),
                    [first.base_url, second.base_url],
                )
            )
        assert sorted(r.status_code for r in answers) == [201, 401], [r.text for r in answers]
    finally:
        engine.dispose()
        stop_server(second)
        stop_server(first)
