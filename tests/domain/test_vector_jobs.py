"""The embedding worker on both engines, against a real HTTP embeddings server that counts what
it embeds: several worker processes on one database embed each job exactly once, a crashed
worker's claims are retaken after their lease, a job that cannot be opened is set aside with a
counted reason while the rest drains, and two app processes see each other's vectors."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from memory_bank.domain import vector_jobs
from memory_bank.models import remote
from memory_bank.settings import Secret
from memory_bank.store.engine import make_engine
from memory_bank.store.schema import embedding_job, memory, memory_vector, owner_key
from memory_bank.store.sealing.crypto import encode_master_key, new_master_key
from polling import poll
from serving_thread import serve_in_thread

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"
MODEL = "counting"
DIM = 64


class CountingEmbedder:
    """An OpenAI-compatible embeddings server (a thread of the test process) that records every
    text it is asked to embed under the caller's path prefix (one per process: openai:<url>/w1),
    and answers a hashed bag of words, so texts that share words are near."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.texts: list[tuple[str, str]] = []
        self.held: set[str] = set()  # callers whose requests wait until close()
        self.down = False
        self._closing = threading.Event()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                caller, _, rest = self.path.lstrip("/").partition("/")
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if rest != "v1/embeddings" or body.get("model") != MODEL:
                    self._answer(404, {"error": {"message": "no such model"}})
                    return
                if owner.down:
                    self._answer(503, {"error": {"message": "down"}})
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                with owner._lock:
                    owner.texts.extend((caller, t) for t in texts)
                if caller in owner.held:
                    owner._closing.wait()
                time.sleep(owner.delay)
                data = [{"index": i, "embedding": bag(t)} for i, t in enumerate(texts)]
                self._answer(200, {"data": data, "model": MODEL})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                with contextlib.suppress(OSError):  # a killed caller hung up
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = serve_in_thread(self._server)

    def url(self, caller: str) -> str:
        """The base URL a process gives as MEMORY_BANK_EMBEDDINGS=openai:<url>."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/{caller}"

    def by(self, caller: str) -> list[str]:
        """The texts this caller asked for, in order."""
        with self._lock:
            return [t for c, t in self.texts if c == caller]

    def counts(self) -> Counter[str]:
        """How many times each text was embedded, by anyone."""
        with self._lock:
            return Counter(t for _, t in self.texts)

    def close(self) -> None:
        """Let held requests go and stop."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


def bag(text: str) -> list[float]:
    """A text's hashed bag of words, with a small constant part so no vector is zero."""
    vector = [0.0] * DIM
    vector[-1] = 0.01
    for word in re.findall(r"\w+", text.lower()):
        vector[zlib.crc32(word.encode()) % (DIM - 1)] += 1.0
    return vector


@pytest.fixture
def embedder() -> Iterator[CountingEmbedder]:
    """A counting embeddings server."""
    server = CountingEmbedder()
    yield server
    server.close()


def settings_for(embedder: CountingEmbedder, caller: str, **more: Any) -> dict[str, Any]:
    """Setting changes for a process that embeds through the counting server as caller."""
    return {
        "embeddings": f"openai:{embedder.url(caller)}",
        "embeddings_model": MODEL,
        "embeddings_worker": False,
        **more,
    }


def save(service: Any, headers: dict[str, str], content: str) -> str:
    """Save a memory; its id."""
    r = service.client.post("/v1/memory", json={"content": content}, headers=headers)
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


def outbox(engine: sa.Engine) -> list[tuple[str, str, str | None]]:
    """Every queued job as (owner, memory id, set-aside reason), by id."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                embedding_job.c.user_id, embedding_job.c.memory_id, embedding_job.c.set_aside
            ).order_by(embedding_job.c.id)
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]


def vectored(engine: sa.Engine) -> set[str]:
    """Memory ids with a vector."""
    with engine.connect() as conn:
        return set(conn.execute(sa.select(memory_vector.c.memory_id)).scalars())


def break_data_key(engine: sa.Engine, victim: str, donor: str) -> str:
    """Give the victim the donor's wrapped data key (bound to the donor: it cannot be opened for
    the victim); returns the victim's own, to put back."""
    with engine.begin() as conn:
        wrapped = {
            r.user_id: r.wrapped
            for r in conn.execute(sa.select(owner_key.c.user_id, owner_key.c.wrapped))
        }
        conn.execute(
            sa.update(owner_key).where(owner_key.c.user_id == victim).values(wrapped=wrapped[donor])
        )
    return str(wrapped[victim])


