"""Two users on one server: neither can see, fetch or delete the other's memories."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from contract import assert_problem, row_counts
from memory_bank.ids import new_id, utcnow
from memory_bank.store.schema import memory_tombstone


def test_other_users_memory_is_indistinguishable_from_a_missing_one(service):
    alice, bob = service.auth("alice"), service.auth("bob")
    r = service.client.post(
        "/v1/memory",
        json={"content": "Alice's secret project is called Falcon", "tags": ["falcon"]},
        headers=alice,
    )
    mid = r.json()["memory"]["id"]
    missing = "mem_" + "0" * 26
    before = row_counts(service.engine)

    for method in ("get", "delete"):
        theirs = getattr(service.client, method)(f"/v1/memory/{mid}", headers=bob)
        never = getattr(service.client, method)(f"/v1/memory/{missing}", headers=bob)
        assert_problem(theirs, 404, "memory_not_found")
        assert theirs.json() == never.json()
        assert dict(theirs.headers).keys() == dict(never.headers).keys()

    assert row_counts(service.engine) == before
    assert service.client.get(f"/v1/memory/{mid}", headers=alice).status_code == 200


def test_other_users_memories_never_appear_in_list_or_search(service):
    alice, bob = service.auth("alice"), service.auth("bob")
    for i in range(5):
        service.client.post("/v1/memory", json={"content": f"falcon note {i}"}, headers=alice)
    service.client.post("/v1/memory", json={"content": "bob likes falcons too"}, headers=bob)

    listed = service.client.get("/v1/memory", params={"limit": 100}, headers=bob).json()
    assert [m["content"] for m in listed["memories"]] == ["bob likes falcons too"]
    found = service.client.get("/v1/memory/search", params={"q": "falcon"}, headers=bob).json()
    assert [m["content"] for m in found["results"]] == ["bob likes falcons too"]
    found = service.client.get("/v1/memory/search", params={"q": "note"}, headers=bob).json()
    assert found == {"results": [], "mode": "lexical"}

    mine = service.client.get("/v1/memory/search", params={"q": "falcon"}, headers=alice).json()
    assert len(mine["results"]) == 5


def test_scores_do_not_depend_on_other_users_data(service):
    alice, bob = service.auth("alice"), service.auth("bob")
    service.client.post("/v1/memory", json={"content": "kiwi smoothie recipe"}, headers=alice)
    service.client.post("/v1/memory", json={"content": "banana bread"}, headers=alice)
    q = {"q": "kiwi"}
    first = service.client.get("/v1/memory/search", params=q, headers=alice).json()["results"]
    for i in range(20):
        service.client.post("/v1/memory", json={"content": f"kiwi kiwi {i}"}, headers=bob)
    again = service.client.get("/v1/memory/search", params=q, headers=alice).json()["results"]
    assert [(m["id"], m["score"]) for m in again] == [(m["id"], m["score"]) for m in first]


def test_same_user_with_two_keys_sees_the_same_memories(service):
    laptop = service.auth("alice", source="laptop")
    phone = service.auth("alice", source="phone")
    mid = service.client.post("/v1/memory", json={"content": "shared"}, headers=laptop).json()[
        "memory"
    ]["id"]
    got = service.client.get(f"/v1/memory/{mid}", headers=phone).json()["memory"]
    assert got["source"] == "laptop"


def test_user_ids_are_compared_exactly(service):
    # Binary collation on MariaDB: "Alice" is another user, not an alias of "alice".
    service.client.post("/v1/memory", json={"content": "lower"}, headers=service.auth("alice"))
    for other in ("Alice", "ALICE", "alicé"):
        r = service.client.get("/v1/memory", headers=service.auth(other))
        assert r.json()["memories"] == [], other


@pytest.mark.parametrize("user", ["alice ", " alice", "alice\t", "al\nice", "", "u" * 129])
def test_user_ids_that_could_alias_another_are_refused(service, user):
    # MariaDB ignores trailing spaces when comparing VARCHARs, so "alice " must never exist.
    with pytest.raises(ValueError):
        service.key(user)


def test_a_repeated_delete_succeeds_for_its_owner_only(service):
    alice, bob = service.auth("alice"), service.auth("bob")
    mid = service.client.post("/v1/memory", json={"content": "Alice's plan"}, headers=alice).json()[
        "memory"
    ]["id"]
    assert service.client.delete(f"/v1/memory/{mid}", headers=alice).status_code == 204
    # deleteMemoryById is idempotent, as its MCP annotation says: a retry succeeds.
    again = service.client.delete(f"/v1/memory/{mid}", headers=alice)
    assert again.status_code == 204 and again.content == b""
    assert service.client.get(f"/v1/memory/{mid}", headers=alice).status_code == 404
    # For anyone else the deleted id is what it always was: exactly a missing one.
    theirs = service.client.delete(f"/v1/memory/{mid}", headers=bob)
    never = service.client.delete(f"/v1/memory/{new_id('mem')}", headers=bob)
    assert_problem(theirs, 404, "memory_not_found", "id")
    assert theirs.json() == never.json()
    # The tombstone keeps the id and the time, never what the memory said.
    with service.engine.connect() as conn:
        rows = conn.execute(sa.select(memory_tombstone)).all()
    assert [(r.user_id, r.memory_id) for r in rows] == [("alice", mid)]
    assert set(memory_tombstone.c.keys()) == {"user_id", "memory_id", "deleted_at"}
    # It is kept for a day: after that a retry is a plain 404 again.
    with service.engine.begin() as conn:
        conn.execute(sa.update(memory_tombstone).values(deleted_at=utcnow() - timedelta(hours=25)))
    assert service.client.delete(f"/v1/memory/{mid}", headers=alice).status_code == 404
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_tombstone)).scalar() == 0
