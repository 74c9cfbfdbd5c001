"""Where a request's time goes: sequential rates of an unauthenticated probe, a list and a save.

`python benchmarks/request_floor.py [--engine sqlite|mariadb] [--driver pymysql|mysqldb]
[--requests 300]`

The probe (`/healthz`) runs the whole framework stack with no credential and no database; the
list adds authentication and two reads; the save adds the write transaction. Their difference
tells how much of a save is ours and how much is the framework's fixed cost. Last, the CPU time
one save costs each process (client, server, and a local MariaDB server), read from /proc, for
an httpx client and for the lean one: with one client at a time the three take turns on the
same cores, so their sum is about the time a save takes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from common import LeanClient, create_database, machine_speed, make_key, serve, with_driver

BODY = {
    "content": "We dropped Acme as a vendor after the Q3 price change and moved to Globex",
    "tags": ["vendors", "2023-05-01"],
    "contexts": [
        {
            "snippet": "Melanie: I think we should drop Acme, the price is too high now",
            "conversation_id": "c1",
            "message_id": "D1:2",
        },
        {
            "snippet": "Caroline: agreed, Globex is cheaper and has better support",
            "conversation_id": "c1",
            "message_id": "D1:4",
        },
    ],
}


def _rate(call: Callable[[], httpx.Response], n: int) -> tuple[float, float]:
    """Requests per second and mean milliseconds of n sequential calls."""
    for _ in range(20):
        call()
    start = time.perf_counter()
    for _ in range(n):
        response = call()
        response.raise_for_status()
    elapsed = time.perf_counter() - start
    return n / elapsed, elapsed / n * 1000


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _mariadb_pid() -> int | None:
    """The local MariaDB server's process, when there is one to read."""
    try:
        return int(subprocess.check_output(["pidof", "mariadbd"], text=True).split()[0])
    except (OSError, subprocess.CalledProcessError, IndexError, ValueError):
        return None


def cpu_split(call: Callable[[], object], n: int, pids: dict[str, int]) -> dict[str, float]:
    """CPU milliseconds per call spent by each process, and the wall milliseconds."""
    for _ in range(20):
        call()
    before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    start = time.perf_counter()
    for _ in range(n):
        call()
    wall = time.perf_counter() - start
    split = {name: (_cpu_seconds(pid) - before[name]) / n * 1000 for name, pid in pids.items()}
    return {**split, "wall": wall / n * 1000}


def main() -> None:
    """Measure and print the three rates for one engine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["sqlite", "mariadb"], default="sqlite")
    parser.add_argument("--driver", choices=["pymysql", "mysqldb"], default="pymysql")
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    if args.engine == "mariadb":
        url = with_driver(create_database("mb_bench_floor", drop=True), args.driver)
    else:
        url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'floor.db'}"
    key = make_key(url, "floor")
    with (
        serve(url) as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}
        ) as client,
    ):
        rows = [
            ("GET /healthz (no auth, no database)", lambda: client.get("/healthz")),
            ("GET /v1/memory?limit=1", lambda: client.get("/v1/memory", params={"limit": 1})),
            ("POST /v1/memory (two contexts)", lambda: client.post("/v1/memory", json=BODY)),
        ]
        driver = f" ({args.driver})" if args.engine == "mariadb" else ""
        print(f"engine: {args.engine}{driver}, {args.requests} sequential requests each, 1 worker")
        print(f"  machine speed probe: {machine_speed():.0f} ms (common.machine_speed)")
        for name, call in rows:
            per_second, ms = _rate(call, args.requests)
            print(f"  {name:40} {per_second:7.0f}/s  {ms:6.2f} ms")
        if not os.path.exists(f"/proc/{os.getpid()}/stat"):
            return
        pids = {"client": os.getpid(), "server": server.process.pid}
        mariadb = _mariadb_pid() if args.engine == "mariadb" else None
        if mariadb is not None:
            pids["mariadb"] = mariadb
        lean = LeanClient(server.base_url, key)
        print("  CPU ms per save, by process (their sum is about the wall time):")
        for name, call in (
            ("httpx", lambda: client.post("/v1/memory", json=BODY)),
            ("lean", lambda: lean.post("/v1/memory", BODY)),
        ):
            split = cpu_split(call, args.requests, pids)
            parts = ", ".join(f"{p} {split[p]:.2f}" for p in pids)
            print(f"    {name:6} client: {parts}; wall {split['wall']:.2f} ms")
        lean.close()


if __name__ == "__main__":
    main()