def restore_data_key(engine: sa.Engine, victim: str, wrapped: str) -> None:
    """Put the victim's own wrapped key back (the operator's fix)."""
    with engine.begin() as conn:
        conn.execute(
            sa.update(owner_key).where(owner_key.c.user_id == victim).values(wrapped=wrapped)
        )


def drain(service: Any) -> int:
    """Drain the outbox in this process; how many jobs settled."""
    from memory_bank.app import state_of

    semantic = state_of(service.app).semantic
    settled = 0
    while n := vector_jobs.drain_once(service.db, semantic):
        settled += n
    return settled


# --- In one process: set aside, counted, retried ------------------------------------------


def test_a_job_whose_data_key_does_not_open_is_set_aside_and_the_rest_drains(
    make_service, embedder
):
    master = Secret(encode_master_key(new_master_key()))
    service = make_service(**settings_for(embedder, "app", master_key=master))
    alice, bob = service.auth("alice"), service.auth("bob")
    # bob's jobs are at the head of the queue: before this change they blocked it for good.
    bobs = [save(service, bob, f"bob plans the garden party {i}") for i in range(3)]
    alices = [save(service, alice, f"alice books the train ticket {i}") for i in range(3)]
    bobs_own = break_data_key(service.engine, "bob", "alice")

    assert drain(service) == 6
    assert vectored(service.engine) == set(alices)
    assert outbox(service.engine) == [("bob", mid, "data_key") for mid in bobs]
    assert all(not text.startswith("bob") for text in embedder.counts())
    ready = service.client.get("/readyz")
    assert ready.status_code == 200
    assert _without_detail(ready.json()) == {"status": "ready", "set_aside": {"data_key": 3}}
    assert vector_jobs.pending(service.db) == 0
    assert drain(service) == 0  # set aside: not tried again by the worker

    # The operator fixes the key; reindex --vectors gives the set-aside jobs another try.
    restore_data_key(service.engine, "bob", bobs_own)
    from memory_bank.app import state_of

    assert sum(vector_jobs.queue_missing(service.db, state_of(service.app).semantic.model)) == 0
    assert drain(service) == 3
    assert vectored(service.engine) == set(alices) | set(bobs)
    assert outbox(service.engine) == []
    assert _without_detail(service.client.get("/readyz").json()) == {"status": "ready"}
    assert max(embedder.counts().values()) == 1


def test_a_memory_whose_text_does_not_open_is_set_aside_alone(make_service, embedder):
    master = Secret(encode_master_key(new_master_key()))
    service = make_service(**settings_for(embedder, "app", master_key=master))
    alice = service.auth("alice")
    ids = [save(service, alice, f"alice waters the tomatoes {i}") for i in range(3)]
    with service.engine.begin() as conn:
        # Another row's ciphertext: sealed for a different row id, so it does not open here.
        other = conn.execute(sa.select(memory.c.content).where(memory.c.id == ids[0])).scalar()
        conn.execute(sa.update(memory).where(memory.c.id == ids[1]).values(content=other))

    assert drain(service) == 3
    assert vectored(service.engine) == {ids[0], ids[2]}
    assert outbox(service.engine) == [("alice", ids[1], "unreadable")]
    assert _without_detail(service.client.get("/readyz").json()) == {
        "status": "ready",
        "set_aside": {"unreadable": 1},
    }


def test_a_provider_outage_gives_the_claim_back_at_once(make_service, embedder, monkeypatch):
    # Every retry is still made, without the waits between them (1.4 s in all).
    monkeypatch.setattr(remote, "BACKOFF_SECONDS", 0.0)
    service = make_service(**settings_for(embedder, "app"))
    alice = service.auth("alice")
    ids = [save(service, alice, f"alice feeds the cat {i}") for i in range(3)]
    embedder.down = True
    from memory_bank.app import state_of

    with pytest.raises(Exception, match="HTTP 503"):
        vector_jobs.drain_once(service.db, state_of(service.app).semantic)
    with service.engine.connect() as conn:
        claimed = conn.execute(
            sa.select(sa.func.count())
            .select_from(embedding_job)
            .where(embedding_job.c.claimed_by.is_not(None))
        ).scalar()
    assert claimed == 0
    embedder.down = False
    # Without the release these would wait out the lease (300 s).
    assert drain(service) == 3
    assert vectored(service.engine) == set(ids)


def test_readyz_names_no_set_aside_count_when_embeddings_are_off(service):
    assert service.client.get("/readyz").json() == {"status": "ready"}


