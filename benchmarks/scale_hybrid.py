"""Hybrid search latency at scale next to lexical in the same run, and the save rate with
embeddings on as a ratio to /healthz (`python benchmarks/scale.py --hybrid` runs this).

Uses scale.py's loaded databases (LoCoMo turns; 10k memories per user, or `--per-user N`, in a
database of its own: `--sizes 100000 --per-user 100000` is one user with 100k memories). The
measured user's memories get real embeddings from the local model (`--model`, as
MEMORY_BANK_EMBEDDINGS spells it; content and context snippets, as the worker makes them);
every other user's vectors are random unit vectors written straight into memory_vector
(embedding 1M texts on this CPU takes hours, and a search reads only the searcher's vectors).
Then, over HTTP against real servers and interleaved query by query: lexical (mode=lexical),
hybrid with the per-worker matrix cache warm (the default size, which keeps the matrix searched
last even past its budget), and hybrid with the cache off (MEMORY_BANK_EMBEDDINGS_CACHE_MB=0: every
search loads the user's vectors, the cold case). Each server is used only once /metrics shows
no embedding pending (every memory has its vector). The query embedding alone is timed
in-process on the same questions, and the cache's memory per worker is the matrix's size and
the server's RSS growth.
"""

from __future__ import annotations

import argparse
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
from memory_bank.models.embeddings import DEFAULT_LOCAL, embed_text
from memory_bank.models.local_model import LocalProvider
from memory_bank.models.local_model import load as load_model
from memory_bank.store import documents, vectors
from memory_bank.store.schema import memory, memory_vector
from request_floor import BODY

# As MEMORY_BANK_EMBEDDINGS names it; `local` is DEFAULT_LOCAL.
MODEL = "local"
# The default MEMORY_BANK_EMBEDDINGS_CACHE_MB.
CACHE_MB = 256
# The matrix cache's bytes per row beyond the vector (the id and its bookkeeping).
ID_BYTES = 80
# scale.py's own number of memories per user (latency() changes scale.PER_USER).
PER_USER = scale.PER_USER


def provider_for(setting: str) -> LocalProvider:
    """The local model a MEMORY_BANK_EMBEDDINGS value names (`local` or `local:<name>`)."""
    name = setting.removeprefix("local").removeprefix(":") or DEFAULT_LOCAL
    return load_model(name)


def add_vectors(engine: sa.Engine, users: int, provider: LocalProvider) -> None:
    """Give every loaded user vectors of the local model (real ones for user 0)."""
    dim = provider.embed(["dimension"]).shape[1]
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
                    rows += [
                        _row(user, d.id, made[i].tobytes(), provider.model, dim)
                        for i, d in enumerate(docs)
                    ]
                    after = docs[-1].id
            _embedded.save()
        else:
            rng = np.random.default_rng(n)
            made = rng.standard_normal((len(ids), dim)).astype(np.float32)
            made /= np.linalg.norm(made, axis=1, keepdims=True)
            rows = [
                _row(user, mid, made[i].tobytes(), provider.model, dim) for i, mid in enumerate(ids)
            ]
        with engine.begin() as conn:
            conn.execute(sa.delete(memory_vector).where(memory_vector.c.user_id == user))
            for i in range(0, len(rows), 1000):
                conn.execute(sa.insert(memory_vector), rows[i : i + 1000])
            vectors.bump(conn, user)


# The measured user's real vectors, kept between runs and engines (the same texts on SQLite and
# MariaDB; embedding 10k memories takes minutes).
_embedded = common.EmbeddingCache()


def _row(user: str, mid: str, raw: bytes, model: str, dim: int) -> dict[str, Any]:
    """A memory_vector row as the worker writes it (plain: no master key here)."""
    import base64

    return {
        "user_id": user,
        "memory_id": mid,
        "model": model,
        "dim": dim,
        "vector": base64.b64encode(raw).decode(),
        "made_at": utcnow(),
    }


