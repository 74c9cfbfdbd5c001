"""Hybrid search latency at scale next to lexical in the same run, and the save rate with
embeddings on as a ratio to /healthz (`python benchmarks/scale.py --hybrid` runs this).

Uses scale.py's loaded databases (10k memories per user, LoCoMo turns). The measured user's
10k memories get real embeddings from the local model (content and context snippets, as the
worker makes them); every other user's vectors are random unit vectors written straight into
memory_vector (embedding 1M texts on this CPU takes hours, and a search reads only the
searcher's vectors). Then, over HTTP against real servers and interleaved query by query:
lexical (mode=lexical), hybrid with the per-worker matrix cache warm, and hybrid with the cache
off (MEMORY_BANK_EMBEDDINGS_CACHE_MB=0: every search loads the user's 10k vectors, the cold
case). The query embedding alone is timed in-process on the same questions, and the cache's
memory per worker is the matrix's size and the server's RSS growth.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import sqlalchemy as sa
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo
import scale
from memory_bank.ids import utcnow
from memory_bank.search.embeddings import DEFAULT_LOCAL, embed_text
from memory_bank.search.local_model import load as load_model
from memory_bank.store import documents, vectors
from memory_bank.store.schema import memory, memory_vector
from request_floor import BODY

MODEL = DEFAULT_LOCAL  # what MEMORY_BANK_EMBEDDINGS=local runs
DIM = 768


def add_vectors(engine: sa.Engine, users: int) -> None:
    """Give every loaded user vectors of the local model (real ones for user 0)."""
    provider = load_model(MODEL)
    for n in tqdm(range(users), desc="vectors", unit="user"):
        user = scale.user_name(n)
        with engine.connect() as conn:
            have = vectors.models(conn, user).get(provider.model, 0)
            ids = list(
                conn.execute(sa.select(memory.c.id).where(memory.c.user_id == user)).scalars()
            )
        if have >= len(ids):
            continue
        rows: list[dict[str, Any]] = []
        if n == 0:
            after = ""
            with engine.connect() as conn:
                while docs := documents.documents(conn, user, after, 32):
                    texts = [embed_text(d.content, d.snippets) for d in docs]
                    made = _embedded(provider, texts)
                    rows += [_row(user, d.id, made[i].tobytes()) for i, d in enumerate(docs)]
                    after = docs[-1].id
            _embedded.save()
        else:
            rng = np.random.default_rng(n)
            made = rng.standard_normal((len(ids), DIM)).astype(np.float32)
            made /= np.linalg.norm(made, axis=1, keepdims=True)
            rows = [_row(user, mid, made[i].tobytes()) for i, mid in enumerate(ids)]
        with engine.begin() as conn:
            conn.execute(sa.delete(memory_vector).where(memory_vector.c.user_id == user))
            for i in range(0, len(rows), 1000):
                conn.execute(sa.insert(memory_vector), rows[i : i + 1000])
            vectors.bump(conn, user)


class _Embedded:
    """The measured user's real vectors, kept in a file between runs and engines (the same
    texts on SQLite and MariaDB; embedding 10k memories takes minutes)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.known: dict[str, np.ndarray] = {}

    def __call__(self, provider: Any, texts: list[str]) -> np.ndarray:
        path = Path(tempfile.gettempdir()) / f"mb-bench-{provider.model.replace(':', '-')}.npz"
        if self.path != path:
            self.path = path
            self.known = dict(np.load(path)) if path.exists() else {}
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self.known]
        if missing:
            made = provider.embed([texts[i] for i in missing])
            for row, i in enumerate(missing):
                self.known[keys[i]] = made[row]
        return np.vstack([self.known[k] for k in keys])

    def save(self) -> None:
        if self.path is not None:
            np.savez(self.path, **self.known)


_embedded = _Embedded()


def _row(user: str, mid: str, raw: bytes) -> dict[str, Any]:
    """A memory_vector row as the worker writes it (plain: no master key here)."""
    import base64

    model = load_model(MODEL).model
    return {
        "user_id": user,
        "memory_id": mid,
        "model": model,
        "dim": DIM,
        "vector": base64.b64encode(raw).decode(),
        "made_at": utcnow(),
    }


def http_search(base_url: str, key: str, mode: str) -> Any:
    """Search over HTTP in one mode, checking the mode that answered."""
    client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"})

    def run(q: str) -> object:
        r = client.get("/v1/memory/search", params={"q": q, "limit": 10, "mode": mode})
        r.raise_for_status()
        assert r.json()["mode"] == mode, r.json()["mode"]
        return r.json()

    return run


