"""Latency through a Spider head over 2, 3 and 5 backends against a plain database, in one run.

    python benchmarks/spider.py [--per-owner 4000] [--calls 100] [--rounds 5] [--similar-hints off]

The layouts, and why they share one cluster: tools/spider_cluster.py brings up five backends and
one head, and every layout lives on those six servers, with their settings. The plain layout
(`plain`, no head) is a database of its own on backend 0, the app connected to it directly. The
2-, 3- and 5-backend layouts are a database each on the head, made a head by `shards init`
over backends 0-1, 0-2 and 0-4 (the same database name on each of those backends); Spider's
server names carry the head's database name (store/shards.py, name_backends), so the three
coexist on one head. One cluster rather than one per layout keeps every layout on the same
servers and lets them run interleaved: round after round, each layout in turn, so a change in
the machine's load (other jobs share its 2 cores) falls on all of them. The order is rotated
by one each round, so no layout always follows the same one. Each server's InnoDB buffer pool
is grown online to BUFFER_POOL_MB (the tool's 32 MB would leave backend 0, which holds the plain
layout and a share of every other, reading from disk where the others do not).

The data, the same in every layout: OWNERS owners, chosen by asking each head where it places
them (EXPLAIN PARTITIONS, as shards.find_probes does) so that every backend of every layout
holds at least one; each with --per-owner memories (synthetic sentences of a Zipf-skewed
made-up vocabulary), with the same ids and texts everywhere, written through the storage layer
as the API writes them. Each memory's vector is made once by the packaged MiniLM (kept in the
temporary directory between runs: on a busy 2-core machine embedding 20,000 texts takes 10-15
minutes, the rest of a run 5-10) and stored in every layout the embedding worker's way
(vectors.claim, then vectors.store).

The timing: an app per layout in this process (ASGI, no network), embeddings on with MiniLM and
its background worker off (so no embedding competes with the timed calls; a save or an edit
still queues its job, as in production). In each round each layout runs --calls of each
operation, the owners taking turns: save (POST /v1/memory), edit (PATCH of this round's saves,
new content), search lexical and hybrid (GET /v1/memory/search, 2-3 words), list
(GET /v1/memory), delete (DELETE of this round's saves: every round starts from the same data).
Besides each call's time, what each batch cost: the time this process, the head and the
layout's backends ran on a core (/proc/<pid>/stat, every thread they had, in clock ticks) and
the time their threads alive throughout waited, runnable, for one (per-thread schedstat; other
jobs share the cores); the cores the rest of the machine kept busy meanwhile (/proc/stat); and
the load average before each layout's turn. The CPU is what a layout costs whatever the load;
the wait is what the machine's contention adds.

Results: benchmarks/results/spider.json (spider-no-hints.json with --similar-hints off, which
tells what a save's hints cost); markdown tables on stdout (progress on stderr).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
from memory_bank.app import create_app, state_of
from memory_bank.domain import reindex, tag_index
from memory_bank.ids import new_id
from memory_bank.models.embeddings import embed_text
from memory_bank.models.local_model import load as load_model
from memory_bank.search.document import postings_of
from memory_bank.settings import Settings
from memory_bank.state import dispose
from memory_bank.store import api_keys, vectors
from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.memory_writes import insert_memory
from memory_bank.store.migrate import init_shards, migrate
from memory_bank.store.owners import Owner

TOOL = common.REPO / "tools" / "spider_cluster.py"
RESULTS = common.REPO / "benchmarks" / "results"
MODEL = "all-MiniLM-L6-v2"
BACKENDS = 5
# Layout name -> backends (0: the plain database on backend 0, no head).
LAYOUTS = {"plain": 0, "2 backends": 2, "3 backends": 3, "5 backends": 5}
# One owner on each backend of the widest layout.
OWNERS = BACKENDS
OPERATIONS = ("save", "edit", "search lexical", "search hybrid", "list", "delete")
BUFFER_POOL_MB = 256
CHUNK = 500
# How the tables write a ratio and a range (the docs' characters).
TIMES, DASH = "\u00d7", "\u2013"
# The loaded memories' creation times: the same in every layout.
LOADED_AT = datetime(2026, 11, 1)


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


def _query(rng: random.Random, words: list[str]) -> str:
    """2-3 of the 400 commonest words."""
    return " ".join(rng.choice(words[:400]) for _ in range(rng.randint(2, 3)))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the cluster and the layouts' databases -------------------------------------------------


@dataclass
class Server:
    """One of the cluster's mariadbd processes: its URL (no database) and pid."""

    url: str
    pid: int