def http_search(base_url: str, key: str, mode: str) -> Any:
    """Search over HTTP in one mode, checking the mode that answered."""
    # A cold search loads every one of the user's vectors: seconds at 100k on a busy machine.
    client = httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=120
    )

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


def target(engine_name: str, total: int, per_user: int) -> scale.Target:
    """scale.py's database for this size, or, with another number of memories per user, one of
    its own (scale.py's loader marks what it loaded with the number per user)."""
    if per_user == PER_USER:
        return scale.target_for(engine_name, total, reset=False)
    name = f"scale-{total}-per-user-{per_user}"
    if engine_name == "sqlite":
        scale.CACHE.mkdir(exist_ok=True)
        return scale.Target("sqlite", f"sqlite:///{scale.CACHE / name}.db")
    return scale.Target("mariadb", common.create_database(f"mb_bench_{name.replace('-', '_')}"))


def wait_for_vectors(base_url: str, limit_s: float = 600) -> None:
    """Wait until the server's /metrics shows no memory waiting for its vector."""
    with httpx.Client(base_url=base_url, timeout=30) as client:
        locomo.wait_for_embeddings(client, limit_s)


def latency(
    engine_name: str,
    total: int,
    queries: list[str],
    n: int,
    model: str = MODEL,
    per_user: int = PER_USER,
    cold_queries: int = 100,
) -> dict[str, Any]:
    """p50/p95 of lexical, hybrid warm and hybrid cold at one size, plus the query embedding."""
    bodies, _ = scale.corpus(locomo.DEFAULT_DATA)
    if engine_name == "mariadb":
        # As scale.py does: past ~10M postings a bulk load crawls in the default 128 MB pool.
        common.size_buffer_pool(4096)
    # scale.py's loader reads the number per user from its module (and marks the database
    # with it, so a database loaded with another number is never taken for this one).
    scale.PER_USER = per_user
    where = target(engine_name, total, per_user)
    engine = scale.load(where, total, bodies)
    provider = provider_for(model)
    add_vectors(engine, total // per_user, provider)
    engine.dispose()
    dim = provider.embed(["dimension"]).shape[1]
    matrix_mb = per_user * (dim * 4 + ID_BYTES) / 1e6
    key = common.make_key(where.url, scale.user_name(0))
    env = {
        "MEMORY_BANK_EMBEDDINGS": model,
        "MEMORY_BANK_EMBEDDINGS_WORKER": "false",
        "MEMORY_BANK_METRICS_ENABLED": "true",
    }
    # Warm: the default cache keeps the matrix searched last, even one past its budget.
    warm_env = {**env, "MEMORY_BANK_EMBEDDINGS_CACHE_MB": str(CACHE_MB)}
    cold_env = {**env, "MEMORY_BANK_EMBEDDINGS_CACHE_MB": "0"}
    with (
        common.serve(where.url, env=warm_env) as warm,
        common.serve(where.url, env=cold_env) as cold,
    ):
        for server in (warm, cold):
            wait_for_vectors(server.base_url)
        before = rss_kb(warm.process.pid)
        fns = {
            "lexical": http_search(warm.base_url, key, "lexical"),
            "hybrid warm": http_search(warm.base_url, key, "hybrid"),
            "hybrid cold": http_search(cold.base_url, key, "hybrid"),
        }
        timed = scale.timed_together(fns, queries[:n], {"hybrid cold": min(n, cold_queries)})
        after = rss_kb(warm.process.pid)
    embed_ms = []
    for q in queries[:n]:
        start = time.perf_counter()
        provider.embed([q])
        embed_ms.append((time.perf_counter() - start) * 1000)
    return {
        "engine": engine_name,
        "memories": total,
        "per_user": per_user,
        "model": provider.model,
        "warm_cache_mb": int(warm_env["MEMORY_BANK_EMBEDDINGS_CACHE_MB"]),
        "latency_ms": {name: {"p50": p50, "p95": p95} for name, (p50, p95) in timed.items()},
        "query_embedding_ms": {
            "p50": common.percentile(embed_ms, 50),
            "p95": common.percentile(embed_ms, 95),
        },
        "cache_matrix_mb": matrix_mb,
        "server_rss_growth_mb": (after - before) / 1024,
        "machine_speed_ms": common.machine_speed(),
    }


def save_ratio(engine_name: str, embeddings: str, blocks: int, size: int) -> dict[str, Any]:
    """Sequential saves (two contexts) and /healthz per second, alternating blocks, one server
    (with its embedding worker running when embeddings are on); then, with embeddings on, the
    backlog left (/metrics) and how long the worker takes to drain it."""
    if engine_name == "sqlite":
        url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'save.db'}"
    else:
        url = common.create_database(f"mb_bench_hybrid_save_{embeddings}", drop=True)
    key = common.make_key(url, "bench-writer")
    saves = health = 0.0
    env = {"MEMORY_BANK_EMBEDDINGS": embeddings, "MEMORY_BANK_METRICS_ENABLED": "true"}
    pending: float | None = None
    drain_s: float | None = None
    with common.serve(url, env=env) as server:
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
            if embeddings != "off":
                pending = _pending(client)
                start = time.perf_counter()
                locomo.wait_for_embeddings(client)
                drain_s = time.perf_counter() - start
    n = blocks * size
    return {
        "engine": engine_name,
        "embeddings": embeddings,
        "saves_per_s": n / saves,
        "healthz_per_s": n / health,
        "ratio": (n / saves) / (n / health),
        "pending_at_end": pending,
        "drain_s": drain_s,
    }


