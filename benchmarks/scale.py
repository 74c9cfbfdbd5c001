"""Search latency as the table grows, ours vs OpenWork v0's global FULLTEXT, plus write speed.

Loads 10k memories per user (LoCoMo turns saved the way benchmarks/locomo.py saves them: content,
speaker and date tags, two neighbouring turns as contexts) up to each total size, straight through
the storage layer's tables with the same analyzer and posting code as the API (so the postings
are identical), and the same rows into OpenWork v0's table with one global full-text index
(MariaDB FULLTEXT; on SQLite an FTS5 table, its nearest equivalent). Then it times the searches
of a 10k-memory user over HTTP, at the storage layer, and with v0's SQL, and the write rate of
POST /v1/memory with two contexts from one sequential client. Loaded databases are kept (SQLite
files under .bench-cache/, MariaDB databases mb_bench_scale_*) and reused on the next run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo
from memory_bank.domain import reindex
from memory_bank.ids import new_id
from memory_bank.search import analyzer, document, index
from memory_bank.store.engine import make_engine, reading
from memory_bank.store.memories import get_memories
from memory_bank.store.postings import posting_rows
from memory_bank.store.schema import (
    memory,
    memory_context,
    memory_term,
    memory_user_stats,
    service_state,
)

PER_USER = 10_000
# Users below this number (the measured user among them) save every memory with two contexts, as
# the LoCoMo benchmark does; the bulk users beyond the first 100k memories save content and tags
# only, so 1M memories load in tens of minutes on a small shared machine. Either way each row is
# what the API would write for that save.
FULL_USERS = 10
CACHE = common.REPO / ".bench-cache"
MARKER = "bench_scale_loaded"
RESULTS = common.REPO / "benchmarks" / "results"


def _fingerprint() -> str:
    """What the postings depend on; a loaded database with another fingerprint is reloaded."""
    return (
        f"analyzer={analyzer.ANALYZER_VERSION};w={document.CONTENT_WEIGHT},"
        f"{document.TAG_WEIGHT},{document.CONTEXT_WEIGHT};per_user={PER_USER}"
    )


def corpus(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Memory bodies (one per LoCoMo turn) and the questions used as queries."""
    convs = locomo.load(path)
    bodies = [t.body for c in convs for t in c.turns]
    questions = [q for c in convs for q, _, _ in c.questions]
    return bodies, questions


def user_name(n: int) -> str:
    """The user id of the n-th loaded user."""
    return f"bench-user-{n:06d}"


# --- loading -----------------------------------------------------------------------------------


@dataclass
class Target:
    """One engine's benchmark database."""

    engine_name: str
    url: str


def loaded_rows(engine: sa.Engine) -> int:
    """How many memories an earlier run loaded (0 when none or made by other code)."""
    with engine.connect() as conn:
        raw = conn.execute(
            sa.select(service_state.c.value).where(service_state.c.name == MARKER)
        ).scalar()
    if raw is None:
        return 0
    info = json.loads(raw)
    return int(info["rows"]) if info.get("fingerprint") == _fingerprint() else -1


def _v0_setup(conn: sa.Connection) -> None:
    """Create OpenWork v0's table (MariaDB) or its FTS5 counterpart (SQLite)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(
            "CREATE VIRTUAL TABLE IF NOT EXISTS v0_fts USING fts5("
            "content, user_id UNINDEXED, id UNINDEXED, tokenize='porter unicode61')"
        )
    else:
        conn.exec_driver_sql(locomo.V0_TABLE.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))


_COUNTS: dict[int, Any] = {}


def _counts(i: int, body: dict[str, Any], contexts: bool) -> Any:
    """The index's weighted term counts of body i, computed once (the loader reuses bodies)."""
    key = i if contexts else -1 - i
    if key not in _COUNTS:
        snippets = [c["snippet"] for c in body.get("contexts", [])] if contexts else []
        _COUNTS[key] = document.postings_of(body["content"], body.get("tags", []), snippets)
    return _COUNTS[key]