def _cpu_seconds(pid: int) -> float:
    """Seconds a process has run on a core, user and system, every thread it ever had
    (/proc/<pid>/stat): a sum over the threads alive now loses the time of a thread that ended
    meanwhile (a pool's or a closed connection's), which once made a batch's CPU negative."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name may hold spaces: fields are counted after its closing parenthesis.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _waits(pid: int) -> dict[str, float]:
    """Seconds each thread of a process alive now has waited runnable for a core (schedstat)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread has just ended
        found[f"{pid}/{task.name}"] = int(fields[1]) / 1e9
    return found


def _machine_busy() -> float:
    """CPU seconds the whole machine has spent busy, every core and process (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class Cluster:
    """The head and the backends (servers), up under dir."""

    dir: Path
    head: Server
    backends: list[Server]


def _server(url: str) -> Server:
    """A server of the cluster, found by its URL (the pid from the file it names itself)."""
    base = url.rsplit("/", 1)[0]
    engine = sa.create_engine(base + "/mysql")
    with engine.connect() as conn:
        pid_file = str(conn.exec_driver_sql("SELECT @@pid_file").scalar())
    engine.dispose()
    return Server(base, int(Path(pid_file).read_text().strip()))


@contextmanager
def _cluster() -> Iterator[Cluster]:
    """BACKENDS backends and a head (tools/spider_cluster.py), stopped and removed at the end."""
    # Short: the servers' socket paths must fit in 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="mbb", dir="/tmp"))
    shutil.rmtree(directory)
    try:
        out = subprocess.run(
            [sys.executable, str(TOOL), "up", str(directory), "--shards", str(BACKENDS)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        shards = [line.split("=", 1)[1] for line in out if line.startswith("SHARD=")]
        head = next(line for line in out if line.startswith("MEMORY_BANK_DATABASE_URL="))
        yield Cluster(directory, _server(head.split("=", 1)[1]), [_server(u) for u in shards])
    finally:
        subprocess.run([sys.executable, str(TOOL), "down", str(directory)], check=False)
        shutil.rmtree(directory, ignore_errors=True)


def _admin(server: Server, *sql: str) -> None:
    """Run statements on a server as root."""
    engine = sa.create_engine(server.url + "/mysql")
    with engine.begin() as conn:
        for statement in sql:
            conn.exec_driver_sql(statement)
    engine.dispose()


def _database(backends: int) -> str:
    """A layout's database name, the same on the head and on its backends."""
    return f"mb_bench_spider{backends}" if backends else "mb_bench_plain"


def _make_layouts(cluster: Cluster) -> dict[str, str]:
    """Each layout's database made (a head made by `shards init`); layout -> the app's URL."""
    create = "CREATE DATABASE `{}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    pool = f"SET GLOBAL innodb_buffer_pool_size = {BUFFER_POOL_MB * 1024 * 1024}"
    for server in [cluster.head, *cluster.backends]:
        _admin(server, pool)
    urls = {}
    for name, count in LAYOUTS.items():
        database = _database(count)
        if count == 0:
            _admin(cluster.backends[0], create.format(database))
            urls[name] = f"{cluster.backends[0].url}/{database}"
            engine = make_engine(urls[name], 1)
            migrate(engine)
            engine.dispose()
            continue
        for backend in cluster.backends[:count]:
            _admin(backend, create.format(database))
        _admin(cluster.head, create.format(database))
        urls[name] = f"{cluster.head.url}/{database}"
        engine = make_engine(urls[name], 1)
        init_shards(engine, [f"{b.url}/{database}" for b in cluster.backends[:count]])
        engine.dispose()
    return urls


