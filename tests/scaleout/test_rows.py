"""Through a Spider head: each owner's rows live on exactly one backend, every table of theirs
on the same one, and the head keeps the keys and service state itself."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from memory_bank.store.engine import make_engine
from memory_bank.store.schema import owner_tables

pytestmark = pytest.mark.spider

USERS = [f"user{n}" for n in range(12)]


def _save(service, headers, content, **extra):
    answer = service.client.post("/v1/memory", json={"content": content, **extra}, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()["memory"]


def test_each_owner_lives_on_exactly_one_backend_in_every_table(cluster, head_service):
    service = head_service()
    for n, user in enumerate(USERS):
        org = "acme" if n % 3 == 0 else "globex" if n % 3 == 1 else None
        headers = service.auth(user, org)
        saved = _save(service, headers, f"{user} likes tea number {n}", tags=["t"])
        second = _save(service, headers, f"{user} dislikes coffee {n}")
        if org:
            _save(service, headers, f"{org} memo from {user}", scope="org")
        # An edit (revisions), a delete (tombstone) and a search (statistics read).
        edited = service.client.patch(
            f"/v1/memory/{saved['id']}",
            json={"content": f"{user} loves tea"},
            headers={**headers, "Content-Type": "application/merge-patch+json"},
        )
        assert edited.status_code == 200, edited.text
        gone = service.client.delete(f"/v1/memory/{second['id']}", headers=headers)
        assert gone.status_code == 204
        found = service.client.get("/v1/memory/search", params={"q": "tea"}, headers=headers)
        assert found.status_code == 200 and found.json()["results"]

    owners_on: dict[str, set[int]] = {}
    tables = [t.name for t in owner_tables()]
    for k, url in enumerate(cluster.shards):
        engine = make_engine(url, 1)
        with engine.connect() as conn:
            present = {r[0] for r in conn.exec_driver_sql("SHOW TABLES")}
            # The head's own tables are not on the backends.
            assert not {"api_key", "service_state", "owner_key"} & present
            for table in tables:
                for (owner,) in conn.execute(sa.text(f"SELECT DISTINCT user_id FROM {table}")):
                    owners_on.setdefault(owner, set()).add(k)
        engine.dispose()
    expected = set(USERS) | {"org:acme", "org:globex"}
    assert set(owners_on) == expected
    assert {owner: len(on) for owner, on in owners_on.items()} == dict.fromkeys(expected, 1)
    # Three backends, and the owners are spread over all of them.
    assert set().union(*owners_on.values()) == {0, 1, 2}
    head = make_engine(cluster.head, 1)
    with head.connect() as conn:
        engines = dict(
            conn.execute(
                sa.text(
                    "SELECT table_name, engine FROM information_schema.tables "
                    "WHERE table_schema = DATABASE()"
                )
            ).all()
        )
        audit = conn.execute(sa.text("SELECT DISTINCT user_id FROM org_audit")).scalars().all()
    head.dispose()
    assert {engines[t] for t in tables} == {"SPIDER"}
    assert engines["api_key"] == engines["service_state"] == "InnoDB"
    # The org log is kept under the org's owner key, with the org's memories.
    assert sorted(audit) == ["org:acme", "org:globex"]


def _ranked(service, headers, queries):
    found = []
    for q in queries:
        answer = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
        assert answer.status_code == 200, answer.text
        found.append([(r["id"], r["score"]) for r in answer.json()["results"]])
    return found


def test_search_ranks_the_same_whatever_spiders_aggregate_pushdown(cluster, head_service):
    service = head_service()
    headers = service.auth("ranker", "acme")
    words = ["tea", "green tea", "coffee beans", "tea and coffee", "black tea leaves"]
    for n, text in enumerate(words * 3):
        scope = {"scope": "org"} if n % 2 else {}
        body = {"content": f"{text} note {n}", **scope}
        assert service.client.post("/v1/memory", json=body, headers=headers).status_code == 201
    queries = ["tea", "coffee", "green tea leaves", "note"]
    off = _ranked(service, headers, queries)
    # "tea" is in 4 of the 5 texts, each saved 3 times.
    assert all(off) and len(off[0]) == 12
    head = make_engine(cluster.head, 1)
    try:
        with head.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL spider_direct_aggregate = ON")
        # A new app: its connections take the setting when they open.
        pushed = head_service()
        assert _ranked(pushed, headers, queries) == off
    finally:
        with head.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL spider_direct_aggregate = OFF")
        head.dispose()
