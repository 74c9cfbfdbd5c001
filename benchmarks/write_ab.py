"""Save rate of this tree against an earlier commit, interleaved request by request.

`python benchmarks/write_ab.py --before REV [--engines sqlite,pymysql,mysqldb] [--requests 1500]`

This machine's speed drifts by ±30% from one minute to the next, more than most changes to the
write path are worth, so two runs minutes apart cannot compare two versions. Here two real
servers run side by side, one on this tree's code and one on REV's (checked out into a
temporary git worktree and put first on PYTHONPATH), each on its own fresh database, and one
client alternates POST /v1/memory (two contexts, request_floor.BODY) between them: whatever the
machine does in a given second, it does to both.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx

from common import (
    REPO,
    alternating_saves,
    create_database,
    make_key,
    start_server,
    with_driver,
)
from request_floor import BODY


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A throw-away checkout of rev."""
    folder = Path(tempfile.mkdtemp(prefix="mb-ab-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(folder), rev])
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)])


def _database(engine: str, name: str) -> str:
    """A fresh database for one side: a temporary SQLite file or an mb_bench_ab_* database."""
    if engine == "sqlite":
        return f"sqlite:///{Path(tempfile.mkdtemp()) / f'{name}.db'}"
    return with_driver(create_database(f"mb_bench_ab_{name}", drop=True), engine)


def compare(engine: str, sources: dict[str, Path], requests: int) -> dict[str, list[float]]:
    """Seconds per save for each side, the two sides alternating request by request."""
    clients: dict[str, httpx.Client] = {}
    with contextlib.ExitStack() as stack:
        for name, src in sources.items():
            url = _database(engine, name)
            # make_key and migrations run in this process, on this tree's code: the schema is
            # the same across the commits this compares (a different one would fail to start).
            key = make_key(url, "ab")
            server = start_server(
                url,
                env={"PYTHONPATH": str(src), "MEMORY_BANK_VALIDATE_RESPONSES": "false"},
            )
            stack.callback(server.stop)
            client = httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}
            )
            stack.enter_context(client)
            clients[name] = client
        for client in clients.values():
            for _ in range(30):
                client.post("/v1/memory", json=BODY).raise_for_status()
        return alternating_saves(clients, [BODY] * requests)


def main() -> None:
    """Compare and print saves per second, both sides, per engine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare against")
    parser.add_argument("--engines", default="sqlite,pymysql,mysqldb")
    parser.add_argument("--requests", type=int, default=1500, help="saves per side")
    args = parser.parse_args()
    with worktree(args.before) as old:
        sources = {"before": old / "src", "after": REPO / "src"}
        print(f"before = {args.before}, after = this tree; {args.requests} saves each, 1 worker")
        for engine in args.engines.split(","):
            times = compare(engine, sources, args.requests)
            cells = []
            for name in sources:
                mean, median = statistics.mean(times[name]), statistics.median(times[name])
                p99 = sorted(times[name])[int(len(times[name]) * 0.99)]
                cells.append(
                    f"{name} {1 / mean:4.0f}/s (median {median * 1e3:.2f} ms, p99 {p99 * 1e3:.1f})"
                )
            ratio = statistics.mean(times["before"]) / statistics.mean(times["after"])
            print(f"  {engine:8} " + "  ".join(cells) + f"  after/before {ratio:.2f}x")


if __name__ == "__main__":
    os.environ.pop("PYTHONPATH", None)  # each server gets its own (compare)
    main()