def _partitions(url: str, owners: list[str], backends: int) -> list[int]:
    """The backend a head places each owner on, asked of the head: partition k is on backend
    k mod n (shards init deals partitions out in turn; one per backend for an odd number)."""
    engine = make_engine(url, 1)
    found = []
    with engine.connect() as conn:
        # As shards.find_probes: without the group-by handler the plan names the partition.
        conn.exec_driver_sql("SET SESSION spider_disable_group_by_handler = ON")
        for owner in owners:
            row = (
                conn.execute(
                    sa.text("EXPLAIN PARTITIONS SELECT 1 FROM memory WHERE user_id = :k"),
                    {"k": owner},
                )
                .mappings()
                .one()
            )
            found.append(int(str(row["partitions"]).removeprefix("p")) % backends)
    engine.dispose()
    return found


def _choose_owners(urls: dict[str, str]) -> tuple[list[str], dict[str, list[int]]]:
    """OWNERS owner ids such that every backend of every head holds at least one, and where
    each layout places them."""
    candidates = [f"owner{n}@bench.example" for n in range(200)]
    heads = {name: n for name, n in LAYOUTS.items() if n}
    placed = {name: _partitions(urls[name], candidates, n) for name, n in heads.items()}
    widest = max(heads, key=lambda name: heads[name])
    assert heads[widest] == OWNERS
    groups = [[i for i, p in enumerate(placed[widest]) if p == k][:4] for k in range(heads[widest])]
    for combo in itertools.product(*groups):
        chosen = list(combo)
        if all({placed[name][i] for i in chosen} == set(range(n)) for name, n in heads.items()):
            where = {name: [placed[name][i] for i in chosen] for name in heads}
            return [candidates[i] for i in chosen], {"plain": [0] * OWNERS, **where}
    raise RuntimeError("no set of owners covers every backend of every layout")


# --- loading ---------------------------------------------------------------------------------


@dataclass
class Loaded:
    """The memories every layout gets: per owner, (id, text) pairs, and each id's vector."""

    memories: dict[str, list[tuple[str, str]]]
    vectors: dict[str, bytes]
    model: str
    dim: int


def _prepare(owners: list[str], per_owner: int, words: list[str], provider: Any) -> Loaded:
    """The memories' ids and texts, and their MiniLM vectors (embedded once, then cached)."""
    rng = random.Random(11)
    memories = {
        owner: [(new_id("mem"), _sentence(rng, words)) for _ in range(per_owner)]
        for owner in owners
    }
    cache = common.EmbeddingCache("mb-bench-spider")
    made: dict[str, bytes] = {}
    pairs = [pair for owner in owners for pair in memories[owner]]
    started = time.perf_counter()
    for start in range(0, len(pairs), 256):
        chunk = pairs[start : start + 256]
        rows = cache(provider, [embed_text(text, []) for _, text in chunk])
        made.update((mid, rows[i].tobytes()) for i, (mid, _) in enumerate(chunk))
        if start % 2560 == 0:
            _say(f"vectors: {start + len(chunk)} of {len(pairs)}")
    cache.save()
    _say(f"vectors ready in {time.perf_counter() - started:.0f} s")
    dim = len(next(iter(made.values()))) // 4
    return Loaded(memories, made, provider.model, dim)


def _load(url: str, loaded: Loaded) -> float:
    """Write the memories as the API would (each queueing its embedding), then store their
    vectors as the worker does; the seconds it took."""
    started = time.perf_counter()
    engine = make_engine(url, 2)
    db = Database(engine, queue_vectors=True)
    for owner, pairs in loaded.memories.items():
        who = Owner(owner, None, "bench")
        for start in range(0, len(pairs), CHUNK):

            def work(
                conn: sa.Connection, first: int = start, who: Owner = who, mine: Any = pairs
            ) -> None:
                for n, (mid, text) in enumerate(mine[first : first + CHUNK], first):
                    index = postings_of(text, ["bench"], [])
                    at = LOADED_AT + timedelta(seconds=n)
                    insert_memory(
                        conn, who, text, ["bench"], [], index, memory_id=mid, created_at=at
                    )

            writing(db.engine, work)
    # The postings and tag rows were made by this code: no rebuild when the app starts.
    writing(db.engine, reindex.record_version)
    writing(db.engine, tag_index.record_version)
    while True:
        taken = writing(db.engine, partial(vectors.claim, size=1000, lease_seconds=600))
        if not taken.jobs:
            break
        for owner in {job.user_id for job in taken.jobs}:
            done = [job for job in taken.jobs if job.user_id == owner]
            raw = {job.memory_id: loaded.vectors[job.memory_id] for job in done}
            writing(
                db.engine,
                partial(
                    vectors.store,
                    user_id=owner,
                    model=loaded.model,
                    vectors=raw,
                    dim=loaded.dim,
                    done=done,
                    token=taken.token,
                ),
            )
    db.dispose()
    return time.perf_counter() - started


