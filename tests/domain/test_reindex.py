"""Rebuilding the index gives what incremental indexing gave; stale indexes rebuild at migrate."""

from __future__ import annotations

import subprocess
import sys

import sqlalchemy as sa

from memory_bank.domain import reindex
from memory_bank.search.document import index_version
from memory_bank.store.schema import memory_term, memory_user_stats, service_state

TEXTS = [
    "We decided to move the launch to Monday",
    "Caroline's puppy Oscar chewed the den-worker-proxy cable",
    "Q3 revenue target v1.2 東京タワー",
    "Email bob@example.com about the 2026-12-02 offsite",
    "🎉",
]


def _fill(service):
    for user in ("alice", "bob"):
        headers = service.auth(user)
        for i, text in enumerate(TEXTS):
            body = {"content": f"{user} {text}", "tags": [f"t{i}"]}
            if i % 2:
                body["contexts"] = [{"snippet": "earlier: the launch plan"}]
            r = service.client.post("/v1/memory", json=body, headers=headers)
            assert r.status_code == 201
    return service.auth("alice")


def _snapshot(service, headers):
    with service.engine.connect() as conn:
        postings = sorted(conn.execute(sa.select(memory_term)).all())
        stats = sorted(conn.execute(sa.select(memory_user_stats)).all())
    results = [
        [
            (m["id"], m["score"])
            for m in service.client.get(
                "/v1/memory/search", params={"q": q}, headers=headers
            ).json()["results"]
        ]
        for q in ("launch", "Oscar puppy", "q3", "東京", "bob@example.com", "offsite plan")
    ]
    return postings, stats, results


def test_reindex_gives_the_same_index_and_results(service):
    headers = _fill(service)
    before = _snapshot(service, headers)
    assert before[2][0]  # the queries do find something
    with service.engine.begin() as conn:
        conn.execute(sa.delete(memory_term))
        conn.execute(sa.update(memory_user_stats).values(doc_count=99, total_len=1))
    assert reindex.rebuild(service.db, batch=3) == 2 * len(TEXTS)
    assert _snapshot(service, headers) == before


def test_reindex_of_one_user_leaves_the_other_alone(service):
    headers = _fill(service)
    before = _snapshot(service, headers)
    with service.engine.begin() as conn:
        conn.execute(sa.delete(memory_term).where(memory_term.c.user_id == "bob"))
    assert reindex.rebuild(service.db, "bob") == len(TEXTS)
    assert _snapshot(service, headers) == before


def test_migrate_rebuilds_a_stale_index(service):
    headers = _fill(service)
    before = _snapshot(service, headers)
    with service.engine.begin() as conn:
        conn.execute(sa.delete(memory_term))
        conn.execute(
            sa.update(service_state)
            .where(service_state.c.name == reindex.STATE_NAME)
            .values(value="analyzer=1;weights=1,1,0")
        )
    reindex.prepare(service.engine, lambda _ready: service.db)
    assert reindex.stored_version(service.db) == index_version()
    assert _snapshot(service, headers) == before


def test_reindex_command(service, database_url):
    headers = _fill(service)
    before = _snapshot(service, headers)
    with service.engine.begin() as conn:
        conn.execute(sa.delete(memory_term))
    done = subprocess.run(
        [sys.executable, "-m", "memory_bank.cli", "reindex", "--batch", "4"],
        env={"MEMORY_BANK_DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"reindexed {2 * len(TEXTS)} memories of all users" in done.stdout
    assert "reindex" in done.stderr  # the progress bar
    assert _snapshot(service, headers) == before