def _pending(client: httpx.Client) -> float:
    """The embedding backlog the server's /metrics shows."""
    r = client.get("/metrics")
    r.raise_for_status()
    for line in r.text.splitlines():
        if line.startswith("memory_bank_embeddings_pending "):
            return float(line.split()[1])
    raise RuntimeError("no memory_bank_embeddings_pending in /metrics")


def main(argv: list[str] | None = None) -> int:
    """Measure and print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,mariadb")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--model", default=MODEL, help="MEMORY_BANK_EMBEDDINGS: local or local:<name>"
    )
    parser.add_argument("--per-user", type=int, default=PER_USER, help="memories per loaded user")
    parser.add_argument("--cold-queries", type=int, default=100, help="queries of the cold case")
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
                row = latency(
                    engine_name,
                    size,
                    questions,
                    args.queries,
                    args.model,
                    args.per_user,
                    args.cold_queries,
                )
                results["latency"].append(row)
                print(json.dumps(row), flush=True)
        if not args.skip_saves:
            for embeddings in ("off", args.model):
                row = save_ratio(engine_name, embeddings, 6, args.saves // 6)
                results["saves"].append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(
        "| engine | memories (per user) | model | lexical p50/p95 | hybrid warm p50/p95 | "
        "hybrid cold p50/p95 | query embedding p50/p95 | target: lexical p95 + embedding "
        "p95 + 10 |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for row in results["latency"]:
        lat = {**row["latency_ms"], "embedding": row["query_embedding_ms"]}
        cells = " | ".join(
            f"{lat[k]['p50']:.1f} / {lat[k]['p95']:.1f}"
            for k in ("lexical", "hybrid warm", "hybrid cold", "embedding")
        )
        bound = lat["lexical"]["p95"] + lat["embedding"]["p95"] + 10
        verdict = "met" if lat["hybrid warm"]["p95"] <= bound else "missed"
        print(
            f"| {row['engine']} | {row['memories']:,} ({row['per_user']:,}) | {row['model']} "
            f"| {cells} | {bound:.1f}: {verdict} |"
        )
    for row in results["saves"]:
        drained = (
            ""
            if row["drain_s"] is None
            else f", backlog {row['pending_at_end']:.0f} drained in {row['drain_s']:.1f} s"
        )
        print(
            f"{row['engine']} embeddings={row['embeddings']}: saves {row['saves_per_s']:.0f}/s, "
            f"/healthz {row['healthz_per_s']:.0f}/s, ratio {row['ratio']:.2f}{drained}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