# --- Worker processes on one database ------------------------------------------------------

WORKER = """
import json, sys, time
from memory_bank.cli.common import open_database
from memory_bank.domain import vector_jobs
from memory_bank.domain.semantic import from_settings
from memory_bank.settings import Settings

lease, size = float(sys.argv[1]), int(sys.argv[2])
settings = Settings.from_env()
db = open_database(settings)
semantic = from_settings(settings)
print("ready", flush=True)
sys.stdin.readline()
settled = 0
while True:
    n = vector_jobs.drain_once(db, semantic, size, lease)
    settled += n
    if n == 0:
        if vector_jobs.pending(db) == 0:
            break
        time.sleep(0.05)
print(json.dumps({"settled": settled}), flush=True)
"""


class WorkerProcess:
    """A process draining the outbox with drain_once, as a serve process's worker thread does;
    it waits for go() so several start draining together."""

    def __init__(
        self, database_url: str, embedder: CountingEmbedder, caller: str, lease: float, size: int
    ) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": str(SRC),
            "MEMORY_BANK_DATABASE_URL": database_url,
            "MEMORY_BANK_EMBEDDINGS": f"openai:{embedder.url(caller)}",
            "MEMORY_BANK_EMBEDDINGS_MODEL": MODEL,
            "MEMORY_BANK_EMBEDDINGS_TIMEOUT_MS": "600000",
            "MEMORY_BANK_LOG_LEVEL": "warning",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(lease), str(size)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        line = self.process.stdout.readline()
        assert line.strip() == "ready", line + (self.process.stderr.read() if line == "" else "")

    def go(self) -> None:
        """Start draining."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def settled(self) -> int:
        """Wait for the queue to be empty; how many jobs this process settled."""
        out, err = self.process.communicate(timeout=300)
        assert self.process.returncode == 0, err
        return int(json.loads(out.strip().splitlines()[-1])["settled"])

    def kill(self) -> None:
        """kill -9."""
        self.process.kill()
        self.process.communicate()


@pytest.mark.slow
def test_two_worker_processes_embed_each_job_exactly_once(
    make_service, database_url, embedder, monkeypatch
):
    master = encode_master_key(new_master_key())
    monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", master)
    service = make_service(**settings_for(embedder, "app", master_key=Secret(master)))
    owners = ["alice", "bob", "carol", "dave"]
    texts: dict[str, str] = {}
    for owner in owners:
        headers = service.auth(owner)
        for i in range(30):
            text = f"{owner} memory number {i} about the weekly plan"
            texts[save(service, headers, text)] = text
    # dave's data key no longer opens: his 30 jobs must be set aside, not block anyone.
    break_data_key(service.engine, "dave", "alice")
    embedder.delay = 0.02  # each batch takes a moment, so the two processes interleave
    workers = [WorkerProcess(database_url, embedder, f"w{n}", 300, 4) for n in (1, 2)]
    for worker in workers:
        worker.go()
    settled = [worker.settled() for worker in workers]

    counts = embedder.counts()
    embeddable = {mid: t for mid, t in texts.items() if not t.startswith("dave")}
    assert len(embeddable) == 90
    assert {t: counts[t] for t in embeddable.values()} == dict.fromkeys(embeddable.values(), 1)
    assert sum(counts.values()) == 90  # nothing embedded twice, nothing of dave's embedded
    assert all(embedder.by(w) for w in ("w1", "w2")), "both processes embedded"
    assert sum(settled) == 120
    assert vectored(service.engine) == set(embeddable)
    assert {(owner, reason) for owner, _, reason in outbox(service.engine)} == {
        ("dave", "data_key")
    }
    assert len(outbox(service.engine)) == 30
    assert _without_detail(service.client.get("/readyz").json()) == {
        "status": "ready",
        "set_aside": {"data_key": 30},
    }


@pytest.mark.slow
def test_the_claims_of_a_killed_worker_are_taken_again_after_their_lease(
    make_service, database_url, embedder
):
    service = make_service(**settings_for(embedder, "app"))
    alice = service.auth("alice")
    ids = [save(service, alice, f"alice sorts the photo album {i}") for i in range(12)]
    embedder.held.add("crashing")  # its requests never come back: it dies holding its claim
    crashing = WorkerProcess(database_url, embedder, "crashing", 20, 4)
    survivor = WorkerProcess(database_url, embedder, "survivor", 20, 4)
    crashing.go()
    poll(lambda: embedder.by("crashing"))
    held = embedder.by("crashing")
    assert len(held) == 4
    crashing.kill()
    with service.engine.connect() as conn:
        claimed = conn.execute(
            sa.select(embedding_job.c.memory_id).where(embedding_job.c.claimed_by.is_not(None))
        ).scalars()
        assert set(claimed) == set(ids[:4])

    survivor.go()
    assert survivor.settled() == 12
    done = embedder.by("survivor")
    assert sorted(done) == sorted(f"alice sorts the photo album {i}" for i in range(12))
    # The dead worker's jobs head the queue, yet came last: its claim held until its lease
    # was over, and only then were they taken again.
    assert sorted(done[8:]) == sorted(held)
    assert vectored(service.engine) == set(ids)
    assert outbox(service.engine) == []


# --- Two app processes: the vector cache follows the database's version --------------------


def _semantic_ids(base: str, headers: dict[str, str], q: str) -> list[str]:
    """The ids a semantic search answers, best first."""
    r = httpx.get(
        base + "/v1/memory/search",
        params={"q": q, "mode": "semantic", "limit": 3},
        headers=headers,
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.json()["mode"] == "semantic"
    return [m["id"] for m in r.json()["results"]]


@pytest.mark.slow
def test_two_app_processes_see_each_others_saves_edits_and_deletes_in_semantic_search(
    database_url, embedder
):
    from live_server import start_server, stop_server
    from memory_bank.store import api_keys
    from memory_bank.store.engine import writing

    def env(caller: str) -> dict[str, str]:
        return {
            "MEMORY_BANK_EMBEDDINGS": f"openai:{embedder.url(caller)}",
            "MEMORY_BANK_EMBEDDINGS_MODEL": MODEL,
        }

    first = start_server(database_url, env("first"))
    second = start_server(database_url, env("second"))
    engine = make_engine(database_url)
    try:
        secret, _ = writing(
            engine,
            lambda conn: api_keys.create_key(
                conn, "alice", ("mcp:read", "mcp:write"), "t", None, None
            ),
        )
        headers = {"Authorization": f"Bearer {secret}"}

        def save_through(base: str, text: str) -> str:
            r = httpx.post(base + "/v1/memory", json={"content": text}, headers=headers)
            assert r.status_code == 201, r.text
            return str(r.json()["memory"]["id"])

        def embedded() -> None:
            # Both processes' workers drain the one queue; wait until it is empty.
            poll(lambda: not outbox(engine))
            assert outbox(engine) == []

        gitea = save_through(first.base_url, "The repositories live on a Gitea server")
        embedded()
        # The second process caches alice's vectors (one memory).
        assert _semantic_ids(second.base_url, headers, "gitea server") == [gitea]

        leo = save_through(first.base_url, "Leo has football practice every Saturday")
        boots = save_through(first.base_url, "The football boots are in the car")
        embedded()
        # A save through the first process is seen by the second's cached search.
        assert _semantic_ids(second.base_url, headers, "football practice saturday")[0] == leo

        r = httpx.patch(
            f"{first.base_url}/v1/memory/{leo}",
            json={"content": "Leo has chess club every Sunday"},
            headers=headers,
        )
        assert r.status_code == 200, r.text
        embedded()
        # The edit's new vector, not the cached old one: boots now share the most words.
        assert _semantic_ids(second.base_url, headers, "football practice saturday")[0] == boots
        assert _semantic_ids(second.base_url, headers, "chess club sunday")[0] == leo

        # A delete through the second process is seen by the first's cached search.
        assert _semantic_ids(first.base_url, headers, "football boots car")[0] == boots
        r = httpx.delete(f"{second.base_url}/v1/memory/{boots}", headers=headers)
        assert r.status_code == 204
        assert boots not in _semantic_ids(first.base_url, headers, "football boots car")
        # Three saves and an edit, each embedded once, by one of the two processes (the other
        # texts the server saw are queries).
        counts = embedder.counts()
        saved = [
            "The repositories live on a Gitea server",
            "Leo has football practice every Saturday",
            "The football boots are in the car",
            "Leo has chess club every Sunday",
        ]
        assert [counts[t] for t in saved] == [1, 1, 1, 1]
    finally:
        stop_server(first)
        stop_server(second)
        engine.dispose()


def _without_detail(body: dict) -> dict:
    """/readyz's answer without the embedding model's state line (its own tests pin that)."""
    return {k: v for k, v in body.items() if k != "detail"}