# --- timing ----------------------------------------------------------------------------------


@dataclass
class Batch:
    """One operation's calls in one layout and round: each call's seconds; the seconds this
    process, the head and the layout's backends ran on a core (`cpu`) and waited runnable for
    one (`wait`) meanwhile; and the CPU seconds the whole machine was busy."""

    took: list[float]
    cpu: dict[str, float]
    wait: dict[str, float]
    machine: float


@dataclass
class Service:
    """A layout's app, its client and a key per owner."""

    app: Any
    client: TestClient
    headers: dict[str, dict[str, str]]
    owners: list[str]
    saved: list[tuple[str, str]] = field(default_factory=list)


def _service(url: str, owners: list[str], hints: bool) -> Service:
    """The app on a layout's database, with a key per owner (similar-memory hints on or off)."""
    settings = Settings(
        database_url=url,
        allowed_hosts="testserver",
        log_level="warning",
        embeddings=f"local:{MODEL}",
        embeddings_worker=False,
        # A hybrid search must not answer lexically because a loaded machine was slow to embed.
        embeddings_deadline_ms=10_000,
        similar_hints=hints,
    )
    app = create_app(settings)
    db = state_of(app).db
    headers = {}
    for owner in owners:
        secret, _ = writing(
            db.engine,
            lambda c, o=owner: api_keys.create_key(c, o, ("mcp:read", "mcp:write"), "bench"),
        )
        headers[owner] = {"Authorization": f"Bearer {secret}"}
    client = TestClient(app)
    client.__enter__()
    return Service(app, client, headers, owners)


def _calls(service: Service, words: list[str], seed: int) -> dict[str, Callable[[int], None]]:
    """One call of each operation, for call number i (owner i mod OWNERS)."""
    rng = random.Random(seed)
    client = service.client

    def who(i: int) -> dict[str, str]:
        return service.headers[service.owners[i % len(service.owners)]]

    def save(i: int) -> None:
        answer = client.post("/v1/memory", json={"content": _sentence(rng, words)}, headers=who(i))
        assert answer.status_code == 201, answer.text
        owner = service.owners[i % len(service.owners)]
        service.saved.append((answer.json()["memory"]["id"], owner))

    def edit(i: int) -> None:
        mid, owner = service.saved[i]
        body = {"content": _sentence(rng, words)}
        answer = client.patch(f"/v1/memory/{mid}", json=body, headers=service.headers[owner])
        assert answer.status_code == 200, answer.text

    def search(mode: str, i: int) -> None:
        params = {"q": _query(rng, words), "mode": mode}
        answer = client.get("/v1/memory/search", params=params, headers=who(i))
        assert answer.status_code == 200, answer.text
        assert answer.json()["mode"] == mode, answer.json()["mode"]

    def listing(i: int) -> None:
        assert client.get("/v1/memory", headers=who(i)).status_code == 200

    def delete(i: int) -> None:
        mid, owner = service.saved[i]
        answer = client.delete(f"/v1/memory/{mid}", headers=service.headers[owner])
        assert answer.status_code == 204, answer.text

    return {
        "save": save,
        "edit": edit,
        "search lexical": partial(search, "lexical"),
        "search hybrid": partial(search, "hybrid"),
        "list": listing,
        "delete": delete,
    }


def _batch(call: Callable[[int], None], count: int, cluster: Cluster, backends: int) -> Batch:
    """Time count calls, with what they cost this process, the head and the layout's backends
    (the plain layout's one server is backend 0) and the machine."""
    pids = {
        "app": [os.getpid()],
        "head": [cluster.head.pid] if backends else [],
        "backends": [s.pid for s in cluster.backends[: max(backends, 1)]],
    }

    def now() -> dict[str, tuple[float, dict[str, float]]]:
        return {
            k: (
                sum(_cpu_seconds(pid) for pid in v),
                {t: w for pid in v for t, w in _waits(pid).items()},
            )
            for k, v in pids.items()
        }

    before, busy = now(), _machine_busy()
    took = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        took.append(time.perf_counter() - start)
    machine = _machine_busy() - busy
    after = now()
    cpu = {k: after[k][0] - before[k][0] for k in pids}
    # Waits of the threads alive at both ends (a thread's own count is all there is to read).
    wait = {
        k: sum(w - before[k][1][t] for t, w in after[k][1].items() if t in before[k][1])
        for k in pids
    }
    return Batch(took, cpu, wait, machine)


