"""Filtered list and search next to unfiltered, at 100k memories per user, on SQLite and MariaDB.

Loads users of 100k memories each (LoCoMo turns saved as benchmarks/locomo.py saves them: content,
speaker and date tags, two neighbouring turns as contexts) straight through the storage layer's
row builders, so postings and tag rows are what the API writes. Each memory also gets topic tags
drawn with Zipf weights (`deploy` on 11%, the rarest on 80 of 100k), a source (60%
claude-desktop, 30% cursor, 10% ci), a creation time spread over two years (ids made from it, as
a save makes them) and, for one in ten, a later edit time. Then, over HTTP against a real server,
query by query and interleaved: the list's first page and a lexical search (limit 10) with no
filter and with each filter below; `--hybrid` adds hybrid search (the local model embeds the
queries; the memories get random unit vectors, as in scale_hybrid.py). Loaded databases are kept
(.bench-cache/filters-*.db, mb_bench_filters) and reused.

    python benchmarks/filters.py [--engines sqlite,mariadb] [--queries 200] [--hybrid]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo
import scale
from memory_bank.domain import reindex, tag_index
from memory_bank.ids import _encode
from memory_bank.search.document import postings_of
from memory_bank.store import vectors
from memory_bank.store.engine import make_engine
from memory_bank.store.postings import posting_rows
from memory_bank.store.schema import (
    memory,
    memory_context,
    memory_tag,
    memory_term,
    memory_user_stats,
    memory_vector,
    service_state,
)
from memory_bank.store.sealing.data_keys import PLAIN
from memory_bank.store.tags import tag_rows

PER_USER = 100_000
DAYS = 730
TOPICS = 120
SOURCES = (("claude-desktop", 0.6), ("cursor", 0.3), ("ci", 0.1))
MARKER = "bench_filters_loaded"
CACHE = common.REPO / ".bench-cache"


def topic(rank: int) -> str:
    """The topic tag of a Zipf rank (0 is the commonest)."""
    return "deploy" if rank == 0 else f"topic-{rank:03d}"


def user_name(n: int) -> str:
    """The id of the n-th loaded user."""
    return f"filter-user-{n}"


def _id_at(rng: random.Random, when: datetime) -> str:
    """A memory id for a save at this time (48-bit milliseconds, 80 random bits)."""
    ms = int(when.replace(tzinfo=UTC).timestamp() * 1000)
    return f"mem_{_encode(ms, 10)}{_encode(rng.getrandbits(80) >> 1, 16)}"


def _insert(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Bulk insert in chunks."""
    for i in range(0, len(rows), 5_000):
        conn.execute(sa.insert(table), rows[i : i + 5_000])


