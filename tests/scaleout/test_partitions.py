"""Partitions dealt out to backend servers (docs/scale-out.md): `shards init` over an even
number of servers makes each partition a database of its own, server k mod n holding
partition k; each owner's rows are in the one database the head's hash names, and the app
serves them."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.store import api_keys, shards
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import ShardsError, init_shards
from scaleout.counting import Counters
from scaleout.placement import partition_of

pytestmark = pytest.mark.spider
PARTITIONS = 5


@pytest.fixture
def dealt(cluster) -> Iterator[tuple[str, list[str], list[str]]]:
    """A new head database over two of the cluster's servers in 5 partitions: the head's URL,
    the servers' URLs as given to `shards init`, and the partitions' databases' URLs."""
    name = f"mbpart_{secrets.token_hex(4)}"
    servers = cluster.shard_ports[:2]
    admin = sa.create_engine(cluster.url(cluster.head_port, "mysql"))
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    admin.dispose()
    head = cluster.url(cluster.head_port, name)
    given = [cluster.url(port, name) for port in servers]
    yield head, given, shards.partition_urls(given, PARTITIONS)
    for port in [cluster.head_port, *servers]:
        admin = sa.create_engine(cluster.url(port, "mysql"))
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
            for k in range(PARTITIONS):
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}_p{k}`")
                if port == cluster.head_port:
                    conn.exec_driver_sql(f"DROP SERVER IF EXISTS mb_{name}_shard{k}")
        admin.dispose()


def _owners_in(url: str) -> set[str]:
    """The owners with memories in one database."""
    engine = make_engine(url, 1)
    try:
        with engine.connect() as conn:
            return {r[0] for r in conn.exec_driver_sql("SELECT DISTINCT user_id FROM memory")}
    finally:
        engine.dispose()


def test_each_partition_is_a_database_on_the_server_it_is_dealt_to(cluster, dealt):
    head, given, partitions = dealt
    engine = make_engine(head, 2)
    found = init_shards(engine, given, partitions=PARTITIONS)
    assert [b.url for b in found] == partitions
    assert [sa.make_url(u).port for u in partitions] == [
        cluster.shard_ports[k % 2] for k in range(PARTITIONS)
    ]
    # Run again without --partitions: the partitions it made stay; others are refused.
    assert [b.url for b in init_shards(engine, given)] == partitions
    with pytest.raises(ShardsError, match="move owners"):
        init_shards(engine, given, partitions=7)

    app = create_app(
        Settings(database_url=head, allowed_hosts="testserver", embeddings="off").replace(
            validate_responses=True
        )
    )
    owners = [f"dealt{n}" for n in range(20)]
    servers = Counters([cluster.url(port, "mysql") for port in cluster.shard_ports[:2]])
    try:
        with TestClient(app) as client:
            for owner in owners:
                secret, _ = writing(
                    engine,
                    lambda c, o=owner: api_keys.create_key(c, o, ("mcp:read", "mcp:write"), "t"),
                )
                headers = {"Authorization": f"Bearer {secret}"}
                body = {"content": f"{owner} ate"}
                saved = client.post("/v1/memory", json=body, headers=headers)
                assert saved.status_code == 201, saved.text

                def search(owner: str = owner, headers: dict[str, str] = headers) -> Any:
                    return client.get("/v1/memory/search", params={"q": owner}, headers=headers)

                # Data statements reach only the server that holds the owner's partition.
                server = partition_of(head, owner) % 2
                cost = servers.cost(search)
                assert cost.data[1 - server] == 0 and cost.data[server] > 0, (owner, cost)
                assert [r["id"] for r in search().json()["results"]] == [
                    saved.json()["memory"]["id"]
                ]
    finally:
        servers.close()
        app_state.dispose(state_of(app))
        engine.dispose()
    held = [_owners_in(url) for url in partitions]
    for owner in owners:
        where = partition_of(head, owner)
        assert [k for k, inside in enumerate(held) if owner in inside] == [where]
    # Twenty owners over five partitions: more than one of them holds some.
    assert sum(1 for inside in held if inside) > 1
