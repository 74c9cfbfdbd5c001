"""Concurrent load with organisation memories mixed in: members of two orgs (and users without
one) save personal and org memories, search, list and delete at once; then nothing may be lost,
duplicated, orphaned, or seen by anyone outside its owner.

    python benchmarks/org_load.py [--seconds 20] [--clients 12] [--workers 2] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from common import start_server
from load import WORDS, _throwaway_mariadb, orphans
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import migrate

SCOPES = ("mcp:read", "mcp:write", "org:write")


@dataclass(frozen=True)
class Member:
    """A load user: its key and its org (None: no org)."""

    user: str
    org: str | None
    key: str

    def owner(self, scope: str) -> str:
        """The owner a save with this scope belongs to."""
        return f"org:{self.org}" if scope == "org" else self.user


def make_members(database_url: str, users: int, orgs: int) -> list[Member]:
    """Users spread over orgs, every third without one, each with a key."""
    engine = make_engine(database_url, pool_size=2)
    migrate(engine)
    found = []
    for i in range(users):
        user, org = f"org-load-{i}", (None if i % 3 == 2 else f"load-org-{i % orgs}")
        scopes = SCOPES if org else SCOPES[:2]
        secret, _ = writing(
            engine, lambda conn, u=user, o=org, s=scopes: api_keys.create_key(conn, u, s, "load", o)
        )
        found.append(Member(user, org, secret))
    engine.dispose()
    return found


@dataclass
class Tally:
    """What the clients saw, by owner (a user, or "org:<id>")."""

    statuses: Counter[str] = field(default_factory=Counter)
    created: dict[str, set[str]] = field(default_factory=dict)
    deleted: dict[str, set[str]] = field(default_factory=dict)
    unanswered: Counter[str] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    transport_errors: list[str] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, book: dict[str, set[str]], owner: str, mid: str) -> None:
        """Note an id under an owner."""
        with self.lock:
            book.setdefault(owner, set()).add(mid)


def client_loop(base: str, member: Member, tally: Tally, stop_at: float, seed: int) -> None:
    """One client: saves (half to the org when it has one), searches, lists and deletes."""
    rng = random.Random(seed)
    mine: list[tuple[str, str]] = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {member.key}"}) as http:
        while time.monotonic() < stop_at:
            roll, op = rng.random(), "other"
            response: httpx.Response | None = None
            try:
                if roll < 0.4 or not mine:
                    scope = "org" if member.org and rng.random() < 0.5 else "user"
                    op = f"save-{scope}"
                    words = " ".join(rng.choice(WORDS) for _ in range(6))
                    body = {"content": f"{member.owner(scope)} knows {words}", "scope": scope}
                    response = http.post("/v1/memory", json=body, timeout=30)
                    if response.status_code == 201:
                        mid = response.json()["memory"]["id"]
                        mine.append((member.owner(scope), mid))
                        tally.add(tally.created, member.owner(scope), mid)
                    elif response.status_code >= 500:
                        tally.unanswered[member.owner(scope)] += 1
                elif roll < 0.65:
                    op = "search"
                    params = {"q": rng.choice(WORDS), "scope": rng.choice(["all", "org", "user"])}
                    response = http.get("/v1/memory/search", params=params, timeout=30)
                elif roll < 0.85:
                    op = "list"
                    response = http.get("/v1/memory", params={"limit": 20}, timeout=30)
                else:
                    op = "delete"
                    owner, mid = mine.pop(rng.randrange(len(mine)))
                    response = http.delete(f"/v1/memory/{mid}", timeout=30)
                    if response.status_code == 204:
                        tally.add(tally.deleted, owner, mid)
            except httpx.HTTPError as exc:
                with tally.lock:
                    tally.transport_errors.append(f"{op}: {type(exc).__name__}")
            with tally.lock:
                tally.requests += 1
                if response is not None:
                    tally.statuses[f"{op} {response.status_code}"] += 1
                    if response.status_code >= 500:
                        tally.server_errors.append(f"{op} {response.text[:200]}")


def listed(base: str, key: str, scope: str) -> list[str]:
    """Every memory id a key lists with a scope filter, walking the cursor."""
    found: list[str] = []
    cursor = None
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
        while True:
            params: dict[str, Any] = {"limit": 100, "scope": scope}
            if cursor:
                params["cursor"] = cursor
            page = http.get("/v1/memory", params=params, timeout=30).json()
            found += [m["id"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if not cursor:
                return found


def verify(base: str, database_url: str, members: list[Member], tally: Tally) -> dict[str, int]:
    """Lost, duplicated, leaked and orphaned counts (all should be 0)."""
    lost = duplicated = leaked = resurrected = 0
    owners = {m.user: m for m in members}
    for m in members:
        if m.org:
            owners.setdefault(f"org:{m.org}", m)
    everything = {mid for ids in tally.created.values() for mid in ids}
    for owner, reader in owners.items():
        seen = listed(base, reader.key, "org" if owner.startswith("org:") else "user")
        created = tally.created.get(owner, set())
        deleted = tally.deleted.get(owner, set())
        duplicated += len(seen) - len(set(seen))
        lost += len((created - deleted) - set(seen))
        resurrected += len(deleted & set(seen))
        duplicated += max(0, len(set(seen) - created) - tally.unanswered[owner])
    for m in members:
        mine = tally.created.get(m.user, set()) | tally.created.get(f"org:{m.org}", set())
        leaked += len((set(listed(base, m.key, "all")) & everything) - mine)
    return {
        "lost_writes": lost,
        "duplicated_writes": duplicated,
        "leaked_memories": leaked,
        "deleted_but_present": resurrected,
        **{
            k: v for k, v in orphans(database_url).items() if k != "memories_without_their_contexts"
        },
    }


def run(
    database_url: str, users: int, orgs: int, clients: int, seconds: float, workers: int
) -> dict[str, Any]:
    """One run: the load, then the checks."""
    members = make_members(database_url, users, orgs)
    server = start_server(database_url, workers)
    tally = Tally()
    try:
        stop_at = time.monotonic() + seconds
        threads = [
            threading.Thread(
                target=client_loop,
                args=(server.base_url, members[i % len(members)], tally, stop_at, i),
                daemon=True,
            )
            for i in range(clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=seconds + 120)
        checks = verify(server.base_url, database_url, members, tally)
    finally:
        server.stop()
    return {
        "requests": tally.requests,
        "org_saves": sum(n for k, n in tally.statuses.items() if k.startswith("save-org 201")),
        "server_errors": len(tally.server_errors),
        "transport_errors": len(tally.transport_errors),
        "statuses": dict(sorted(tally.statuses.items())),
        **checks,
    }


def main(argv: list[str] | None = None) -> int:
    """Run on SQLite and MariaDB (or a given database) and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database-url")
    args = parser.parse_args(argv)
    shape = (9, 2, args.clients, args.seconds, args.workers)
    results: dict[str, Any] = {}
    if args.database_url:
        results["given"] = run(args.database_url, *shape)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            results["sqlite"] = run(f"sqlite:///{tmp}/org-load.db", *shape)
        url, drop = _throwaway_mariadb()
        try:
            results["mariadb"] = run(url, *shape)
        finally:
            drop()
    print(json.dumps(results, indent=2))
    bad = [
        n
        for n, r in results.items()
        if r["server_errors"] or r["lost_writes"] or r["leaked_memories"]
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