def _insert(conn: sa.Connection, table: sa.Table, rows: list[tuple[Any, ...]]) -> None:
    """A plain DBAPI executemany of tuples in the table's column order (fast for bulk loads)."""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    sql = f"INSERT INTO {table.name} VALUES ({', '.join([mark] * len(table.columns))})"
    for i in range(0, len(rows), 5_000):
        conn.exec_driver_sql(sql, rows[i : i + 5_000])


def load_user(conn: sa.Connection, n: int, bodies: list[dict[str, Any]]) -> None:
    """Insert one user's memories, contexts, postings, statistics and v0 rows."""
    rng = random.Random(n)
    user = user_name(n)
    now = datetime.now(UTC).replace(tzinfo=None)
    stamp = now.isoformat(sep=" ", timespec="microseconds")
    mems: list[tuple[Any, ...]] = []
    ctxs: list[tuple[Any, ...]] = []
    posts: list[tuple[Any, ...]] = []
    v0: list[tuple[Any, ...]] = []
    total_len = 0
    full = n < FULL_USERS
    for _ in range(PER_USER):
        i = rng.randrange(len(bodies))
        body = bodies[i]
        mid = new_id("mem")
        tags = json.dumps(body.get("tags", []))
        mems.append(
            (mid, user, None, body["content"], tags, "benchmark", "user", stamp, stamp, None, 1)
        )
        for pos, c in enumerate(body.get("contexts", []) if full else []):
            ctxs.append(
                (new_id("mctx"), mid, user, pos, c["snippet"], c["conversation_id"],
                 c["message_id"], c["origin"], stamp)
            )  # fmt: skip
        # The same rows a save writes for this memory (posting_rows), as tuples.
        entry = _counts(i, body, full)
        posts.extend(
            (r["user_id"], r["term"], r["memory_id"], r["tf"], r["doc_len"])
            for r in posting_rows(user, mid, entry)
        )
        total_len += entry.length
        v0.append((mid, user, body["content"]))
    # Sorted by primary key: B-tree inserts then append instead of splitting pages at random.
    posts.sort(key=lambda r: (r[1], r[2]))
    _insert(conn, memory, mems)
    _insert(conn, memory_context, ctxs)
    _insert(conn, memory_term, posts)
    _insert(conn, memory_user_stats, [(user, PER_USER, total_len)])
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("INSERT INTO v0_fts (id, user_id, content) VALUES (?, ?, ?)", v0)
    else:
        conn.exec_driver_sql("INSERT INTO v0_memory VALUES (%s, %s, %s)", v0)


def load(target: Target, total: int, bodies: list[dict[str, Any]]) -> sa.Engine:
    """Make sure the database holds `total` memories (resuming an earlier load)."""
    engine = make_engine(target.url, pool_size=2)
    if sa.inspect(engine).has_table("service_state") and loaded_rows(engine) > 0:
        # The loader wrote the postings this code writes: tell prepare() they are current.
        with engine.begin() as conn:
            reindex.record_version(conn)
    reindex.prepare(engine)
    have = loaded_rows(engine)
    if have < 0:
        raise SystemExit(
            f"{target.url}: loaded by other analyzer/index code; delete it (--reset) and rerun"
        )
    users_have, users_want = have // PER_USER, total // PER_USER
    if users_have >= users_want:
        return engine
    with engine.begin() as conn:
        _v0_setup(conn)
    bar = tqdm(
        range(users_have, users_want), desc=f"load {target.engine_name} to {total:,}", unit="user"
    )
    for n in bar:
        with engine.begin() as conn:
            mysql = conn.dialect.name != "sqlite"
            if not mysql:
                conn.exec_driver_sql("PRAGMA cache_size = -262144")  # 256 MB page cache
            if mysql:
                # Consistent by construction; the checks only slow a bulk load down.
                conn.exec_driver_sql("SET foreign_key_checks = 0, unique_checks = 0")
            load_user(conn, n, bodies)
            marker = json.dumps({"rows": (n + 1) * PER_USER, "fingerprint": _fingerprint()})
            conn.execute(sa.delete(service_state).where(service_state.c.name == MARKER))
            conn.execute(sa.insert(service_state).values(name=MARKER, value=marker))
            if mysql:
                conn.exec_driver_sql("SET foreign_key_checks = 1, unique_checks = 1")
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "ANALYZE TABLE memory_term" if conn.dialect.name != "sqlite" else "ANALYZE"
        )
    return engine


