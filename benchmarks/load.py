"""Concurrent load on a real memory-bank server: saves, searches, lists and deletes, then
checks that nothing was lost, duplicated or orphaned.

    python benchmarks/load.py [--seconds 30] [--clients 16] [--workers 2] [--database-url URL]

Without --database-url it runs on a fresh SQLite file and on MariaDB (127.0.0.1:3306, a
throw-away database). Requests go to 127.0.0.1 only and every loop stops by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import sqlalchemy as sa

from common import start_server
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import migrate
from memory_bank.store.schema import memory, memory_context, memory_term, memory_user_stats

WORDS = [
    *("acme", "vendor", "pricing", "tabs", "spaces", "python", "deploy", "friday", "coffee"),
    *("meeting", "budget", "travel", "berlin", "invoice", "design", "review", "garden"),
    *("piano", "recipe", "hiking"),
]
MARIADB_ADMIN = os.environ.get(
    "MEMORY_BANK_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
)


def make_keys(database_url: str, users: int) -> dict[str, str]:
    """user -> API key, created straight in the database (migrated first)."""
    engine = make_engine(database_url, pool_size=2)
    migrate(engine)
    found = {}
    for i in range(users):
        user = f"load-user-{i}"
        secret, _ = writing(
            engine,
            lambda conn, u=user: api_keys.create_key(conn, u, ("mcp:read", "mcp:write"), "load"),
        )
        found[user] = secret
    engine.dispose()
    return found


@dataclass
class Tally:
    """What the clients saw."""

    statuses: Counter[str] = field(default_factory=Counter)
    created: dict[str, list[str]] = field(default_factory=dict)
    deleted: dict[str, list[str]] = field(default_factory=dict)
    # Deletes answered 503 or never answered: done or not, nobody knows. A write whose COMMIT
    # reached the database just as it went away may have taken effect (any database client
    # has this window), so the checks below allow for exactly these.
    uncertain: list[str] = field(default_factory=list)
    # Per user, saves answered 503 or never answered: each may or may not be stored.
    unanswered_saves: Counter[str] = field(default_factory=Counter)
    # Filled in by verify(): how many of those writes turned out to have taken effect.
    took_effect_unanswered: int = 0
    server_errors: list[str] = field(default_factory=list)
    transport_errors: list[str] = field(default_factory=list)
    slowest: float = 0.0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, op: str, response: httpx.Response | None, elapsed: float) -> None:
        """Count one answer."""
        with self.lock:
            self.requests += 1
            self.slowest = max(self.slowest, elapsed)
            if response is None:
                return
            self.statuses[f"{op} {response.status_code}"] += 1
            if response.status_code >= 500:
                self.server_errors.append(f"{op} {response.status_code} {response.text[:300]}")


def client_loop(
    base_url: str,
    user: str,
    key: str,
    tally: Tally,
    stop_at: float,
    max_requests: int,
    seed: int,
    on_response: Callable[[str, httpx.Response], None] | None = None,
) -> None:
    """One client: a bounded mix of saves, searches, lists and deletes as one user."""
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {key}"}
    mine: list[str] = []
    failures_in_a_row = 0
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        for _ in range(max_requests):
            # A server that is gone for good (killed) ends the client rather than spin.
            if time.monotonic() >= stop_at or failures_in_a_row >= 20:
                break
            roll = rng.random()
            started = time.monotonic()
            response: httpx.Response | None = None
            op = "other"
            try:
                if roll < 0.4 or not mine:
                    op = "save"
                    words = " ".join(rng.choice(WORDS) for _ in range(8))
                    body = {
                        "content": f"{user} remembers {words}",
                        "tags": [rng.choice(WORDS)],
                        "contexts": [
                            {"snippet": f"said {words}", "conversation_id": "c1"},
                            {"snippet": "second context", "origin": "active_conversation"},
                        ],
                    }
                    response = http.post("/v1/memory", json=body)
                    if response.status_code == 201:
                        mid = response.json()["memory"]["id"]
                        mine.append(mid)
                        with tally.lock:
                            tally.created.setdefault(user, []).append(mid)
                    elif response.status_code == 503:
                        with tally.lock:
                            tally.unanswered_saves[user] += 1
                elif roll < 0.65:
                    op = "search"
                    response = http.get("/v1/memory/search", params={"q": rng.choice(WORDS)})
                elif roll < 0.85:
                    op = "list"
                    response = http.get("/v1/memory", params={"limit": 20})
                else:
                    op = "delete"
                    mid = mine.pop(rng.randrange(len(mine)))
                    response = http.delete(f"/v1/memory/{mid}")
                    if response.status_code == 204:
                        with tally.lock:
                            tally.deleted.setdefault(user, []).append(mid)
                    elif response.status_code != 404:
                        mine.append(mid)  # not known to be gone: keep checking it later
                        if response.status_code == 503:
                            with tally.lock:
                                tally.uncertain.append(mid)
            except httpx.HTTPError as exc:
                with tally.lock:
                    tally.transport_errors.append(f"{op}: {type(exc).__name__}")
                    if op == "delete":
                        tally.uncertain.append(mid)
                    elif op == "save":
                        tally.unanswered_saves[user] += 1
                failures_in_a_row += 1
                time.sleep(0.05)
            else:
                failures_in_a_row = 0
            tally.record(op, response, time.monotonic() - started)
            if on_response is not None and response is not None:
                on_response(op, response)


def run_load(
    base_url: str,
    user_keys: dict[str, str],
    clients: int,
    seconds: float,
    max_requests: int = 100_000,
    on_response: Callable[[str, httpx.Response], None] | None = None,
) -> Tally:
    """Run the clients (spread over the users) until the time or request budget ends."""
    tally = Tally()
    stop_at = time.monotonic() + seconds
    users = list(user_keys)
    threads = [
        threading.Thread(
            target=client_loop,
            args=(base_url, users[i % len(users)], user_keys[users[i % len(users)]], tally),
            kwargs={
                "stop_at": stop_at,
                "max_requests": max_requests,
                "seed": i,
                "on_response": on_response,
            },
            daemon=True,
        )
        for i in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    return tally


def listed_ids(base_url: str, key: str) -> list[str]:
    """Every memory id a user can list, walking the cursor to the end."""
    found: list[str] = []
    cursor = None
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as http:
        for _ in range(10_000):
            params: dict[str, Any] = {"limit": 100}
            if cursor:
                params["cursor"] = cursor
            page = http.get("/v1/memory", params=params, timeout=30).json()
            found += [m["id"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
    return found


def verify(
    base_url: str, database_url: str, user_keys: dict[str, str], tally: Tally
) -> dict[str, int]:
    """Lost, duplicated and orphaned counts after a run (all should be 0).

    Lost: an acknowledged save missing, unless a delete of it went unanswered. Duplicated: a
    memory listed twice, or more unacknowledged memories than saves that went unanswered.
    Those unanswered writes that did take effect are counted in tally.took_effect_unanswered.
    """
    lost = duplicated = resurrected = 0
    uncertain = set(tally.uncertain)
    tally.took_effect_unanswered = 0
    for user, key in user_keys.items():
        listed = listed_ids(base_url, key)
        duplicated += len(listed) - len(set(listed))
        created = set(tally.created.get(user, []))
        deleted = set(tally.deleted.get(user, []))
        duplicated += len(tally.created.get(user, [])) - len(created)
        lost += len((created - deleted - uncertain) - set(listed))
        resurrected += len(deleted & set(listed))
        unacknowledged = len(set(listed) - created)
        duplicated += max(0, unacknowledged - tally.unanswered_saves[user])
        gone = ((created & uncertain) - deleted) - set(listed)
        tally.took_effect_unanswered += min(unacknowledged, tally.unanswered_saves[user])
        tally.took_effect_unanswered += len(gone)
    return {
        "lost_writes": lost,
        "duplicated_writes": duplicated,
        "deleted_but_present": resurrected,
        **orphans(database_url),
    }


def orphans(database_url: str) -> dict[str, int]:
    """Rows that outlived or missed their memory, and statistics that drifted."""
    engine = sa.create_engine(database_url)
    with engine.connect() as conn:
        ctx = conn.execute(
            sa.select(sa.func.count())
            .select_from(
                memory_context.outerjoin(memory, memory.c.id == memory_context.c.memory_id)
            )
            .where(memory.c.id.is_(None))
        ).scalar()
        postings = conn.execute(
            sa.select(sa.func.count())
            .select_from(memory_term.outerjoin(memory, memory.c.id == memory_term.c.memory_id))
            .where(memory.c.id.is_(None))
        ).scalar()
        # Every memory saved by the load has content words and exactly two contexts.
        no_postings = conn.execute(
            sa.select(sa.func.count())
            .select_from(memory)
            .where(~sa.exists().where(memory_term.c.memory_id == memory.c.id))
        ).scalar()
        ctx_counts = (
            sa.select(memory_context.c.memory_id, sa.func.count().label("n"))
            .group_by(memory_context.c.memory_id)
            .subquery()
        )
        wrong_contexts = conn.execute(
            sa.select(sa.func.count())
            .select_from(memory.outerjoin(ctx_counts, ctx_counts.c.memory_id == memory.c.id))
            .where(sa.func.coalesce(ctx_counts.c.n, 0) != 2)
        ).scalar()
        per_user = dict(
            conn.execute(
                sa.select(memory.c.user_id, sa.func.count()).group_by(memory.c.user_id)
            ).all()
        )
        stats = dict(
            conn.execute(
                sa.select(memory_user_stats.c.user_id, memory_user_stats.c.doc_count)
            ).all()
        )
    engine.dispose()
    drift = sum(1 for u in set(per_user) | set(stats) if per_user.get(u, 0) != stats.get(u, 0))
    return {
        "orphan_contexts": int(ctx or 0),
        "orphan_postings": int(postings or 0),
        "memories_without_postings": int(no_postings or 0),
        "memories_without_their_contexts": int(wrong_contexts or 0),
        "stats_drift_users": drift,
    }


def summary(tally: Tally, checks: dict[str, int], clients: int, seconds: float) -> dict[str, Any]:
    """The figures of one run."""
    by_status = Counter()
    for key, n in tally.statuses.items():
        by_status[key.split()[1]] += n
    return {
        "clients": clients,
        "seconds": seconds,
        "requests": tally.requests,
        "requests_per_second": round(tally.requests / seconds, 1),
        "by_status": dict(sorted(by_status.items())),
        "server_errors": len(tally.server_errors),
        "transport_errors": len(tally.transport_errors),
        "slowest_request_s": round(tally.slowest, 3),
        "unanswered_writes_that_took_effect": tally.took_effect_unanswered,
        **checks,
    }


def _throwaway_mariadb() -> tuple[str, Callable[[], None]]:
    """A fresh database on the shared MariaDB, and how to drop it."""
    name = f"mbload_{os.getpid()}_{secrets.token_hex(3)}"
    admin = sa.create_engine(MARIADB_ADMIN)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    url = sa.engine.make_url(MARIADB_ADMIN).set(database=name).render_as_string(False)

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()

    return url, drop


def bench(database_url: str, clients: int, seconds: float, workers: int) -> dict[str, Any]:
    """One measured run against a server on this database."""
    user_keys = make_keys(database_url, users=4)
    server = start_server(database_url, workers)
    try:
        tally = run_load(server.base_url, user_keys, clients, seconds)
        checks = verify(server.base_url, database_url, user_keys, tally)
    finally:
        server.stop()
    return summary(tally, checks, clients, seconds)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database-url")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    if args.database_url:
        results["given"] = bench(args.database_url, args.clients, args.seconds, args.workers)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/load.db"
            results["sqlite"] = bench(url, args.clients, args.seconds, args.workers)
        url, drop = _throwaway_mariadb()
        try:
            results["mariadb"] = bench(url, args.clients, args.seconds, args.workers)
        finally:
            drop()
    print(json.dumps(results, indent=2))
    bad = [
        name
        for name, r in results.items()
        if r["server_errors"] or r["lost_writes"] or r["duplicated_writes"] or r["orphan_contexts"]
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
