"""Save and search latency through a Spider head (2 and 3 backends) against one plain backend.

One run, on loopback: tools/spider_cluster.py brings up N backends and a head, `shards init`
makes the head; the plain layout is a database of its own on backend 0 of the same cluster (the
same server settings). Each layout gets 3 owners of 10k memories (synthetic sentences, written
through the storage layer with the API's analyzer), then one owner's saves (POST /v1/memory)
and searches (GET /v1/memory/search, 2-3 words) are timed in process (ASGI, no network).
Results: benchmarks/results/spider.json and a table on stdout.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from starlette.testclient import TestClient

from memory_bank.app import create_app, state_of
from memory_bank.domain import reindex
from memory_bank.search.document import postings_of
from memory_bank.settings import Settings
from memory_bank.state import dispose
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.memory_writes import insert_memory
from memory_bank.store.migrate import init_shards, migrate
from memory_bank.store.owners import Owner

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "spider_cluster.py"
RESULTS = REPO / "benchmarks" / "results" / "spider.json"
PER_OWNER = 10_000
OWNERS = ["bench0", "bench1", "bench2"]
TIMED = 300
CHUNK = 500


def _words(seed: int = 7) -> list[str]:
    """A fixed vocabulary of 4,000 made-up words."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted(
        {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(4000)}
    )


def _sentence(rng: random.Random, words: list[str]) -> str:
    """12-20 words drawn with a Zipf-like skew (common words common)."""
    n = rng.randint(12, 20)
    return " ".join(words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(n))


def _load(url: str, words: list[str]) -> None:
    """PER_OWNER memories for each owner, written as the API would write them."""
    engine = make_engine(url, 2)
    rng = random.Random(11)
    for owner in OWNERS:
        who = Owner(owner, None, "bench")
        for start in range(0, PER_OWNER, CHUNK):
            texts = [_sentence(rng, words) for _ in range(min(CHUNK, PER_OWNER - start))]

            def work(conn: sa.Connection, texts: list[str] = texts, who: Owner = who) -> None:
                for text in texts:
                    insert_memory(conn, who, text, ["bench"], [], postings_of(text, ["bench"], []))

            writing(engine, work)
    # The postings were made by this code's analyzer: no rebuild when the app starts.
    writing(engine, reindex.record_version)
    engine.dispose()


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2),
    }


def _timed(call: Callable[[], Any]) -> list[float]:
    took = []
    for _ in range(TIMED):
        start = time.perf_counter()
        call()
        took.append(time.perf_counter() - start)
    return took


def _measure(url: str, words: list[str]) -> dict[str, dict[str, float]]:
    """Save and search latency of one owner with 10k memories, through the app."""
    settings = Settings(
        database_url=url, allowed_hosts="testserver", log_level="warning", embeddings="off"
    )
    app = create_app(settings)
    db = state_of(app).db
    secret, _ = writing(
        db.engine, lambda c: api_keys.create_key(c, OWNERS[0], ("mcp:read", "mcp:write"), "bench")
    )
    headers = {"Authorization": f"Bearer {secret}"}
    rng = random.Random(23)
    with TestClient(app) as client:

        def save() -> None:
            body = {"content": _sentence(rng, words)}
            assert client.post("/v1/memory", json=body, headers=headers).status_code == 201

        def search() -> None:
            q = " ".join(rng.choice(words[:400]) for _ in range(rng.randint(2, 3)))
            answer = client.get("/v1/memory/search", params={"q": q}, headers=headers)
            assert answer.status_code == 200

        for _ in range(20):  # warm the pools and caches
            search()
        found = {"save": _percentiles(_timed(save)), "search": _percentiles(_timed(search))}
    dispose(state_of(app))
    return found


def _cluster(shards: int) -> tuple[Path, str, list[str]]:
    directory = Path(tempfile.mkdtemp(prefix="mbb", dir="/tmp"))
    shutil.rmtree(directory)
    out = subprocess.run(
        [sys.executable, str(TOOL), "up", str(directory), "--shards", str(shards)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    head = out[-1].split("=", 1)[1]
    return directory, head, [line.split("=", 1)[1] for line in out if line.startswith("SHARD=")]


def main() -> int:
    words = _words()
    results: dict[str, Any] = {"per_owner": PER_OWNER, "owners": len(OWNERS), "timed": TIMED}
    for shards in (2, 3):
        directory, head, backends = _cluster(shards)
        try:
            plain = backends[0].rsplit("/", 1)[0] + "/mb_bench_plain"
            admin = sa.create_engine(backends[0].rsplit("/", 1)[0] + "/mysql")
            with admin.connect() as conn:
                conn.exec_driver_sql(
                    "CREATE DATABASE mb_bench_plain CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
            admin.dispose()
            engine = make_engine(plain, 2)
            migrate(engine)
            engine.dispose()
            engine = make_engine(head, 2)
            init_shards(engine, backends)
            engine.dispose()
            for name, url in (("one backend", plain), (f"head, {shards} backends", head)):
                started = time.perf_counter()
                _load(url, words)
                loaded = time.perf_counter() - started
                results[f"{shards}:{name}"] = {**_measure(url, words), "load_s": round(loaded, 1)}
                print(name, shards, results[f"{shards}:{name}"], flush=True)
        finally:
            subprocess.run([sys.executable, str(TOOL), "down", str(directory)], check=False)
            shutil.rmtree(directory, ignore_errors=True)
    for shards in (2, 3):
        one, head = results[f"{shards}:one backend"], results[f"{shards}:head, {shards} backends"]
        results[f"ratio at {shards} backends"] = {
            op: {p: round(head[op][p] / one[op][p], 2) for p in ("p50_ms", "p95_ms")}
            for op in ("save", "search")
        }
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
