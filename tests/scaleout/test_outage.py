"""One backend down behind a Spider head: the owners on the others are served, the owners on it
get 503 with Retry-After, search over an org on it answers the rest and says so, the app and
the CLI start, /readyz names it, and all of it recovers when it returns."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest

from memory_bank.cli import serve
from memory_bank.settings import Settings
from scaleout.placement import partition_of

pytestmark = pytest.mark.spider
DOWN = 1


def _owner_on(head: str, prefix: str, wanted: int, other_than: int | None = None) -> str:
    """A name with this prefix whose owner key the head places on backend `wanted` (or on any
    backend but `other_than`)."""
    for n in range(200):
        name = f"{prefix}{n}"
        key = f"org:{name}" if prefix.startswith("org") else name
        where = partition_of(head, key)
        if (other_than is None and where == wanted) or (
            other_than is not None and where != other_than
        ):
            return name
    raise AssertionError("no name found")


def test_one_backend_down_serves_the_others_and_recovers(cluster, head_service):
    service = head_service()
    stranded = _owner_on(cluster.head, "stranded", DOWN)
    served = _owner_on(cluster.head, "served", 0, other_than=DOWN)
    org = _owner_on(cluster.head, "orgdown", DOWN)
    lost = service.auth(stranded)
    kept = service.auth(served, org)
    for headers, text in ((lost, "stranded tea"), (kept, "served tea")):
        assert (
            service.client.post("/v1/memory", json={"content": text}, headers=headers).status_code
            == 201
        )
    org_save = {"content": "org tea", "scope": "org"}
    assert service.client.post("/v1/memory", json=org_save, headers=kept).status_code == 201
    both = service.client.get("/v1/memory/search", params={"q": "tea"}, headers=kept).json()
    assert len(both["results"]) == 2 and "unavailable" not in both

    cluster.stop(DOWN)
    try:
        # The owner on a live backend saves and searches; the org's rows are left out, said so.
        saved = service.client.post("/v1/memory", json={"content": "more tea"}, headers=kept)
        assert saved.status_code == 201, saved.text
        found = service.client.get("/v1/memory/search", params={"q": "tea"}, headers=kept)
        assert found.status_code == 200, found.text
        assert found.json()["unavailable"] == ["org"]
        assert {r["scope"] for r in found.json()["results"]} == {"user"}
        assert len(found.json()["results"]) == 2
        # The listing too: the user's own page, the org's rows said to be missing.
        listed = service.client.get("/v1/memory", headers=kept)
        assert listed.status_code == 200, listed.text
        assert listed.json()["unavailable"] == ["org"]
        assert sorted(m["content"] for m in listed.json()["memories"]) == ["more tea", "served tea"]
        only_org = service.client.get(
            "/v1/memory/search", params={"q": "tea", "scope": "org"}, headers=kept
        )
        assert only_org.status_code == 200
        assert only_org.json() | {"mode": None} == {
            "results": [],
            "mode": None,
            "unavailable": ["org"],
        }
        # The owner on the stopped backend: 503 with Retry-After, for writes and reads.
        for answer in (
            service.client.post("/v1/memory", json={"content": "x"}, headers=lost),
            service.client.get("/v1/memory/search", params={"q": "tea"}, headers=lost),
            service.client.get("/v1/memory", headers=lost),
        ):
            assert answer.status_code == 503, answer.text
            assert answer.headers["Retry-After"]
        # An org save needs the org's backend: 503, not 500.
        assert service.client.post("/v1/memory", json=org_save, headers=kept).status_code == 503
        ready = service.client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "degraded", "detail": f"unreachable: shard{DOWN}"}

        # A new app (what serve starts) and serve's own start-up work without the backend.
        restarted = head_service()
        settings = Settings(database_url=cluster.head)
        # (Not capsys: the app's log handler would keep its stream after the test closed it.)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            serve.prepare(settings, restarted.app.memory_bank_state.db, "http://127.0.0.1:1")
        assert "a database backend is down" in printed.getvalue()
        env = {**os.environ, "MEMORY_BANK_DATABASE_URL": cluster.head}
        for command in (["migrate"], ["keys", "list"], ["shards", "status"]):
            done = subprocess.run(
                [sys.executable, "-m", "memory_bank", *command],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if command == ["shards", "status"]:
                assert done.returncode == 1 and f"shard{DOWN}  unreachable" in done.stdout
            else:
                assert done.returncode == 0, done.stderr
        again = restarted.client.post("/v1/memory", json={"content": "tea again"}, headers=kept)
        assert again.status_code == 201
    finally:
        cluster.start(DOWN)

    # Back: nothing to restart.
    back = service.client.post("/v1/memory", json={"content": "back tea"}, headers=lost)
    assert back.status_code == 201, back.text
    found = service.client.get("/v1/memory/search", params={"q": "tea"}, headers=kept).json()
    assert "unavailable" not in found and {r["scope"] for r in found["results"]} == {"user", "org"}
    listed = service.client.get("/v1/memory", headers=kept).json()
    assert "unavailable" not in listed and "org tea" in {m["content"] for m in listed["memories"]}
    assert service.client.get("/readyz").json() == {"status": "ready"}


def test_metrics_answer_while_a_backend_is_down(cluster, head_service):
    service = head_service(
        metrics_enabled=True, embeddings="local:all-MiniLM-L6-v2", embeddings_worker=False
    )
    scraped = service.client.get("/metrics").text
    assert "\nmemory_bank_backends_unreachable 0\n" in scraped
    assert "\nmemory_bank_embeddings_pending 0\n" in scraped
    cluster.stop(DOWN)
    try:
        # The backlog counts every owner: left out while one backend is down, never short.
        scraped = service.client.get("/metrics")
        assert scraped.status_code == 200, scraped.text
        assert "\nmemory_bank_backends_unreachable 1\n" in scraped.text
        assert "memory_bank_embeddings_pending" not in scraped.text
    finally:
        cluster.start(DOWN)
    assert "\nmemory_bank_embeddings_pending 0\n" in service.client.get("/metrics").text