def load_user(conn: sa.Connection, n: int, bodies: list[dict[str, Any]], now: datetime) -> None:
    """One user's 100k memories with contexts, postings, statistics and tag rows."""
    rng = random.Random(1000 + n)
    user = user_name(n)
    weights = [1 / (r + 1) for r in range(TOPICS)]
    norm = sum(weights)
    # Topic tags per memory: 0.6 on average; `deploy` (rank 0) lands on 11%, rank 119 on 0.08%.
    share = [0.6 * w / norm for w in weights]
    times = sorted(now - timedelta(seconds=rng.uniform(0, DAYS * 86400)) for _ in range(PER_USER))
    mems, ctxs, posts, tagged = [], [], [], []
    total_len = 0
    for pos, created in enumerate(tqdm(times, desc=f"rows of {user}", unit="memory", leave=False)):
        created = created.replace(microsecond=created.microsecond // 1000 * 1000)
        i = rng.randrange(len(bodies))
        body = bodies[i]
        mid = _id_at(rng, created)
        labels = list(body.get("tags", []))
        labels += [topic(r) for r in range(TOPICS) if rng.random() < share[r]]
        updated = created
        if rng.random() < 0.1:
            updated = created + (now - created) * rng.random()
            updated = updated.replace(microsecond=updated.microsecond // 1000 * 1000)
        source = rng.choices([s for s, _ in SOURCES], [w for _, w in SOURCES])[0]
        mems.append(
            {
                "id": mid,
                "user_id": user,
                "org_id": None,
                "content": body["content"],
                "tags": json.dumps(labels),
                "source": source,
                "scope": "user",
                "created_at": created,
                "updated_at": updated,
                "created_by": None,
                "revision": 1 if updated == created else 2,
            }
        )
        for p, c in enumerate(body.get("contexts", [])):
            ctxs.append(
                {
                    "id": f"mctx_{mid[4:14]}{pos:08d}{p:08d}",
                    "memory_id": mid,
                    "user_id": user,
                    "position": p,
                    "snippet": c["snippet"],
                    "conversation_id": c["conversation_id"],
                    "message_id": c["message_id"],
                    "origin": c["origin"],
                    "created_at": created,
                }
            )
        entry = postings_of(
            body["content"], labels, [c["snippet"] for c in body.get("contexts", [])]
        )
        posts += posting_rows(user, mid, entry)
        total_len += entry.length
        tagged += tag_rows(PLAIN, user, mid, created, labels)
    posts.sort(key=lambda r: (r["term"], r["memory_id"]))
    for table, rows in (
        (memory, mems),
        (memory_context, ctxs),
        (memory_term, posts),
        (memory_tag, tagged),
    ):
        _insert(conn, table, rows)
    conn.execute(
        sa.insert(memory_user_stats).values(user_id=user, doc_count=PER_USER, total_len=total_len)
    )


def target_for(
    engine_name: str, database: str = "mb_bench_filters", path: Path | None = None
) -> str:
    """The kept database of one engine: a MariaDB database of this name, or a SQLite file."""
    if engine_name == "sqlite":
        path = path or CACHE / "filters-100k.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    if database.startswith("mb_bench_"):
        return common.create_database(database)
    # Another name (several people measuring on one server keep their own data): created here,
    # as common.create_database would, since it only makes mb_bench_* databases.
    admin = sa.create_engine(common.MARIADB_ADMIN)
    with admin.begin() as conn:
        conn.exec_driver_sql(
            f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )
    admin.dispose()
    return str(sa.make_url(common.MARIADB_ADMIN).set(database=database).render_as_string(False))


def load(url: str, users: int, bodies: list[dict[str, Any]]) -> tuple[sa.Engine, datetime]:
    """Make sure the database holds `users` loaded users; the time the load took as now."""
    engine = make_engine(url, pool_size=2)
    reindex.prepare(engine)
    with engine.begin() as conn:
        raw = conn.execute(
            sa.select(service_state.c.value).where(service_state.c.name == MARKER)
        ).scalar()
    info = json.loads(raw) if raw else {"users": 0, "now": datetime.now(UTC).isoformat()}
    now = datetime.fromisoformat(info["now"]).replace(tzinfo=None)
    for n in range(info["users"], users):
        with engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("PRAGMA cache_size = -262144")
            else:
                conn.exec_driver_sql("SET foreign_key_checks = 0, unique_checks = 0")
            load_user(conn, n, bodies, now)
            info["users"] = n + 1
            conn.execute(sa.delete(service_state).where(service_state.c.name == MARKER))
            conn.execute(sa.insert(service_state).values(name=MARKER, value=json.dumps(info)))
            reindex.record_version(conn)
            tag_index.record_version(conn)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "ANALYZE TABLE memory, memory_term, memory_tag"
            if conn.dialect.name != "sqlite"
            else "ANALYZE"
        )
    return engine, now


def add_vectors(engine: sa.Engine, model: str, dim: int) -> None:
    """Random unit vectors of the model for the measured user's memories (a search reads only
    the searcher's vectors)."""
    import numpy as np

    for n in range(1):
        user = user_name(n)
        with engine.connect() as conn:
            if vectors.models(conn, user).get(model, 0) >= PER_USER:
                continue
            ids = list(
                conn.execute(sa.select(memory.c.id).where(memory.c.user_id == user)).scalars()
            )
        made = np.random.default_rng(n).standard_normal((len(ids), dim)).astype(np.float32)
        made /= np.linalg.norm(made, axis=1, keepdims=True)
        stamp = datetime.now(UTC).replace(tzinfo=None)
        rows = [
            {
                "user_id": user,
                "memory_id": mid,
                "model": model,
                "dim": dim,
                "vector": base64.b64encode(made[i].tobytes()).decode(),
                "made_at": stamp,
            }
            for i, mid in enumerate(ids)
        ]
        with engine.begin() as conn:
            conn.execute(sa.delete(memory_vector).where(memory_vector.c.user_id == user))
            _insert(conn, memory_vector, rows)
            vectors.bump(conn, user)


def filters(now: datetime) -> dict[str, dict[str, Any]]:
    """The filters measured, by name (query parameters)."""
    day = timedelta(days=1)

    def at(delta: timedelta) -> str:
        return (now - delta).strftime("%Y-%m-%dT%H:%M:%SZ")

    return {
        "none": {},
        "tag (11%)": {"tag": "deploy"},
        "rare tag (0.08%)": {"tag": topic(TOPICS - 1)},
        "two tags (0.6%)": {"tag": ["deploy", topic(1)]},
        "created, last 7 days": {"created_after": at(7 * day)},
        "created, a month a year ago": {
            "created_after": at(395 * day),
            "created_before": at(365 * day),
        },
        "created, last year": {"created_after": at(365 * day)},
        "updated, last 30 days": {"updated_after": at(30 * day)},
        "source (10%)": {"source": "ci"},
        "tag + source + created": {
            "tag": "deploy",
            "source": "cursor",
            "created_after": at(180 * day),
        },
    }


def client_call(
    base_url: str, key: str, path: str, params: dict[str, Any], mode: str | None
) -> Callable[[str], object]:
    """One timed request per query (the query is ignored by the listing)."""
    # A long timeout: the first hybrid search loads the user's 100k vectors into the cache.
    client = httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=300
    )

    def run(q: str) -> object:
        extra = {"q": q, "limit": 10} if path.endswith("search") else {"limit": 20}
        if mode:
            extra["mode"] = mode
        r = client.get(path, params={**params, **extra})
        r.raise_for_status()
        body = r.json()
        if mode:
            assert body["mode"] == mode, body["mode"]
        return body

    return run


