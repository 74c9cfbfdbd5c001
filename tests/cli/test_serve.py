"""End to end: a real `memory-bank serve` process, used over HTTP the way the README shows."""

from __future__ import annotations

import re

import httpx
import pytest

from live_server import start_server, stop_server


@pytest.fixture
def live(database_url):
    # Several workers on the SQLite file (WAL); one on MariaDB keeps the suite quick.
    workers = 2 if database_url.startswith("sqlite") else 1
    server = start_server(database_url, workers=workers)
    yield server
    stop_server(server)


def test_first_start_prints_a_key_that_works_for_the_readme_session(live):
    banner = live.first_output
    assert f"serving on {live.base_url}" in banner
    match = re.search(r"^\s+(mb_[A-Za-z0-9_-]{40,})\s*$", banner, re.MULTILINE)
    assert match, banner
    key = match.group(1)
    auth = {"Authorization": f"Bearer {key}"}

    with httpx.Client(base_url=live.base_url, headers=auth, timeout=30) as http:
        # Save (README: curl -X POST .../v1/memory -H 'Content-Type: application/json' -d ...)
        r = http.post(
            "/v1/memory",
            json={
                "content": "We dropped Acme as a vendor after the Q3 price change.",
                "tags": ["vendors", "acme"],
                "contexts": [
                    {
                        "snippet": "Let's drop Acme, the new pricing is too high.",
                        "conversation_id": "conv-42",
                        "message_id": "msg-7",
                        "origin": "active_conversation",
                    }
                ],
            },
        )
        assert r.status_code == 201, r.text
        memory = r.json()["memory"]
        assert r.headers["location"] == f"/v1/memory/{memory['id']}"
        assert memory["source"] == "local" and memory["scope"] == "user"

        # Search
        r = http.get("/v1/memory/search", params={"q": "what did we decide about Acme?"})
        assert r.status_code == 200
        results = r.json()["results"]
        assert [m["id"] for m in results] == [memory["id"]] and results[0]["score"] > 0

        # List
        r = http.get("/v1/memory", params={"limit": 10})
        assert r.json() == {"memories": [memory], "next_cursor": None}

        # Get
        assert http.get(f"/v1/memory/{memory['id']}").json() == {"memory": memory}

        # Delete, then it is gone everywhere
        assert http.delete(f"/v1/memory/{memory['id']}").status_code == 204
        r = http.get(f"/v1/memory/{memory['id']}")
        assert r.status_code == 404 and r.json()["code"] == "memory_not_found"
        assert http.get("/v1/memory/search", params={"q": "Acme"}).json() == {
            "results": [],
            "mode": "lexical",
        }

        # Without the key: 401 with a Bearer challenge
        r = httpx.get(live.base_url + "/v1/memory", timeout=30)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")

        # The spec and its browsable docs are served
        assert http.get("/openapi.json").json()["openapi"] == "3.0.3"
        assert http.get("/docs/").status_code == 200
        assert http.get("/readyz").json() == {"status": "ready"}
