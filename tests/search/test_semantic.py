"""Semantic and hybrid search end to end, on SQLite and MariaDB, with the packaged local model
and with a real HTTP server process speaking the OpenAI embeddings API."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from embedding_servers import EmbeddingServers, stats
from live_server import free_port
from memory_bank.app import EmbeddingsMisconfigured, create_app, state_of
from memory_bank.cli import main as cli_main
from memory_bank.domain import transfer, vector_jobs
from memory_bank.store import memories as memory_store
from memory_bank.store import memory_writes, vectors
from memory_bank.store.engine import reading, writing
from memory_bank.store.schema import embedding_job, memory_vector
from polling import poll, wait_for

TESTS = Path(__file__).resolve().parents[1]

LOCAL_MODEL = "local:all-mpnet-base-v2-int8"
LOCAL_DIM = 768
LEO = "Leo has football practice every Saturday"
QUESTION = "What sport does my son do at the weekend?"
DISTRACTORS = [
    "The repositories live on a Gitea server we run ourselves",
    "I bought milk, eggs and bread on the way home",
    "Meeting with Acme moved to Tuesday afternoon",
    "My passport expires next autumn",
    "The boiler service is due in November",
    "Grandma's birthday falls on the 14th of June",
]


def drain(service: Any) -> int:
    """Embed everything queued, as a serve process's worker would; how many jobs settled."""
    state = state_of(service.app)
    settled = 0
    while n := vector_jobs.drain_once(service.db, state.semantic):
        settled += n
    return settled


