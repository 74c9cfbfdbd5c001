"""Where a request's time goes: sequential rates of an unauthenticated probe, a list and a save.

`python benchmarks/request_floor.py [--engine sqlite|mariadb] [--driver pymysql|mysqldb]
[--requests 300]`

The probe (`/healthz`) runs the whole framework stack with no credential and no database; the
list adds authentication and two reads; the save adds the write transaction. Their difference
tells how much of a save is ours and how much is the framework's fixed cost.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from common import create_database, make_key, serve, with_driver

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
        for name, call in rows:
            per_second, ms = _rate(call, args.requests)
            print(f"  {name:40} {per_second:7.0f}/s  {ms:6.2f} ms")


if __name__ == "__main__":
    main()