# --- timing ------------------------------------------------------------------------------------


def timed_together(
    fns: dict[str, Callable[[str], object]], queries: list[str], caps: dict[str, int]
) -> dict[str, tuple[float, float]]:
    """p50/p95 of several strategies, interleaved query by query so that a busy machine slows
    them alike; caps[name] limits how many queries a slow strategy runs."""
    for q in queries[:5]:
        for fn in fns.values():
            fn(q)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for i, q in enumerate(queries):
        for name, fn in fns.items():
            if i >= caps.get(name, len(queries)):
                continue
            start = time.perf_counter()
            fn(q)
            samples[name].append((time.perf_counter() - start) * 1000)
    return {
        name: (common.percentile(v, 50), common.percentile(v, 95)) for name, v in samples.items()
    }


def storage_search(engine: sa.Engine, user: str) -> Callable[[str], object]:
    """Our search at the storage layer: ranked ids, then the memories with their contexts."""

    def run(q: str) -> object:
        with reading(engine) as conn:
            hits = index.search(conn, user, q, 10)
            return get_memories(conn, user, [m for m, _ in hits])

    return run


def _fts5_query(q: str) -> str:
    """A natural-language question as an FTS5 OR query (FULLTEXT natural mode is an OR)."""
    words = {w for w in re.findall(r"\w+", q.lower()) if w not in analyzer.STOP_WORDS}
    return " OR ".join(f'"{w}"' for w in sorted(words)) or '""'


def v0_search(engine: sa.Engine, user: str) -> Callable[[str], object]:
    """OpenWork v0's search: one global full-text index, then filter by user."""
    if engine.dialect.name == "sqlite":
        sql = (
            "SELECT id, bm25(v0_fts) AS s FROM v0_fts WHERE v0_fts MATCH ? AND user_id = ? "
            "ORDER BY s LIMIT 10"
        )

        def run_sqlite(q: str) -> object:
            with engine.connect() as conn:
                return conn.exec_driver_sql(sql, (_fts5_query(q), user)).all()

        return run_sqlite

    def run(q: str) -> object:
        with engine.connect() as conn:
            return conn.exec_driver_sql(locomo.V0_SEARCH, (q, user, q, 10)).all()

    return run


def http_search(base_url: str, key: str) -> Callable[[str], object]:
    """Our search over HTTP with a keep-alive client."""
    client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"})

    def run(q: str) -> object:
        r = client.get("/v1/memory/search", params={"q": q, "limit": 10})
        r.raise_for_status()
        return r.json()

    return run


def write_rate(url: str, bodies: list[dict[str, Any]], n: int) -> tuple[float, float]:
    """POST /v1/memory per second (two contexts each) from one sequential client: httpx, lean.

    Both clients take turns on the same server in blocks of n/5 saves, so both see the same
    minutes of this machine; httpx is the client of runs 1-6, the lean one (common.LeanClient)
    spends a third of httpx's CPU per request on the cores the server shares.
    """
    key = common.make_key(url, "bench-writer")
    with_ctx = [b for b in bodies if len(b.get("contexts", [])) == 2]
    block = max(1, n // 5)
    spent = {"httpx": 0.0, "lean": 0.0}
    done = 0
    with (
        common.serve(url) as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}
        ) as client,
    ):
        for body in with_ctx[:50]:
            client.post("/v1/memory", json=body).raise_for_status()
        while done < n:
            lean = common.LeanClient(server.base_url, key)
            start = time.perf_counter()
            for i in range(done, done + block):
                client.post("/v1/memory", json=with_ctx[i % len(with_ctx)]).raise_for_status()
            middle = time.perf_counter()
            for i in range(done, done + block):
                status = lean.post("/v1/memory", with_ctx[i % len(with_ctx)])
                assert status == 201, status
            spent["httpx"] += middle - start
            spent["lean"] += time.perf_counter() - middle
            lean.close()
            done += block
    return done / spent["httpx"], done / spent["lean"]


