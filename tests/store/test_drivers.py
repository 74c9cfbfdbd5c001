"""The optional C driver for MySQL/MariaDB (mysql+mysqldb://) runs the same service."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from databases import wipe
from drivers import require_mysqlclient
from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, reading, writing

BODY = {
    "content": "We dropped Acme as a vendor after the Q3 price change",
    "tags": ["vendors"],
    "contexts": [
        {"snippet": "Acme raised prices again", "conversation_id": "c1", "message_id": "m1"},
        {"snippet": "Globex is cheaper", "conversation_id": "c1", "message_id": "m2"},
    ],
}


@pytest.fixture
def mysqldb_url(mariadb_url: str) -> str:
    """The test database, reached through mysqlclient instead of PyMySQL."""
    require_mysqlclient()
    # The session's database holds what the test before left, encrypted owners included
    # (others empty it when they start): start from empty too.
    wipe(mariadb_url)
    url = sa.engine.make_url(mariadb_url).set(drivername="mysql+mysqldb")
    return url.render_as_string(hide_password=False)


@pytest.fixture
def client(mysqldb_url: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """The whole app on mysqlclient, and a key's headers."""
    app = create_app(
        Settings(database_url=mysqldb_url, allowed_hosts="testserver", embeddings="off")
    )
    engine = state_of(app).engine
    assert engine.driver == "mysqldb"
    secret, _ = writing(
        engine, lambda c: api_keys.create_key(c, "driver-user", api_keys.PERSONAL_SCOPES, "t")
    )
    with TestClient(app) as http:
        yield http, {"Authorization": f"Bearer {secret}"}
    app_state.dispose(state_of(app))


def test_save_search_list_delete_through_mysqlclient(client):
    http, auth = client
    saved = http.post("/v1/memory", json=BODY, headers=auth)
    assert saved.status_code == 201, saved.text
    memory = saved.json()["memory"]
    assert [c["citation"]["message_id"] for c in memory["contexts"]] == ["m1", "m2"]
    found = http.get("/v1/memory/search", params={"q": "acme prices"}, headers=auth).json()
    assert [r["id"] for r in found["results"]] == [memory["id"]]
    assert http.get(f"/v1/memory/{memory['id']}", headers=auth).json() == {"memory": memory}
    assert http.delete(f"/v1/memory/{memory['id']}", headers=auth).status_code == 204
    assert http.get("/v1/memory/search", params={"q": "acme"}, headers=auth).json() == {
        "results": [],
        "mode": "lexical",
    }


def test_mysqlclient_outage_is_a_503_and_a_dead_idle_connection_is_replaced(
    mysqldb_url, monkeypatch
):
    from memory_bank.errors import ServiceUnavailable
    from memory_bank.store import engine as engine_module

    gone = make_engine(
        sa.engine.make_url(mysqldb_url).set(port=1).render_as_string(hide_password=False)
    )
    with pytest.raises(ServiceUnavailable), reading(gone) as conn:
        conn.exec_driver_sql("SELECT 1")
    gone.dispose()

    engine = make_engine(mysqldb_url, pool_size=1)
    with reading(engine) as conn:
        first = int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())
    admin = sa.create_engine(mysqldb_url, poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"KILL CONNECTION {first}")
    admin.dispose()
    # As if the pooled connection had sat idle past the threshold.
    monkeypatch.setattr(engine_module, "IDLE_PING_SECONDS", 0.0)
    with reading(engine) as conn:
        second = int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())
    assert second != first
    engine.dispose()
