"""Faults: the database going away and coming back, a server killed mid-write."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pymysql
import pytest
import sqlalchemy as sa
from loadkit import common, load

from memory_bank.store.schema import memory
from polling import poll, wait_for

LEAKY_WORDS = ("Traceback", "sqlalchemy", "pymysql", "OperationalError", 'File "')
# Concurrent clients of the outage test, each with at most one request in flight.
CLIENTS = 8


@dataclass
class OwnMariaDB:
    """A private mariadbd on its own port and datadir (the shared server is never touched)."""

    datadir: Path
    socket: Path
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/mbfault"

    def start(self) -> None:
        """Start the server and wait until it answers."""
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [
                    "mariadbd",
                    "--no-defaults",
                    f"--datadir={self.datadir}",
                    f"--socket={self.socket}",
                    f"--port={self.port}",
                    f"--pid-file={self.datadir / 'mariadbd.pid'}",
                    "--bind-address=127.0.0.1",
                    "--skip-networking=0",
                    "--user=root",
                    "--skip-log-bin",
                    "--innodb-buffer-pool-size=64M",
                    "--innodb-log-file-size=16M",
                    "--max-connections=200",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if not poll(self._answers, every=0.2, ignoring=(pymysql.MySQLError,)):
            raise RuntimeError("mariadbd did not start")

    def _answers(self) -> bool:
        """Whether the server takes a connection (a MySQLError while it starts)."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError("mariadbd exited: " + self.log.read_text()[-2000:])
        pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=1).close()
        return True

    def stop(self) -> None:
        """SIGTERM and wait for a clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def own_mariadb(tmp_path: Path) -> Iterator[OwnMariaDB]:
    """A throw-away MariaDB server with a database `mbfault`."""
    if not shutil.which("mariadbd") or not shutil.which("mariadb-install-db"):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("mariadbd and mariadb-install-db are required in CI")
        pytest.skip("MariaDB server binaries not installed")
    db = OwnMariaDB(
        datadir=tmp_path / "data",
        socket=tmp_path / "mysqld.sock",
        port=common.free_port(),
        log=tmp_path / "mariadbd.log",
    )
    subprocess.run(
        [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={db.datadir}",
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    db.start()
    conn = pymysql.connect(host="127.0.0.1", port=db.port, user="root")
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE mbfault CHARACTER SET utf8mb4")
    conn.close()
    try:
        yield db
    finally:
        db.stop()


@pytest.mark.slow
@pytest.mark.mariadb
def test_database_outage_is_a_fast_503_and_the_service_recovers(own_mariadb, figures):
    user_keys = load.make_keys(own_mariadb.url, users=4)
    server = common.start_server(own_mariadb.url, workers=2)
    answers: list[tuple[str, int, str, str]] = []
    lock = threading.Lock()

    def keep(op: str, response: httpx.Response) -> None:
        with lock:
            answers.append(
                (op, response.status_code, response.headers.get("content-type", ""), response.text)
            )

    result: dict[str, Any] = {}
    seconds = 16.0
    runner = threading.Thread(
        target=lambda: result.update(
            tally=load.run_load(
                server.base_url, user_keys, CLIENTS, seconds, 5000, on_response=keep
            )
        )
    )
    try:
        runner.start()
        time.sleep(3)
        own_mariadb.stop()
        down_at = time.monotonic()
        time.sleep(5)
        # While down: the probes say so, quickly.
        ready = httpx.get(server.base_url + "/readyz", timeout=20)
        assert ready.status_code == 503
        own_mariadb.start()
        outage = time.monotonic() - down_at
        runner.join(timeout=seconds + 120)
        # Recovers by itself: no restart of the service, only waiting.
        recovered = _wait_until_ok(server.base_url, user_keys)
        tally = result["tally"]
        checks = load.verify(server.base_url, own_mariadb.url, user_keys, tally)
    finally:
        server.stop()
    codes = sorted({status for _, status, _, _ in answers})
    unavailable = [a for a in answers if a[1] == 503]
    figures.note(
        "faults.mariadb_outage",
        {
            "requests": tally.requests,
            "answers_503": len(unavailable),
            "statuses": codes,
            "outage_s": round(outage, 1),
            "slowest_request_s": round(tally.slowest, 2),
            "recovered_after_s": round(recovered, 1),
            "unanswered_writes_that_took_effect": tally.took_effect_unanswered,
            **checks,
        },
    )
    assert unavailable, "the outage was never observed"
    assert set(codes) <= {200, 201, 204, 404, 503}, codes
    for _op, _status, ctype, body in unavailable:
        assert ctype == "application/problem+json"
        assert '"code": "service_unavailable"' in body
        assert not any(word in body for word in LEAKY_WORDS), body
    assert tally.transport_errors == []
    # Fail fast: nothing waits anywhere near the client timeout (a hang would hit it).
    assert tally.slowest < 20, tally.slowest
    assert checks == dict.fromkeys(checks, 0), checks
    # A 503'd write may have taken effect only if its COMMIT was in flight as the database
    # went down: at most one request per client, not a pattern.
    assert tally.took_effect_unanswered <= CLIENTS, tally.took_effect_unanswered


def _wait_until_ok(base_url: str, user_keys: dict[str, str]) -> float:
    """Seconds until a save and a read succeed again (bounded)."""
    key = next(iter(user_keys.values()))
    headers = {"Authorization": f"Bearer {key}"}
    started = time.monotonic()

    def saved_and_read() -> bool:
        r = httpx.post(
            base_url + "/v1/memory",
            json={"content": "after the outage", "contexts": [{"snippet": "a"}, {"snippet": "b"}]},
            headers=headers,
            timeout=20,
        )
        if r.status_code != 201:
            assert r.status_code == 503, r.text
            return False
        mid = r.json()["memory"]["id"]
        got = httpx.get(f"{base_url}/v1/memory/{mid}", headers=headers, timeout=20)
        assert got.status_code == 200
        httpx.delete(f"{base_url}/v1/memory/{mid}", headers=headers, timeout=20)
        return True

    wait_for(
        saved_and_read,
        "a save and a read after the database returned",
        every=0.5,
        ignoring=(httpx.HTTPError,),
    )
    return time.monotonic() - started


@pytest.mark.slow
def test_server_killed_mid_write_leaves_no_half_written_memory(database_url, figures):
    engine = "sqlite" if database_url.startswith("sqlite") else "mariadb"
    user_keys = load.make_keys(database_url, users=2)
    server = common.start_server(database_url, workers=2)
    result: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: result.update(tally=load.run_load(server.base_url, user_keys, 8, 6.0, 2000))
    )
    runner.start()
    time.sleep(2.5)
    # SIGKILL the whole server (supervisor and workers: its own process group).
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
    server.stop()  # already dead: this only removes its log
    runner.join(timeout=120)
    tally = result["tally"]
    checks = load.orphans(database_url)
    db = sa.create_engine(database_url)
    with db.connect() as conn:
        stored = set(conn.execute(sa.select(memory.c.id)).scalars())
    db.dispose()
    acknowledged = {mid for ids in tally.created.values() for mid in ids}
    deleted = {mid for ids in tally.deleted.values() for mid in ids}
    figures.note(
        f"faults.kill9.{engine}",
        {
            "acknowledged_saves": len(acknowledged),
            "stored_memories": len(stored),
            "cut_requests": len(tally.transport_errors),
            **checks,
        },
    )
    assert acknowledged, "no save finished before the kill"
    uncertain = set(tally.uncertain)
    assert (acknowledged - deleted - uncertain) <= stored, "an acknowledged save was lost"
    assert not (deleted & stored), "an acknowledged delete came back"
    assert checks == dict.fromkeys(checks, 0), checks


@pytest.mark.slow
@pytest.mark.mariadb
def test_exhausted_pool_is_a_503_not_a_hang(mariadb_url):
    from starlette.testclient import TestClient

    from memory_bank.app import create_app, state_of
    from memory_bank.settings import Settings
    from memory_bank.store import api_keys
    from memory_bank.store.engine import writing

    app = create_app(
        Settings(
            database_url=mariadb_url,
            db_pool_size=1,
            validate_responses=True,
            allowed_hosts="testserver",
        )
    )
    engine = state_of(app).engine
    secret, _ = writing(engine, lambda c: api_keys.create_key(c, "alice", ("mcp:read",), "t"))
    # Hold every pooled connection (pool_size 1 + overflow 1), as a stuck database would.
    held = [engine.connect(), engine.connect()]
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            r = client.get("/v1/memory", headers={"Authorization": f"Bearer {secret}"})
    finally:
        for conn in held:
            conn.close()
        engine.dispose()
    assert r.status_code == 503
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "service_unavailable"
    assert r.headers["retry-after"]
