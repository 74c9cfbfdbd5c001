"""Edits against a real `memory-bank serve` on both engines: concurrent editors with If-Match
(exactly one winner per revision, none lost), and kill -9 mid-edit (only whole states)."""

from __future__ import annotations

import json
import threading
from collections import Counter

import httpx
import pytest
import sqlalchemy as sa

from live_server import start_server, stop_server
from memory_bank.search.document import postings_of
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.schema import (
    memory,
    memory_context,
    memory_revision,
    memory_term,
    memory_user_stats,
)
from polling import poll

EDITORS = 6
ROUNDS = 8


def _headers(database_url: str, user: str = "alice") -> dict[str, str]:
    engine = make_engine(database_url, pool_size=1)
    try:
        secret, _ = writing(
            engine,
            lambda conn: api_keys.create_key(conn, user, ("mcp:read", "mcp:write"), "edit-test"),
        )
    finally:
        engine.dispose()
    return {"Authorization": f"Bearer {secret}"}


@pytest.mark.slow
def test_concurrent_editors_with_if_match_have_one_winner_per_revision(database_url):
    server = start_server(database_url)
    try:
        headers = _headers(database_url)
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            saved = client.post("/v1/memory", json={"content": "start"}, headers=headers)
            mid = saved.json()["memory"]["id"]
        wins: list[tuple[int, str]] = []
        conflicts: list[int] = []
        errors: list[str] = []
        start = threading.Barrier(EDITORS)

        def editor(n: int) -> None:
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                start.wait()
                for k in range(ROUNDS):
                    tag = client.get(f"/v1/memory/{mid}", headers=headers).headers["etag"]
                    text = f"editor {n} round {k}"
                    r = client.patch(
                        f"/v1/memory/{mid}",
                        json={"content": text},
                        headers={**headers, "If-Match": tag},
                    )
                    if r.status_code == 200:
                        wins.append((r.json()["memory"]["revision"], text))
                    elif r.status_code == 412 and r.json()["code"] == "revision_conflict":
                        conflicts.append(r.json()["revision"])
                    else:
                        errors.append(f"{r.status_code} {r.text}")

        threads = [threading.Thread(target=editor, args=(n,)) for n in range(EDITORS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == []
        assert len(wins) + len(conflicts) == EDITORS * ROUNDS
        # Exactly one winner per revision, numbered 2, 3, ... without a gap.
        numbers = Counter(rev for rev, _ in wins)
        assert set(numbers.values()) == {1}
        assert sorted(numbers) == list(range(2, 2 + len(wins)))
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            history = client.get(
                f"/v1/memory/{mid}/revisions", params={"limit": 100}, headers=headers
            ).json()["revisions"]
            final = client.get(f"/v1/memory/{mid}", headers=headers).json()["memory"]
        # No lost revision: every acknowledged edit is in the history under its number.
        stored = {r["revision"]: r["content"] for r in history}
        assert stored == {1: "start", **dict(wins)}
        assert final["revision"] == 1 + len(wins) and final["content"] == stored[final["revision"]]
    finally:
        stop_server(server)


def _whole_states(database_url: str) -> list[str]:
    """What is not a whole state: a memory whose content, tags or postings are not those of
    its current revision row, or statistics that drifted."""
    engine = sa.create_engine(database_url)
    problems = []
    with engine.connect() as conn:
        for row in conn.execute(sa.select(memory)).all():
            rev = conn.execute(
                sa.select(memory_revision).where(
                    memory_revision.c.memory_id == row.id,
                    memory_revision.c.revision == row.revision,
                )
            ).first()
            if row.revision > 1 and rev is None:
                problems.append(f"{row.id}: revision {row.revision} has no row")
                continue
            if rev is not None and (rev.content, rev.tags) != (row.content, row.tags):
                problems.append(f"{row.id}: memory and revision {row.revision} differ")
            snippets = conn.execute(
                sa.select(memory_context.c.snippet)
                .where(memory_context.c.memory_id == row.id)
                .order_by(memory_context.c.position)
            ).scalars()
            expected = postings_of(row.content, json.loads(row.tags), list(snippets))
            stored = dict(
                conn.execute(
                    sa.select(memory_term.c.term, memory_term.c.tf).where(
                        memory_term.c.memory_id == row.id
                    )
                ).all()
            )
            if stored != dict(expected.terms):
                problems.append(f"{row.id}: postings are not those of its content")
        count = conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar()
        docs = conn.execute(sa.select(sa.func.sum(memory_user_stats.c.doc_count))).scalar()
        if count != (docs or 0):
            problems.append(f"statistics count {docs} documents for {count} memories")
    engine.dispose()
    return problems


@pytest.mark.slow
def test_kill_9_during_edits_leaves_only_whole_states(database_url):
    server = start_server(database_url)
    headers = _headers(database_url)
    acknowledged: dict[str, int] = {}
    ids = []
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for n in range(4):
            body = {"content": f"memory {n} first words", "contexts": [{"snippet": "ctx"}]}
            ids.append(client.post("/v1/memory", json=body, headers=headers).json()["memory"]["id"])
    stop = threading.Event()

    def edit_forever(worker: int) -> None:
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            k = 0
            while not stop.is_set():
                mid = ids[(worker + k) % len(ids)]
                body = {
                    "content": f"edit w{worker} k{k} alpha{k % 7} beta{k % 5}",
                    "tags": [f"t{k % 3}"],
                    "contexts": [{"snippet": f"snippet {k}"}, {"snippet": "again"}],
                }
                try:
                    r = client.patch(f"/v1/memory/{mid}", json=body, headers=headers)
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    rev = r.json()["memory"]["revision"]
                    acknowledged[mid] = max(acknowledged.get(mid, 1), rev)
                k += 1

    workers = [threading.Thread(target=edit_forever, args=(w,)) for w in range(4)]
    for t in workers:
        t.start()
    poll(lambda: sum(acknowledged.values()) >= 40, timeout=30)
    server.process.kill()  # SIGKILL, mid-edit
    server.process.wait()
    stop.set()
    for t in workers:
        t.join(timeout=30)
    stop_server(server)
    assert sum(acknowledged.values()) >= 40, "too few edits finished before the kill"
    assert _whole_states(database_url) == []
    engine = sa.create_engine(database_url)
    with engine.connect() as conn:
        revisions = dict(conn.execute(sa.select(memory.c.id, memory.c.revision)).all())
    engine.dispose()
    # No acknowledged edit was lost.
    assert all(revisions[mid] >= rev for mid, rev in acknowledged.items())