def search(service: Any, headers: dict[str, str], q: str, **params: Any) -> dict[str, Any]:
    """GET /v1/memory/search, asserting a 200."""
    r = service.client.get("/v1/memory/search", params={"q": q, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def save(service: Any, headers: dict[str, str], content: str, **body: Any) -> str:
    """Save a memory and return its id."""
    r = service.client.post("/v1/memory", json={"content": content, **body}, headers=headers)
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


def vector_rows(engine: sa.Engine, user: str) -> dict[str, tuple[str, int]]:
    """The user's vector rows: memory id -> (model, dim)."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(memory_vector.c.memory_id, memory_vector.c.model, memory_vector.c.dim).where(
                memory_vector.c.user_id == user
            )
        ).all()
    return {r.memory_id: (r.model, r.dim) for r in rows}


def job_count(engine: sa.Engine) -> int:
    """Rows in the outbox, over everyone."""
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(embedding_job)).scalar())


@pytest.fixture
def semantic(make_service: Callable[..., Any]) -> Any:
    """A service with the local model and no background worker (tests drain by hand)."""
    return make_service(embeddings="local", embeddings_worker=False)


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServers]:
    """Start real OpenAI-compatible embedding server processes; calling it returns a base URL."""
    servers = EmbeddingServers()
    yield servers
    servers.close()


def test_a_paraphrase_is_found_by_hybrid_and_semantic_but_not_lexical(semantic):
    alice = semantic.auth("alice")
    leo = save(semantic, alice, LEO)
    for text in DISTRACTORS:
        save(semantic, alice, text)
    assert drain(semantic) == 1 + len(DISTRACTORS)

    lexical = search(semantic, alice, QUESTION, mode="lexical")
    assert lexical["mode"] == "lexical"
    assert leo not in [m["id"] for m in lexical["results"]]
    for mode in ("semantic", "hybrid"):
        found = search(semantic, alice, QUESTION, mode=mode, limit=3)
        assert found["mode"] == mode
        assert found["results"][0]["id"] == leo, mode
    # Hybrid is the default once embeddings are on.
    assert search(semantic, alice, QUESTION)["mode"] == "hybrid"


def test_a_save_is_searchable_lexically_before_its_vector_and_semantically_after(semantic):
    alice = semantic.auth("alice")
    leo = save(semantic, alice, LEO, contexts=[{"snippet": "He loves the team"}])
    assert job_count(semantic.engine) == 1
    assert vector_rows(semantic.engine, "alice") == {}
    before = search(semantic, alice, "football")
    assert before["mode"] == "hybrid"
    assert [m["id"] for m in before["results"]] == [leo]
    # min_score=0: whether the memory has a vector is the subject here, not the floor (the
    # memory with its context scores 0.24 for this paraphrase against the floor 0.3).
    assert search(semantic, alice, QUESTION, mode="semantic", min_score=0)["results"] == []

    assert drain(semantic) == 1
    assert vector_rows(semantic.engine, "alice") == {leo: (LOCAL_MODEL, LOCAL_DIM)}
    assert job_count(semantic.engine) == 0
    after = search(semantic, alice, QUESTION, mode="semantic", min_score=0)["results"]
    assert [m["id"] for m in after] == [leo]


@pytest.mark.model
def test_the_backlog_is_the_operators_metric_not_a_public_readyz_count(make_service):
    service = make_service(embeddings="local", embeddings_worker=False, metrics_enabled=True)
    alice = service.auth("alice")
    save(service, alice, LEO)
    save(service, alice, "The repositories live on Gitea")
    # Anyone may call /readyz: it names no count of everyone's work, only the model's state.
    assert service.client.get("/readyz").json() == {
        "status": "ready",
        "detail": f"embeddings {LOCAL_MODEL}: ready",
    }
    scraped = service.client.get("/metrics").text
    assert "# TYPE memory_bank_embeddings_pending gauge" in scraped
    assert "\nmemory_bank_embeddings_pending 2\n" in scraped
    drain(service)
    assert "\nmemory_bank_embeddings_pending 0\n" in service.client.get("/metrics").text


def test_embeddings_off_queues_nothing_and_readyz_is_unchanged(service):
    alice = service.auth("alice")
    save(service, alice, LEO)
    assert job_count(service.engine) == 0
    assert service.client.get("/readyz").json() == {"status": "ready"}
    # Asking for semantic search while it is off answers lexically, and says so.
    found = search(service, alice, "football", mode="semantic")
    assert found["mode"] == "lexical" and len(found["results"]) == 1


def test_delete_removes_the_vector_in_the_same_transaction(semantic):
    alice = semantic.auth("alice")
    leo = save(semantic, alice, LEO)
    drain(semantic)
    with reading(semantic.engine) as conn:
        version = vectors.version(conn, "alice")
    assert leo in vector_rows(semantic.engine, "alice")

    class Abort(Exception):
        pass

    def delete_then_fail(conn: sa.Connection) -> None:
        assert memory_writes.delete_memory(conn, "alice", leo)
        assert vector_rows_in(conn, "alice") == set()  # gone inside the transaction
        raise Abort

    with pytest.raises(Abort):
        writing(semantic.engine, delete_then_fail)
    # Rolled back together: the memory and its vector are both still there.
    assert leo in vector_rows(semantic.engine, "alice")
    assert semantic.client.get(f"/v1/memory/{leo}", headers=alice).status_code == 200

    assert semantic.client.delete(f"/v1/memory/{leo}", headers=alice).status_code == 204
    assert vector_rows(semantic.engine, "alice") == {}
    with reading(semantic.engine) as conn:
        assert vectors.version(conn, "alice") not in {None, version}
    assert search(semantic, alice, QUESTION, mode="semantic")["results"] == []


def vector_rows_in(conn: sa.Connection, user: str) -> set[str]:
    """The user's vectors' memory ids, seen from inside a transaction."""
    stmt = sa.select(memory_vector.c.memory_id).where(memory_vector.c.user_id == user)
    return set(conn.execute(stmt).scalars())


def test_a_deleted_memory_queued_for_embedding_gets_no_vector(semantic):
    alice = semantic.auth("alice")
    leo = save(semantic, alice, LEO)
    assert semantic.client.delete(f"/v1/memory/{leo}", headers=alice).status_code == 204
    assert job_count(semantic.engine) == 0  # its job went with it
    assert drain(semantic) == 0
    assert vector_rows(semantic.engine, "alice") == {}


def test_one_users_vectors_never_enter_anothers_ranking(semantic):
    alice, bob = semantic.auth("alice"), semantic.auth("bob")
    alices = {save(semantic, alice, LEO), save(semantic, alice, DISTRACTORS[0])}
    bobs = {save(semantic, bob, text) for text in DISTRACTORS[1:4]}
    drain(semantic)
    for mode in ("semantic", "hybrid"):
        # Alice's search first fills the cache with her matrix; Bob's never sees it.
        assert {m["id"] for m in search(semantic, alice, QUESTION, mode=mode)["results"]} <= alices
        assert {m["id"] for m in search(semantic, bob, QUESTION, mode=mode)["results"]} <= bobs


def test_an_erased_users_cached_vectors_never_serve_a_new_user_of_that_id(semantic):
    alice = semantic.auth("alice")
    old = save(semantic, alice, LEO)
    drain(semantic)
    assert [m["id"] for m in search(semantic, alice, QUESTION, mode="semantic")["results"]] == [old]
    transfer.erase(semantic.db, "alice")
    alice = semantic.auth("alice")
    new = save(semantic, alice, DISTRACTORS[1])
    drain(semantic)
    # The new user's only memory is unrelated: asked with no floor, it is the nearest.
    found = search(semantic, alice, QUESTION, mode="semantic", min_score=0)["results"]
    assert [m["id"] for m in found] == [new]


def test_a_model_change_re_embeds_and_never_mixes_models(
    semantic, make_service, embedding_server, database_url, capsys
):
    alice = semantic.auth("alice")
    ids = {save(semantic, alice, text) for text in [LEO, *DISTRACTORS[:2]]}
    drain(semantic)
    assert {model for model, _ in vector_rows(semantic.engine, "alice").values()} == {LOCAL_MODEL}

    base = embedding_server("other-minilm")
    other = make_service(
        embeddings=f"openai:{base}", embeddings_model="other-minilm", embeddings_worker=False
    )
    # The new model has no vectors yet: semantic search finds nothing rather than ranking
    # the old model's vectors against a query embedded by the new one; hybrid stays lexical.
    assert search(other, alice, QUESTION, mode="semantic")["results"] == []
    assert [m["content"] for m in search(other, alice, "football")["results"]] == [LEO]

    env = {
        "MEMORY_BANK_DATABASE_URL": database_url,
        "MEMORY_BANK_EMBEDDINGS": f"openai:{base}",
        "MEMORY_BANK_EMBEDDINGS_MODEL": "other-minilm",
    }
    old_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        assert cli_main(["reindex", "--vectors"]) == 0
    finally:
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert "3" in capsys.readouterr().out
    assert vector_rows(other.engine, "alice") == {mid: ("openai:other-minilm", 384) for mid in ids}
    found = search(other, alice, QUESTION, mode="semantic", limit=1)["results"]
    assert [m["content"] for m in found] == [LEO]
    # The first service's model now has no vectors left: it ranks none of the new ones.
    assert search(semantic, alice, QUESTION, mode="semantic")["results"] == []


def test_with_the_provider_stopped_search_answers_lexically_and_logs_once(
    make_service, embedding_server, caplog
):
    base = embedding_server("other-minilm")
    service = make_service(
        embeddings=f"openai:{base}",
        embeddings_model="other-minilm",
        embeddings_worker=False,
        embeddings_timeout_ms=500,
    )
    alice = service.auth("alice")
    leo = save(service, alice, LEO)
    drain(service)
    assert search(service, alice, "football")["mode"] == "hybrid"

    stop = httpx.get(base + "/stats")  # the server is up; now stop it
    assert stop.status_code == 200
    embedding_server.kill(base)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memory_bank.embeddings"):
        for _ in range(3):
            found = search(service, alice, "football")
            assert found["mode"] == "lexical"
            assert [m["id"] for m in found["results"]] == [leo]
        assert search(service, alice, QUESTION, mode="semantic")["mode"] == "lexical"
    warnings = [r for r in caplog.records if "answers lexically" in r.getMessage()]
    assert len(warnings) == 1


def test_a_provider_slower_than_the_deadline_gives_lexical_results(make_service, embedding_server):
    base = embedding_server("other-minilm", "--delay", "3")
    service = make_service(
        embeddings=f"openai:{base}",
        embeddings_model="other-minilm",
        embeddings_worker=False,
        embeddings_deadline_ms=200,
    )
    alice = service.auth("alice")
    leo = save(service, alice, LEO)
    found = search(service, alice, "football")
    assert found["mode"] == "lexical"
    assert [m["id"] for m in found["results"]] == [leo]


def bm25_rankings(engine: sa.Engine, run: Callable[[], Any]) -> int:
    """How many BM25 rankings (each opens with the owner's statistics) `run` makes."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM memory_user_stats" in statement:
            seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", note)
    try:
        run()
    finally:
        sa.event.remove(engine, "before_cursor_execute", note)
    return len(seen)


def test_a_missed_deadline_ranks_bm25_once_and_answers_as_lexical_does(
    make_service, embedding_server
):
    base = embedding_server("other-minilm", "--delay", "3")
    service = make_service(
        embeddings=f"openai:{base}",
        embeddings_model="other-minilm",
        embeddings_worker=False,
        embeddings_deadline_ms=200,
    )
    alice = service.auth("alice")
    for text in [LEO, *DISTRACTORS, "Football boots for Leo", "Saturday football at nine"]:
        save(service, alice, text)
    answers: dict[str, Any] = {}

    def ask(mode: str) -> Callable[[], None]:
        return lambda: answers.__setitem__(
            mode, search(service, alice, "football Saturday", mode=mode)
        )

    assert bm25_rankings(service.engine, ask("lexical")) == 1
    assert bm25_rankings(service.engine, ask("hybrid")) == 1
    assert answers["hybrid"]["mode"] == "lexical"
    assert [(m["id"], m["score"]) for m in answers["hybrid"]["results"]] == [
        (m["id"], m["score"]) for m in answers["lexical"]["results"]
    ]
    assert len(answers["lexical"]["results"]) == 3


def test_no_connection_is_held_while_the_query_is_embedded(make_service, embedding_server):
    base = embedding_server("other-minilm", "--delay", "5")
    service = make_service(
        embeddings=f"openai:{base}",
        embeddings_model="other-minilm",
        embeddings_worker=False,
        embeddings_deadline_ms=2000,
    )
    alice = service.auth("alice")
    leo = save(service, alice, LEO)
    moves: list[tuple[float, int]] = []
    listeners = {
        "checkout": lambda *_: moves.append((time.monotonic(), 1)),
        "checkin": lambda *_: moves.append((time.monotonic(), -1)),
    }
    for name, listener in listeners.items():
        sa.event.listen(service.engine.pool, name, listener)
    try:
        found = search(service, alice, "football")
    finally:
        for name, listener in listeners.items():
            sa.event.remove(service.engine.pool, name, listener)
    assert found["mode"] == "lexical"  # the provider missed the deadline: it was awaited
    assert [m["id"] for m in found["results"]] == [leo]
    # The time with nothing checked out, between the search's first checkout and its last
    # checkin: the wait for the vector (up to the 2 s deadline) falls in it; a search holding
    # its connection through the wait has none.
    held, idle, since = 0, 0.0, None
    for at, step in moves:
        if held == 0 and since is not None:
            idle += at - since
        held += step
        since = at if held == 0 else None
    assert idle > 0.5, moves


@pytest.mark.parametrize(
    ("value", "model", "says"),
    [
        ("bogus", "", "must be off, local"),
        ("openai:not a url", "m", r"needs an http\(s\) URL"),
        ("openai:http://127.0.0.1:9", "", "needs MEMORY_BANK_EMBEDDINGS_MODEL"),
        ("local:/no/such/model/dir", "", "neither a known model"),
    ],
)
def test_a_bad_embeddings_setting_refuses_to_start(settings, value, model, says):
    with pytest.raises(EmbeddingsMisconfigured, match=says):
        create_app(settings.replace(embeddings=value, embeddings_model=model))


def test_serve_with_a_bad_embeddings_setting_exits_with_a_message(database_url):
    env = {
        **os.environ,
        "MEMORY_BANK_DATABASE_URL": database_url,
        "MEMORY_BANK_EMBEDDINGS": "semantic-please",
    }
    done = subprocess.run(
        [sys.executable, "-m", "memory_bank.cli", "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "MEMORY_BANK_EMBEDDINGS must be off, local" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_openai_provider_against_a_real_server(embedding_server, caplog):
    from memory_bank.models.local_model import load
    from memory_bank.models.remote import ProviderError, RemoteProvider

    key = "sk-test-" + "s3cr3t" * 4
    base = embedding_server("other-minilm", "--key", key, "--fail", "2")
    provider = RemoteProvider(base, "other-minilm", key, timeout=10)
    texts = [f"memory number {i} about {DISTRACTORS[i % 6]}" for i in range(70)]
    with caplog.at_level(logging.DEBUG):
        rows = provider.embed(texts)
    assert rows.shape == (70, 384)
    # The same vectors as the model in-process, in the texts' order (the server answers in
    # reverse order; the client orders by index).
    local = load("all-MiniLM-L6-v2").embed(texts)
    assert float((rows * local).sum(axis=1).min()) > 0.999
    seen = stats(base)
    assert seen["failed"] == 2  # two 503s, retried with backoff
    assert seen["batches"] == [64, 6]
    assert seen["unauthorized"] == 0

    wrong = RemoteProvider(base, "other-minilm", "sk-wrong-key-" + "x" * 20, timeout=10)
    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as caught:
        wrong.embed(["hello"])
    assert "401" in str(caught.value)
    assert stats(base)["unauthorized"] == 1  # a 401 is not retried
    for secret in (key, "sk-wrong-key-"):
        assert secret not in str(caught.value)
        assert secret not in repr(wrong)
        assert all(secret not in r.getMessage() for r in caplog.records)


def test_hybrid_search_through_an_openai_compatible_server(make_service, embedding_server):
    base = embedding_server("other-minilm", "--key", "sk-abc")
    service = make_service(
        embeddings=f"openai:{base}/v1",
        embeddings_model="other-minilm",
        embeddings_api_key="sk-abc",
        embeddings_worker=False,
    )
    alice = service.auth("alice")
    leo = save(service, alice, LEO)
    for text in DISTRACTORS:
        save(service, alice, text)
    drain(service)
    found = search(service, alice, QUESTION, limit=1)
    assert found["mode"] == "hybrid"
    assert [m["id"] for m in found["results"]] == [leo]
    assert vector_rows(service.engine, "alice")[leo] == ("openai:other-minilm", 384)


@pytest.mark.model
def test_the_worker_drains_the_outbox_in_the_background(make_service):
    service = make_service(embeddings="local")  # worker on, as in `serve`
    alice = service.auth("alice")
    leo = save(service, alice, LEO)
    poll(lambda: job_count(service.engine) == 0)
    assert vector_rows(service.engine, "alice") == {leo: (LOCAL_MODEL, LOCAL_DIM)}


@pytest.mark.slow
def test_kill_9_of_the_worker_mid_batch_loses_no_job(database_url, embedding_server):
    from live_server import start_server, stop_server
    from memory_bank.store import api_keys
    from memory_bank.store.engine import make_engine

    slow = embedding_server("other-minilm", "--delay", "60")
    env = {
        "MEMORY_BANK_EMBEDDINGS_MODEL": "other-minilm",
        "MEMORY_BANK_EMBEDDINGS_TIMEOUT_MS": "120000",
        # The killed worker's claim keeps its jobs from the next process until its lease ends.
        "MEMORY_BANK_EMBEDDINGS_LEASE_SECONDS": "5",
    }
    server = start_server(database_url, {**env, "MEMORY_BANK_EMBEDDINGS": f"openai:{slow}"})
    engine = make_engine(database_url)
    try:
        secret, _ = writing(
            engine,
            lambda conn: api_keys.create_key(
                conn, "alice", ("mcp:read", "mcp:write"), "t", None, None
            ),
        )
        headers = {"Authorization": f"Bearer {secret}"}
        saved = set()
        for text in [LEO, *DISTRACTORS[:4]]:
            r = httpx.post(server.base_url + "/v1/memory", json={"content": text}, headers=headers)
            assert r.status_code == 201
            saved.add(r.json()["memory"]["id"])
        wait_for(lambda: stats(slow)["batches"], "the worker to ask for embeddings")
        # The worker is waiting for the provider with a batch in hand: kill the process.
        server.process.kill()
        server.process.wait()
        assert job_count(engine) == len(saved)
        assert vector_rows(engine, "alice") == {}

        fast = embedding_server("other-minilm")
        server = start_server(database_url, {**env, "MEMORY_BANK_EMBEDDINGS": f"openai:{fast}"})
        poll(lambda: job_count(engine) == 0, timeout=120, every=0.1)
        assert set(vector_rows(engine, "alice")) == saved
        assert job_count(engine) == 0
    finally:
        stop_server(server)
        engine.dispose()


def test_a_memory_the_provider_refuses_does_not_block_the_queue(make_service, embedding_server):
    base = embedding_server("other-minilm", "--refuse", "POISON")
    service = make_service(
        embeddings=f"openai:{base}", embeddings_model="other-minilm", embeddings_worker=False
    )
    alice = service.auth("alice")
    bad = save(service, alice, "POISON " * 3)
    good = save(service, alice, LEO)
    assert drain(service) == 2
    assert vector_rows(service.engine, "alice") == {good: ("openai:other-minilm", 384)}
    assert job_count(service.engine) == 0
    # The refused memory is still found, lexically.
    assert [m["id"] for m in search(service, alice, "poison", mode="lexical")["results"]] == [bad]


def test_an_edit_drops_the_old_vector_and_queues_a_new_one_in_its_transaction(semantic):
    import dataclasses

    from memory_bank.domain import edits

    alice = semantic.auth("alice")
    mid = save(semantic, alice, LEO)
    drain(semantic)
    assert mid in vector_rows(semantic.engine, "alice")
    gitea = DISTRACTORS[0]

    class Abort(Exception):
        pass

    def edit_then_fail(conn: sa.Connection) -> None:
        row = memory_store.locked(conn, "alice", mid)
        assert row is not None
        edited = dataclasses.replace(row, content=gitea, revision=row.revision + 1)
        edits.content_changed(conn, edited, False)
        # Inside the edit's transaction: the stale vector is gone and a new job is queued.
        assert vector_rows_in(conn, "alice") == set()
        queued = sa.select(embedding_job.c.memory_id).where(embedding_job.c.user_id == "alice")
        assert list(conn.execute(queued).scalars()) == [mid]
        raise Abort

    with pytest.raises(Abort):
        writing(semantic.engine, edit_then_fail)
    # Rolled back together: the old vector and no job.
    assert mid in vector_rows(semantic.engine, "alice") and job_count(semantic.engine) == 0

    r = semantic.client.patch(f"/v1/memory/{mid}", json={"content": gitea}, headers=alice)
    assert r.status_code == 200, r.text
    assert vector_rows(semantic.engine, "alice") == {} and job_count(semantic.engine) == 1
    # Until the new vector exists no ranking uses the stale one: the old meaning finds nothing.
    assert search(semantic, alice, QUESTION, mode="semantic")["results"] == []
    assert drain(semantic) == 1
    where = "Where is our source code hosted?"
    found = search(semantic, alice, where, mode="semantic", limit=1)["results"]
    assert [m["id"] for m in found] == [mid]

    # A restore is an edit too: revision 1's words come back, and so does their meaning.
    r = semantic.client.post(f"/v1/memory/{mid}/revisions/1/restore", headers=alice)
    assert r.status_code == 200, r.text
    assert job_count(semantic.engine) == 1
    drain(semantic)
    found = search(semantic, alice, QUESTION, mode="semantic", limit=1)["results"]
    assert [m["id"] for m in found] == [mid]
    assert found[0]["content"] == LEO