def rss_kb(pid: int) -> int:
    """Resident memory of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def latency(engine_name: str, total: int, queries: list[str], n: int) -> dict[str, Any]:
    """p50/p95 of lexical, hybrid warm and hybrid cold at one size, plus the query embedding."""
    bodies, _ = scale.corpus(locomo.DEFAULT_DATA)
    if engine_name == "mariadb":
        # As scale.py does: past ~10M postings a bulk load crawls in the default 128 MB pool.
        common.size_buffer_pool(4096)
    target = scale.target_for(engine_name, total, reset=False)
    engine = scale.load(target, total, bodies)
    add_vectors(engine, total // scale.PER_USER)
    engine.dispose()
    key = common.make_key(target.url, scale.user_name(0))
    env = {"MEMORY_BANK_EMBEDDINGS": "local", "MEMORY_BANK_EMBEDDINGS_WORKER": "false"}
    cold_env = {**env, "MEMORY_BANK_EMBEDDINGS_CACHE_MB": "0"}
    with common.serve(target.url, env=env) as warm, common.serve(target.url, env=cold_env) as cold:
        before = rss_kb(warm.process.pid)
        fns = {
            "lexical": http_search(warm.base_url, key, "lexical"),
            "hybrid warm": http_search(warm.base_url, key, "hybrid"),
            "hybrid cold": http_search(cold.base_url, key, "hybrid"),
        }
        timed = scale.timed_together(fns, queries[:n], {"hybrid cold": min(n, 100)})
        after = rss_kb(warm.process.pid)
    provider = load_model(MODEL)
    embed_ms = []
    for q in queries[:n]:
        start = time.perf_counter()
        provider.embed([q])
        embed_ms.append((time.perf_counter() - start) * 1000)
    return {
        "engine": engine_name,
        "memories": total,
        "latency_ms": {name: {"p50": p50, "p95": p95} for name, (p50, p95) in timed.items()},
        "query_embedding_ms": {
            "p50": common.percentile(embed_ms, 50),
            "p95": common.percentile(embed_ms, 95),
        },
        "cache_matrix_mb": (10_000 * DIM * 4 + 10_000 * 80) / 1e6,
        "server_rss_growth_mb": (after - before) / 1024,
        "machine_speed_ms": common.machine_speed(),
    }


def save_ratio(engine_name: str, embeddings: str, blocks: int, size: int) -> dict[str, Any]:
    """Sequential saves (two contexts) and /healthz per second, alternating blocks, one server
    (with its embedding worker running when embeddings are on)."""
    if engine_name == "sqlite":
        url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'save.db'}"
    else:
        url = common.create_database(f"mb_bench_hybrid_save_{embeddings}", drop=True)
    key = common.make_key(url, "bench-writer")
    saves = health = 0.0
    with common.serve(url, env={"MEMORY_BANK_EMBEDDINGS": embeddings}) as server:
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers) as client:
            for _ in range(30):
                client.post("/v1/memory", json=BODY).raise_for_status()
                client.get("/healthz").raise_for_status()
            for _ in range(blocks):
                start = time.perf_counter()
                for _ in range(size):
                    client.post("/v1/memory", json=BODY).raise_for_status()
                middle = time.perf_counter()
                for _ in range(size):
                    client.get("/healthz").raise_for_status()
                saves += middle - start
                health += time.perf_counter() - middle
            pending = client.get("/readyz").json().get("embeddings_pending")
    n = blocks * size
    return {
        "engine": engine_name,
        "embeddings": embeddings,
        "saves_per_s": n / saves,
        "healthz_per_s": n / health,
        "ratio": (n / saves) / (n / health),
        "pending_at_end": pending,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure and print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,mariadb")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--saves", type=int, default=600, help="saves per side, in 6 blocks")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-saves", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    _, questions = scale.corpus(locomo.DEFAULT_DATA)
    random.Random(7).shuffle(questions)
    results: dict[str, list[dict[str, Any]]] = {"latency": [], "saves": []}
    for engine_name in args.engines.split(","):
        if not args.skip_latency:
            for size in (int(s) for s in args.sizes.split(",")):
                row = latency(engine_name, size, questions, args.queries)
                results["latency"].append(row)
                print(json.dumps(row), flush=True)
        if not args.skip_saves:
            for embeddings in ("off", "local"):
                row = save_ratio(engine_name, embeddings, 6, args.saves // 6)
                results["saves"].append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print("| engine | memories | lexical p50/p95 | hybrid warm p50/p95 | hybrid cold p50/p95 |")
    print("|---|---:|---:|---:|---:|")
    for row in results["latency"]:
        lat = row["latency_ms"]
        cells = " | ".join(
            f"{lat[k]['p50']:.1f} / {lat[k]['p95']:.1f}"
            for k in ("lexical", "hybrid warm", "hybrid cold")
        )
        print(f"| {row['engine']} | {row['memories']:,} | {cells} |")
    for row in results["saves"]:
        print(
            f"{row['engine']} embeddings={row['embeddings']}: saves {row['saves_per_s']:.0f}/s, "
            f"/healthz {row['healthz_per_s']:.0f}/s, ratio {row['ratio']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
