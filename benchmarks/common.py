"""Shared helpers of the benchmarks: a real server process, MariaDB databases, percentiles."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    import numpy as np

REPO = Path(__file__).resolve().parent.parent
MARIADB_ADMIN = os.environ.get("MEMORY_BANK_BENCH_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/")


def mariadb_url(database: str) -> str:
    """The URL of a benchmark database on the MariaDB server (names must start mb_bench_)."""
    assert database.startswith("mb_bench_"), "benchmarks only touch mb_bench_* databases"
    return str(make_url(MARIADB_ADMIN).set(database=database).render_as_string(False))


def with_driver(url: str, driver: str) -> str:
    """A MySQL/MariaDB URL switched to another driver (pymysql or mysqldb); others unchanged."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in {"mysql", "mariadb"}:
        return url
    return str(parsed.set(drivername=f"mysql+{driver}").render_as_string(False))


def create_database(database: str, drop: bool = False) -> str:
    """Create (or recreate) a benchmark database and return its URL."""
    assert database.startswith("mb_bench_")
    engine = sa.create_engine(MARIADB_ADMIN)
    with engine.begin() as conn:
        if drop:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database}`")
        conn.exec_driver_sql(
            f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )
    engine.dispose()
    return mariadb_url(database)


def size_buffer_pool(megabytes: int) -> int:
    """Grow InnoDB's buffer pool online (never shrink it: others share the server)."""
    engine = sa.create_engine(MARIADB_ADMIN)
    with engine.begin() as conn:
        current = int(conn.exec_driver_sql("SELECT @@innodb_buffer_pool_size").scalar() or 0)
        wanted = megabytes * 1024 * 1024
        if current < wanted:
            conn.exec_driver_sql(f"SET GLOBAL innodb_buffer_pool_size = {wanted}")
            current = wanted
    engine.dispose()
    return current // (1024 * 1024)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A real `memory-bank serve` process, its output going to a log file."""

    base_url: str
    process: subprocess.Popen[bytes]
    log_path: str

    def stop(self) -> None:
        """Terminate (then kill) the process and remove its log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.log_path)


def start_server(
    database_url: str,
    workers: int = 1,
    env: dict[str, str] | None = None,
    ready_within: float = 120,
) -> Server:
    """Start a server on a free 127.0.0.1 port and wait until /readyz answers 200.

    Its own process group (start_new_session), so a test can kill the server with its workers;
    output to a file rather than a pipe, which a chatty server could fill and block on.
    """
    port = free_port()
    fd, log_path = tempfile.mkstemp(prefix="memory-bank-serve-", suffix=".log")
    command = [sys.executable, "-m", "memory_bank.cli", "serve", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--workers", str(workers)],
        env={
            **os.environ,
            "MEMORY_BANK_DATABASE_URL": database_url,
            "MEMORY_BANK_LOG_LEVEL": "warning",
            **(env or {}),
        },
        stdout=fd,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    os.close(fd)
    server = Server(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + ready_within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            with open(log_path) as out:
                output = out.read()[-2000:]
            server.stop()
            raise RuntimeError("server exited: " + output)
        try:
            if httpx.get(server.base_url + "/readyz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError("server did not become ready")


@contextlib.contextmanager
def serve(
    database_url: str, workers: int = 1, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """A server for timing until the block ends: no response validation, no rate limit."""
    server = start_server(
        database_url,
        workers,
        env={
            "MEMORY_BANK_VALIDATE_RESPONSES": "false",
            "MEMORY_BANK_RATE_LIMIT_PER_MINUTE": "0",
            **(env or {}),
        },
    )
    try:
        yield server
    finally:
        server.stop()


class LeanClient:
    """One keep-alive HTTP/1.1 connection on the standard library's http.client.

    A sequential client as cheap as Python gets: here it spends about 0.4 ms of CPU per save
    where httpx spends 1.1-1.4 ms, on the same two cores as the server and the database, so
    it measures more of the server and less of itself (docs/benchmarks.md, run 7).
    """

    def __init__(self, base_url: str, key: str) -> None:
        host, port = base_url.removeprefix("http://").split(":")
        self._conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def post(self, path: str, body: object) -> int:
        """POST a JSON body; the response status (its body is read and dropped)."""
        self._conn.request("POST", path, body=json.dumps(body).encode(), headers=self._headers)
        response = self._conn.getresponse()
        response.read()
        return response.status

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def make_key(database_url: str, user: str, org: str | None = None) -> str:
    """A read/write API key for a user (with org:write in its org, if any), minted straight in
    the database."""
    from memory_bank.store import api_keys
    from memory_bank.store.engine import make_engine, writing
    from memory_bank.store.migrate import migrate

    engine = make_engine(database_url, pool_size=1)
    migrate(engine)
    secret, _ = writing(
        engine,
        lambda conn: api_keys.create_key(
            conn,
            user,
            ("mcp:read", "mcp:write", "org:write") if org else ("mcp:read", "mcp:write"),
            "benchmark",
            org,
        ),
    )
    engine.dispose()
    return str(secret)


def alternating_saves(
    clients: dict[str, httpx.Client], bodies: Sequence[dict[str, object]]
) -> dict[str, list[float]]:
    """Save each body through every client in turn and time each save, per client name."""
    times: dict[str, list[float]] = {name: [] for name in clients}
    names = list(clients)
    for i, body in enumerate(bodies):
        # Alternate who goes first, so neither side always follows the other's commit.
        for name in names if i % 2 == 0 else reversed(names):
            start = time.perf_counter()
            clients[name].post("/v1/memory", json=body).raise_for_status()
            times[name].append(time.perf_counter() - start)
    return times


def percentile(values: Sequence[float], pct: float) -> float:
    """The pct-th percentile (nearest rank) of some values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def machine_speed(repeats: int = 5) -> float:
    """Milliseconds for a fixed piece of pure-Python work (median of repeats): the machine's phase.

    These VMs run 1.5-2x slower in some hours than in others, v0's FULLTEXT included, so a run's
    absolute latencies only compare with another run's next to this figure. The work uses the
    standard library alone (hashing, JSON, integer and string operations), so a change to the
    service never moves it.
    """
    record = {"id": "mem_0123456789", "content": "We dropped Acme after the Q3 price change" * 4}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        acc = 0
        for i in range(20_000):
            text = json.dumps({**record, "n": i})
            acc ^= hash(json.loads(text)["content"][i % 40 :]) ^ (i * 2_654_435_761 % 4_294_967_296)
            acc ^= int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


class EmbeddingCache:
    """Texts' vectors from a local model, kept in a file under the temporary directory between
    runs (keyed by the text's SHA-256), so a benchmark embeds each text once."""

    def __init__(self, prefix: str = "mb-bench") -> None:
        self.prefix = prefix
        self.path: Path | None = None
        self.known: dict[str, np.ndarray] = {}

    def __call__(self, provider: Any, texts: list[str]) -> np.ndarray:
        """The texts' vectors, one row each, embedding only those not known yet."""
        import numpy as np

        model = provider.model.replace(":", "-")
        path = Path(tempfile.gettempdir()) / f"{self.prefix}-{model}.npz"
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
        """Write what is known to the file."""
        import numpy as np

        if self.path is not None:
            np.savez(self.path, **self.known)  # type: ignore[arg-type]