def _round(
    service: Service, words: list[str], seed: int, count: int, cluster: Cluster, backends: int
) -> dict[str, Batch]:
    """Every operation's batch in one layout; the round's saves are edited, then deleted."""
    service.saved.clear()
    calls = _calls(service, words, seed)
    return {op: _batch(calls[op], count, cluster, backends) for op in OPERATIONS}


def _warm(service: Service, words: list[str]) -> None:
    """Each operation a few times per owner: pools open, every owner's vectors cached."""
    calls = _calls(service, words, 99)
    service.saved.clear()
    for op in OPERATIONS:
        for i in range(2 * len(service.owners)):
            calls[op](i)


# --- figures ---------------------------------------------------------------------------------


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _summary(batches: list[Batch]) -> dict[str, Any]:
    """p50, p95 and mean of the batches' calls; per call, the CPU and the wait for a core (ms)
    of each process and in all; and the cores other jobs kept busy meanwhile, on average."""
    took = [t for b in batches for t in b.took]
    calls, wall = len(took), sum(took)
    found: dict[str, Any] = {
        "p50_ms": _ms(common.percentile(took, 50)),
        "p95_ms": _ms(common.percentile(took, 95)),
        "mean_ms": _ms(wall / calls),
    }
    for kind in ("cpu", "wait"):
        spent = {k: sum(getattr(b, kind)[k] for b in batches) for k in batches[0].cpu}
        found[f"{kind}_ms"] = {k: _ms(v / calls) for k, v in spent.items()}
        found[f"{kind}_ms"]["total"] = _ms(sum(spent.values()) / calls)
    ours = sum(sum(b.cpu.values()) for b in batches)
    found["other_cores"] = round(max(sum(b.machine for b in batches) - ours, 0) / wall, 2)
    return found


def _figure(summary: dict[str, Any], key: str) -> float:
    """A summary's p50, p95 or CPU per call (ms)."""
    return float(summary["cpu_ms"]["total"] if key == "cpu" else summary[f"{key}_ms"])


def _figures(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each layout's latency over every round's calls, and each head's ratio to the plain
    layout: the median of the rounds' ratios (a round's head figure over the same round's plain
    one), with the lowest and the highest."""
    latency = {
        name: {op: _summary([r["batches"][name][op] for r in rounds]) for op in OPERATIONS}
        for name in LAYOUTS
    }
    ratios: dict[str, Any] = {}
    for name, count in LAYOUTS.items():
        if not count:
            continue
        ratios[name] = {}
        for op in OPERATIONS:
            row: dict[str, float] = {}
            for key in ("p50", "p95", "cpu"):
                each = [
                    _figure(r["summary"][name][op], key) / _figure(r["summary"]["plain"][op], key)
                    for r in rounds
                ]
                row[key] = round(statistics.median(each), 2)
                row[f"{key}_min"] = round(min(each), 2)
                row[f"{key}_max"] = round(max(each), 2)
            ratios[name][op] = row
    return {"latency": latency, "ratio": ratios}


def _table(title: str, columns: list[str], cell: Callable[[str, str], str]) -> list[str]:
    """A markdown table under its title: an operation a row, a layout a column."""
    lines = [title, "", "| operation | " + " | ".join(columns) + " |"]
    lines.append("|---|" + "---|" * len(columns))
    for op in OPERATIONS:
        lines.append(f"| {op} | " + " | ".join(cell(op, name) for name in columns) + " |")
    return lines


def _ratio(row: dict[str, float], key: str) -> str:
    """A ratio with the lowest and highest of the rounds: 1.25x (1.10-1.40), in the docs' signs."""
    return f"{row[key]:.2f}{TIMES} ({row[key + '_min']:.2f}{DASH}{row[key + '_max']:.2f})"


