"""Two heads over the same backends (docs/scale-out.md, "Two heads"): two app hosts, each on its
own head, read each other's saves; the heads replicate their own tables to each other; one
`migrate` reaches both heads' definitions; one head down leaves the other serving."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.cli import main
from memory_bank.settings import Settings
from memory_bank.store import api_keys, shards
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import head_revision
from polling import poll
from scaleout.conftest import TOOL

pytestmark = pytest.mark.spider


@dataclass(frozen=True)
class TwoHeads:
    """Three backends and two heads on loopback, made by the cluster tool and `shards init`."""

    dir: Path
    heads: list[str]
    backends: list[str]

    def tool(self, *args: str) -> None:
        """Run the cluster tool on this cluster (stop-head, start-head)."""
        done = subprocess.run(
            [sys.executable, str(TOOL), args[0], str(self.dir), *args[1:]],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def two_heads() -> Iterator[TwoHeads]:
    """The cluster, its first head made a head over both backends with the second head named."""
    directory = Path(tempfile.mkdtemp(prefix="mb2h", dir="/tmp"))
    shutil.rmtree(directory)
    up = [sys.executable, str(TOOL), "up", str(directory), "--shards", "3", "--heads", "2"]
    done = subprocess.run(
        [*up, "--replicate", *shards.replicated_tables()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    made = TwoHeads(
        directory,
        [lines[-1].split("=", 1)[1], *(x.split("=", 1)[1] for x in lines if x.startswith("HEAD"))],
        [x.split("=", 1)[1] for x in lines if x.startswith("SHARD=")],
    )
    try:
        os.environ["MEMORY_BANK_DATABASE_URL"] = made.heads[0]
        flags = [arg for url in made.backends for arg in ("--shard", url)]
        assert main(["shards", "init", *flags, "--head", made.heads[1]]) == 0
        # The second head has the first one's tables once replication has brought them.
        poll(lambda: _value(made.heads[1], shards.DEFINITIONS_STATE) == head_revision(), timeout=60)
        yield made
    finally:
        os.environ.pop("MEMORY_BANK_DATABASE_URL", None)
        subprocess.run([sys.executable, str(TOOL), "down", str(directory)], timeout=300)
        shutil.rmtree(directory, ignore_errors=True)


def _value(url: str, name: str) -> str | None:
    """A service_state value on one server, or None (also while its table is not there)."""
    engine = make_engine(url, 1)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT value FROM service_state WHERE name = :n"), {"n": name}
            ).first()
            return None if row is None else str(row[0])
    except sa.exc.DBAPIError:
        return None
    finally:
        engine.dispose()


def _columns(url: str, table: str) -> set[str]:
    engine = make_engine(url, 1)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


@pytest.fixture
def hosts(two_heads: TwoHeads) -> Iterator[Any]:
    """An app host per head; build(k) starts the one on head k."""
    built: list[tuple[Any, TestClient]] = []

    def build(k: int) -> TestClient:
        settings = Settings(
            database_url=two_heads.heads[k],
            validate_responses=True,
            allowed_hosts="testserver",
            embeddings="off",
        )
        app = create_app(settings)
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        built.append((app, client))
        return client

    yield build
    for app, client in built:
        client.__exit__(None, None, None)
        app_state.dispose(state_of(app))


def _key(url: str, user: str) -> dict[str, str]:
    """A new key for user, created through the head at url."""
    engine = make_engine(url, 1)
    try:
        secret, _ = writing(
            engine, lambda c: api_keys.create_key(c, user, ("mcp:read", "mcp:write"), "two")
        )
    finally:
        engine.dispose()
    return {"Authorization": f"Bearer {secret}"}


def _accepted(client: TestClient, headers: dict[str, str]) -> bool:
    """Whether the host takes the key (replication has brought it there)."""
    return client.get("/v1/memory", headers=headers).status_code == 200


def test_init_writes_both_heads_and_each_has_its_spider_tables(two_heads):
    assert _value(two_heads.heads[0], shards.HEADS_STATE) == _value(
        two_heads.heads[1], shards.HEADS_STATE
    )
    for url in two_heads.heads:
        engine = make_engine(url, 1)
        with engine.connect() as conn:
            assert [b.url for b in shards.backends(conn)] == two_heads.backends
            assert shards.heads(conn) == two_heads.heads
            engines = shards.table_engines(conn)
        engine.dispose()
        assert engines["memory"].upper() == "SPIDER" and engines["api_key"].upper() == "INNODB"


def test_a_save_through_one_head_is_read_through_the_other(two_heads, hosts):
    first, second = hosts(0), hosts(1)
    headers = _key(two_heads.heads[0], "ada")
    assert poll(lambda: _accepted(second, headers), timeout=30)
    saved = first.post(
        "/v1/memory", json={"content": "the lighthouse key is blue"}, headers=headers
    )
    assert saved.status_code == 201, saved.text
    memory = saved.json()["memory"]["id"]
    read = second.get(f"/v1/memory/{memory}", headers=headers)
    assert read.status_code == 200 and read.json()["memory"]["content"].endswith("blue")
    found = second.get("/v1/memory/search", params={"q": "lighthouse"}, headers=headers).json()
    assert [r["id"] for r in found["results"]] == [memory]
    # And the other way: a change through the second head is what the first reads.
    edited = second.patch(
        f"/v1/memory/{memory}", json={"content": "the lighthouse key is red"}, headers=headers
    )
    assert edited.status_code == 200, edited.text
    again = first.get(f"/v1/memory/{memory}", headers=headers)
    assert again.json()["memory"]["content"] == "the lighthouse key is red"


def test_one_head_down_leaves_the_other_serving(two_heads, hosts):
    second = hosts(1)
    headers = _key(two_heads.heads[0], "grace")
    assert poll(lambda: _accepted(second, headers), timeout=30)
    two_heads.tool("stop-head", "0")
    try:
        saved = second.post("/v1/memory", json={"content": "ferry leaves at nine"}, headers=headers)
        assert saved.status_code == 201, saved.text
        found = second.get("/v1/memory/search", params={"q": "ferry"}, headers=headers)
        assert [r["id"] for r in found.json()["results"]] == [saved.json()["memory"]["id"]]
        assert second.get("/readyz").status_code == 200
        # A key made on the second head meanwhile reaches the first once it is back.
        later = _key(two_heads.heads[1], "hedy")
    finally:
        two_heads.tool("start-head", "0")
    first = hosts(0)
    assert poll(lambda: _accepted(first, later), timeout=30)
    got = first.get(f"/v1/memory/{saved.json()['memory']['id']}", headers=headers)
    assert got.status_code == 200 and got.json()["memory"]["content"] == "ferry leaves at nine"


def test_one_migrate_reaches_both_heads(two_heads, later_migration, monkeypatch):
    # Last in this module: the cluster is at the throw-away revision afterwards.
    later_migration()
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", two_heads.heads[0])
    assert main(["migrate"]) == 0
    for backend in two_heads.backends:
        assert "throwaway" in _columns(backend, "memory")
    for head in two_heads.heads:
        # Each head's Spider definition was rebuilt by the one run (not replicated: Spider
        # tables are not among the replicated ones).
        assert "throwaway" in _columns(head, "memory")
    # The second head's own table changed by replication, and its migration version with it.
    assert poll(lambda: "throwaway" in _columns(two_heads.heads[1], "api_key"), timeout=30)
    engine = make_engine(two_heads.heads[1], 1)
    with engine.connect() as conn:
        version = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    engine.dispose()
    assert version == "0999_throwaway"