# --- main --------------------------------------------------------------------------------------


def target_for(engine_name: str, total: int, reset: bool) -> Target:
    """Where one engine's data of one size lives (one database per size, kept between runs)."""
    if engine_name == "sqlite":
        CACHE.mkdir(exist_ok=True)
        path = CACHE / f"scale-{total}.db"
        if reset:
            for p in CACHE.glob(f"scale-{total}.db*"):
                p.unlink()
        return Target("sqlite", f"sqlite:///{path}")
    return Target("mariadb", common.create_database(f"mb_bench_scale_{total}", drop=reset))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("MEMORY_BANK_LOCOMO", locomo.DEFAULT_DATA)),
        help="locomo-dev5.json (or MEMORY_BANK_LOCOMO)",
    )
    parser.add_argument(
        "--sizes", default="10000,100000,1000000", help="total memories to measure at"
    )
    parser.add_argument("--engines", default="mariadb,sqlite")
    parser.add_argument("--queries", type=int, default=300, help="searches per measurement")
    parser.add_argument(
        "--v0-queries", type=int, default=100, help="of those, how many v0 runs (it is slow)"
    )
    parser.add_argument("--writes", type=int, default=1000, help="POSTs for the write rate")
    parser.add_argument("--quick", action="store_true", help="small sizes, few queries")
    parser.add_argument("--load-only", action="store_true", help="load, do not measure")
    parser.add_argument("--reset", action="store_true", help="drop loaded data first")
    parser.add_argument(
        "--mariadb-driver",
        choices=["pymysql", "mysqldb"],
        default="pymysql",
        help="driver the server and the storage-layer timing use on MariaDB",
    )
    parser.add_argument("--buffer-pool-mb", type=int, default=6144, help="MariaDB buffer pool")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--plot",
        type=Path,
        default=common.REPO / "docs" / "benchmarks-scale.png",
        help="write the latency plot here (needs matplotlib; '' to skip)",
    )
    parser.add_argument(
        "--report",
        help="comma-separated --json files of earlier runs: print their table and plot, no runs",
    )
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="hybrid vs lexical search and the save rate with embeddings on "
        "(benchmarks/scale_hybrid.py; its own options follow --hybrid)",
    )
    if argv is None:
        argv = sys.argv[1:]
    if "--hybrid" in argv:
        import scale_hybrid

        return scale_hybrid.main([a for a in argv if a != "--hybrid"])
    args = parser.parse_args(argv)
    if args.report:
        saved = [r for f in args.report.split(",") for r in json.loads(Path(f).read_text())]
        print_table(saved)
        plot(saved, args.plot)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.queries, args.writes = [20_000, 50_000], 100, 300
    bodies, questions = corpus(args.data)
    rng = random.Random(7)
    queries = rng.sample(questions, min(args.queries, len(questions)))
    results: list[dict[str, Any]] = []
    for engine_name in args.engines.split(","):
        if engine_name == "mariadb":
            pool = common.size_buffer_pool(args.buffer_pool_mb)
            print(f"MariaDB innodb_buffer_pool_size = {pool} MB")
        for total in sizes:
            target = target_for(engine_name, total, args.reset)
            engine = load(target, total, bodies)
            if args.load_only:
                continue
            user = user_name(0)
            row: dict[str, Any] = {
                "engine": engine_name,
                "total": total,
                "machine_ms": common.machine_speed(),
            }
            key = common.make_key(target.url, user)
            # Loaded through PyMySQL; searched through the driver asked for.
            url = common.with_driver(target.url, args.mariadb_driver)
            if url != target.url:
                engine.dispose()
                engine = make_engine(url, pool_size=2)
                row["driver"] = args.mariadb_driver
            with common.serve(url) as server:
                row.update(
                    timed_together(
                        {
                            "storage": storage_search(engine, user),
                            "http": http_search(server.base_url, key),
                            "v0": v0_search(engine, user),
                        },
                        queries,
                        {"v0": args.v0_queries},
                    )
                )
            engine.dispose()
            results.append(row)
            _print_row(row)
        if not args.load_only:
            with tempfile.TemporaryDirectory() as tmp:
                url = (
                    f"sqlite:///{tmp}/write.db"
                    if engine_name == "sqlite"
                    else common.with_driver(
                        common.create_database("mb_bench_write", drop=True), args.mariadb_driver
                    )
                )
                rate, lean_rate = write_rate(url, bodies, args.writes)
            wrote: dict[str, Any] = {
                "engine": engine_name,
                "machine_ms": common.machine_speed(),
                "writes_per_s": rate,
                "writes_per_s_lean": lean_rate,
            }
            if engine_name == "mariadb":
                wrote["driver"] = args.mariadb_driver
            results.append(wrote)
            print(
                f"{engine_name}: POST /v1/memory with two contexts, one sequential client: "
                f"httpx {rate:.0f}/s, lean {lean_rate:.0f}/s (machine {wrote['machine_ms']:.0f} ms)"
            )
    if results:
        print()
        print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if str(args.plot) not in {"", "."} and any("total" in r for r in results):
        plot(results, args.plot)
        print(f"plot: {args.plot}")
    return 0


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """p95 search latency against total memories: ours (storage, HTTP) and v0, per engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, engine_name in zip(axes, ("mariadb", "sqlite"), strict=True):
        rows = sorted((r for r in results if r.get("engine") == engine_name and "total" in r),
                      key=lambda r: r["total"])  # fmt: skip
        totals = [r["total"] for r in rows]
        v0_name = "v0 FULLTEXT" if engine_name == "mariadb" else "global FTS5 (v0 design)"
        for key, label, style in (
            ("storage", "ours, storage layer", "o-"),
            ("http", "ours, over HTTP", "s-"),
            ("v0", v0_name, "^--"),
        ):
            ax.plot(totals, [r[key][1] for r in rows], style, label=f"{label} p95")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title("MariaDB" if engine_name == "mariadb" else "SQLite")
        ax.set_xlabel("memories in the database (10k-memory user searching)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("search latency p95 (ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _print_row(row: dict[str, Any]) -> None:
    """One measurement as it completes."""
    s, h, v = row["storage"], row["http"], row["v0"]
    print(
        f"{row['engine']} {row['total']:,}: storage p50/p95 {s[0]:.1f}/{s[1]:.1f} ms, "
        f"HTTP {h[0]:.1f}/{h[1]:.1f} ms, v0 {v[0]:.1f}/{v[1]:.1f} ms "
        f"(machine {row['machine_ms']:.0f} ms)",
        flush=True,
    )


def print_table(results: list[dict[str, Any]]) -> None:
    """The side-by-side table (milliseconds) and the write rates."""
    print(
        "| engine | total memories | storage p50 / p95 | HTTP p50 / p95 | v0 p50 / p95 "
        "| v0 p95 / ours p95 | machine |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        if "total" not in r:
            continue
        s, h, v = r["storage"], r["http"], r["v0"]
        print(
            f"| {_engine_label(r)} | {r['total']:,} | {s[0]:.1f} / {s[1]:.1f} "
            f"| {h[0]:.1f} / {h[1]:.1f} | {v[0]:.1f} / {v[1]:.1f} | {v[1] / s[1]:.1f}x "
            f"| {_machine(r)} |"
        )
    for r in results:
        if "writes_per_s" in r:
            lean = r.get("writes_per_s_lean")
            lean = f", lean client {lean:.0f}/s" if lean else ""
            print(
                f"{_engine_label(r)}: {r['writes_per_s']:.0f} writes/s (httpx){lean}; "
                f"machine {_machine(r)}"
            )


def _machine(row: dict[str, Any]) -> str:
    """The machine-speed probe of a row (common.machine_speed), or a dash for older runs."""
    return f"{row['machine_ms']:.0f} ms" if "machine_ms" in row else "—"


def _engine_label(row: dict[str, Any]) -> str:
    """The engine, with the MySQL driver when a row names one."""
    return f"{row['engine']} ({row['driver']})" if "driver" in row else row["engine"]


if __name__ == "__main__":
    sys.exit(main())