def _tables(results: dict[str, Any]) -> str:
    """The markdown tables: latency by layout, head ÷ plain with its spread, CPU per call."""
    latency, ratio = results["latency"], results["ratio"]

    def times(op: str, name: str) -> str:
        return f"{latency[name][op]['p50_ms']:.1f} / {latency[name][op]['p95_ms']:.1f}"

    def ratios(op: str, name: str) -> str:
        return " / ".join(_ratio(ratio[name][op], key) for key in ("p50", "p95", "cpu"))

    def costs(op: str, name: str) -> str:
        found = latency[name][op]
        cell = f"{found['mean_ms']:.1f} / {found['cpu_ms']['total']:.1f}"
        return cell + f" / {found['wait_ms']['total']:.1f}; {found['other_cores']:.2f}"

    layouts, heads = list(LAYOUTS), [name for name, n in LAYOUTS.items() if n]
    lines = _table("p50 / p95 (ms), over every round's calls:", layouts, times)
    ratio_title = (
        "head ÷ plain, p50 / p95 / CPU per call: the median of the rounds' ratios (lowest-highest):"
    )
    cost_title = (
        "per call, ms: mean time / CPU / waiting for a core (app, head and backends together); "
        "the cores other jobs kept busy meanwhile:"
    )
    lines += ["", *_table(ratio_title, heads, ratios), "", *_table(cost_title, layouts, costs)]
    return "\n".join(lines)


def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-owner", type=int, default=4000, help="memories per owner")
    parser.add_argument("--calls", type=int, default=100, help="calls per operation and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over every layout")
    parser.add_argument(
        "--similar-hints",
        choices=("on", "off"),
        default="on",
        help="a save's similar-memory hints (off: results in spider-no-hints.json)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "command": " ".join(["python benchmarks/spider.py", *(argv or sys.argv[1:])]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "load_average_start": _load_average(),
        "owners": OWNERS,
        "per_owner": args.per_owner,
        "calls": args.calls,
        "rounds": args.rounds,
        "similar_hints": args.similar_hints,
        "buffer_pool_mb": BUFFER_POOL_MB,
        "machine_speed_ms": round(common.machine_speed(), 1),
    }
    words = _words()
    services: dict[str, Service] = {}
    with _cluster() as cluster:
        try:
            urls = _make_layouts(cluster)
            owners, placed = _choose_owners(urls)
            results["owner_ids"] = owners
            results["owners_on_backend"] = placed
            _say(f"layouts made, owners chosen ({time.perf_counter() - started:.0f} s)")
            loaded = _prepare(owners, args.per_owner, words, load_model(MODEL))
            results["load_s"] = {}
            for name in LAYOUTS:
                results["load_s"][name] = round(_load(urls[name], loaded), 1)
                _say(f"{name}: loaded in {results['load_s'][name]} s")
                services[name] = _service(urls[name], owners, args.similar_hints == "on")
                semantic = state_of(services[name].app).semantic
                assert semantic is not None and semantic.model == loaded.model, loaded.model
                _warm(services[name], words)
            rounds: list[dict[str, Any]] = []
            names = list(LAYOUTS)
            for r in range(args.rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                done: dict[str, Any] = {"order": order, "load_average": {}, "batches": {}}
                for name in order:
                    done["load_average"][name] = _load_average()[0]
                    batches = _round(
                        services[name], words, 1000 + r, args.calls, cluster, LAYOUTS[name]
                    )
                    done["batches"][name] = batches
                    _say(f"round {r + 1}, {name} ({time.perf_counter() - started:.0f} s)")
                done["summary"] = {
                    name: {op: _summary([b]) for op, b in batches.items()}
                    for name, batches in done["batches"].items()
                }
                rounds.append(done)
        finally:
            for service in services.values():
                service.client.__exit__(None, None, None)
                dispose(state_of(service.app))
    results.update(_figures(rounds))
    results["rounds_detail"] = [{k: v for k, v in r.items() if k != "batches"} for r in rounds]
    results["load_average_end"] = _load_average()
    results["seconds"] = round(time.perf_counter() - started)
    out = RESULTS / ("spider.json" if args.similar_hints == "on" else "spider-no-hints.json")
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(_tables(results))
    print(
        f"\nload average (1, 5, 15 min) at start {results['load_average_start']}, "
        f"at end {results['load_average_end']}, on {results['cores']} cores; "
        f"{results['seconds']} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