def measure(
    engine_name: str,
    url: str,
    users: int,
    queries: list[str],
    hybrid: bool,
    only: list[str] | None = None,
) -> list[dict[str, Any]]:
    """p50/p95 of every filter (or of `only` and no filter) for list and search on one engine."""
    bodies, _ = scale.corpus(locomo.DEFAULT_DATA)
    if engine_name == "mariadb":
        common.size_buffer_pool(6144)
    engine, now = load(url, users, bodies)
    env: dict[str, str] = {}
    if hybrid:
        from memory_bank.models.embeddings import DEFAULT_LOCAL
        from memory_bank.models.local_model import load as load_model

        model = load_model(DEFAULT_LOCAL).model
        add_vectors(engine, model, 768)
        env = {
            "MEMORY_BANK_EMBEDDINGS": "local",
            "MEMORY_BANK_EMBEDDINGS_WORKER": "false",
            "MEMORY_BANK_EMBEDDINGS_CACHE_MB": "1024",
        }
    engine.dispose()
    key = common.make_key(url, user_name(0))
    kinds = ["list", "lexical", *(["hybrid"] if hybrid else [])]
    chosen = {
        name: params
        for name, params in filters(now).items()
        if only is None or name == "none" or name in only
    }
    rows = []
    with common.serve(url, env=env) as server:
        # Every filter and kind in one block, interleaved query by query: this machine's speed
        # drifts by 2x within minutes, so only side-by-side timings compare.
        fns = {}
        for name, params in chosen.items():
            for kind in kinds:
                path = "/v1/memory" if kind == "list" else "/v1/memory/search"
                mode = None if kind == "list" else kind
                fns[(name, kind)] = client_call(server.base_url, key, path, params, mode)
        # The listing runs for every query as well (it used to stop at 100): its page takes
        # about 10 ms, and over 100 samples its p95 (the fifth slowest) swung from run to run
        # (the two-tag ratio read 1.10 and 1.53 in two runs of one build on MariaDB).
        timed = scale.timed_together({f"{n}|{k}": fn for (n, k), fn in fns.items()}, queries, {})
        for name, params in chosen.items():
            returned = {
                kind: len(
                    fns[(name, kind)](queries[0])["memories" if kind == "list" else "results"]
                )
                for kind in kinds
            }
            row = {
                "engine": engine_name,
                "filter": name,
                "params": params,
                "latency_ms": {
                    kind: dict(zip(("p50", "p95"), timed[f"{name}|{kind}"], strict=True))
                    for kind in kinds
                },
                "returned": returned,
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    machine = common.machine_speed()
    for row in rows:
        row["machine_ms"] = machine
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    """p50 / p95 per filter and kind, and the p95 ratio to the same engine's unfiltered."""
    kinds = [k for k in ("list", "lexical", "hybrid") if k in rows[0]["latency_ms"]]
    head = " | ".join(f"{k} p50 / p95 (p95 / none)" for k in kinds)
    print(f"| engine | filter | {head} |")
    print("|---|---|" + "---:|" * len(kinds))
    base = {r["engine"]: r["latency_ms"] for r in rows if r["filter"] == "none"}
    for r in rows:
        cells = []
        for k in kinds:
            lat, ref = r["latency_ms"][k], base[r["engine"]][k]
            cells.append(f"{lat['p50']:.1f} / {lat['p95']:.1f} ({lat['p95'] / ref['p95']:.2f})")
        print(f"| {r['engine']} | {r['filter']} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    """Load, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,mariadb")
    parser.add_argument("--users", type=int, default=2, help="users of 100k memories")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--hybrid", action="store_true", help="also hybrid search")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--mariadb-database", default="mb_bench_filters", help="the kept MariaDB database"
    )
    parser.add_argument("--sqlite-path", type=Path, help="the kept SQLite file")
    parser.add_argument(
        "--only", help="comma-separated filter names to measure (with no filter), else all"
    )
    parser.add_argument("--report", type=Path, help="print the table of an earlier --json")
    args = parser.parse_args(argv)
    if args.report:
        print_table(json.loads(args.report.read_text()))
        return 0
    _, questions = scale.corpus(locomo.DEFAULT_DATA)
    queries = random.Random(7).sample(questions, min(args.queries, len(questions)))
    rows: list[dict[str, Any]] = []
    only = args.only.split(",") if args.only else None
    for engine_name in args.engines.split(","):
        url = target_for(engine_name, args.mariadb_database, args.sqlite_path)
        if args.load_only:
            if engine_name == "mariadb":
                common.size_buffer_pool(6144)
            bodies, _ = scale.corpus(locomo.DEFAULT_DATA)
            load(url, args.users, bodies)[0].dispose()
            continue
        rows += measure(engine_name, url, args.users, queries, args.hybrid, only)
    if args.json and rows:
        args.json.write_text(json.dumps(rows, indent=2))
    if rows:
        print_table(rows)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MEMORY_BANK_LOG_LEVEL", "warning")
    sys.exit(main())
