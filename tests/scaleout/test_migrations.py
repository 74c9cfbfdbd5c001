"""A migration added later runs on both layouts through `memory-bank migrate`: on one server,
and on a Spider head, where each backend gets it and the head's definitions are rebuilt, with
its data step applied once per row."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from memory_bank.cli import main
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import init_shards

pytestmark = pytest.mark.spider


@pytest.fixture
def databases(cluster) -> Iterator[tuple[str, list[str]]]:
    """A new database on the head and on each backend (the cluster's stay as they are)."""
    name = f"mbmig_{secrets.token_hex(4)}"
    servers = [cluster.head_port, *cluster.shard_ports]
    for port in servers:
        admin = sa.create_engine(cluster.url(port, "mysql"))
        with admin.connect() as conn:
            conn.exec_driver_sql(
                f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )
        admin.dispose()
    yield cluster.url(cluster.head_port, name), [cluster.url(p, name) for p in cluster.shard_ports]
    for port in servers:
        admin = sa.create_engine(cluster.url(port, "mysql"))
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
            if port == cluster.head_port:
                for k in range(len(cluster.shard_ports)):
                    conn.exec_driver_sql(f"DROP SERVER IF EXISTS mb_{name}_shard{k}")
        admin.dispose()


def _columns(url: str, table: str) -> set[str]:
    engine = make_engine(url, 1)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def _memories(url: str) -> list[tuple[str, int]]:
    engine = make_engine(url, 1)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT user_id, revision FROM memory ORDER BY user_id"))
            return [(r[0], int(r[1])) for r in rows]
    finally:
        engine.dispose()


def _add_memories(url: str, owners: list[str]) -> None:
    engine = make_engine(url, 1)
    with engine.begin() as conn:
        for n, owner in enumerate(owners):
            conn.execute(
                sa.text(
                    "INSERT INTO memory (id, user_id, content, tags, source, scope, created_at, "
                    "updated_at) VALUES (:id, :o, 'c', '[]', 'test', 'user', :t, :t)"
                ),
                {"id": f"mem_{n:026d}", "o": owner, "t": "2026-12-01 00:00:00"},
            )
    engine.dispose()


def _migrate(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", url)
    assert main(["migrate"]) == 0


def test_a_later_migration_runs_on_one_server(databases, later_migration, monkeypatch):
    single, _ = databases
    _migrate(single, monkeypatch)
    _add_memories(single, ["alice", "bob"])
    later_migration()
    _migrate(single, monkeypatch)
    assert "throwaway" in _columns(single, "memory") and "throwaway" in _columns(single, "api_key")
    assert _memories(single) == [("alice", 101), ("bob", 101)]


def test_a_later_migration_reaches_every_backend_and_the_heads_definitions(
    databases, later_migration, monkeypatch
):
    head, backends = databases
    engine = make_engine(head, 2)
    init_shards(engine, backends)
    engine.dispose()
    owners = [f"owner{n}" for n in range(9)]
    _add_memories(head, owners)
    later_migration()
    _migrate(head, monkeypatch)
    # Each backend has the column and its own rows moved once; the head has its definition
    # rebuilt (the column reads through it) and its own table changed; no backend got the
    # head's table.
    for backend in backends:
        assert "throwaway" in _columns(backend, "memory")
        assert "api_key" not in sa.inspect(make_engine(backend, 1)).get_table_names()
    assert "throwaway" in _columns(head, "memory") and "throwaway" in _columns(head, "api_key")
    assert _memories(head) == [(o, 101) for o in owners]
    assert sum(len(_memories(b)) for b in backends) == len(owners)
    # Again: nothing left to do, nothing applied twice.
    _migrate(head, monkeypatch)
    assert _memories(head) == [(o, 101) for o in owners]
    engine = make_engine(head, 1)
    with engine.connect() as conn:
        assert (
            conn.execute(sa.text("SELECT COUNT(*) FROM memory WHERE throwaway IS NULL")).scalar()
            == 9
        )
    engine.dispose()
