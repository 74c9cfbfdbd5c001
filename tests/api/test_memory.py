"""The memory operations' success paths and shapes, on both engines."""

from __future__ import annotations

import re

import sqlalchemy as sa

from memory_bank.store.schema import memory, memory_context, memory_term

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_post_memory_returns_the_memory_with_location(service):
    headers = service.auth(source="claude-desktop")
    body = {
        "content": "  We dropped Acme as a vendor after the Q3 price change.  ",
        "tags": ["vendors", "acme"],
        "contexts": [
            {
                "snippet": "Let's drop Acme, the new pricing is too high.",
                "conversation_id": "conv-1",
                "message_id": "msg-7",
                "origin": "active_conversation",
            },
            {"snippet": "Earlier note", "origin": None},
        ],
    }
    r = service.client.post("/v1/memory", json=body, headers=headers)
    assert r.status_code == 201, r.text
    mem = r.json()["memory"]
    assert r.headers["location"] == f"/v1/memory/{mem['id']}"
    assert mem["id"].startswith("mem_")
    assert mem["content"] == "We dropped Acme as a vendor after the Q3 price change."
    assert mem["tags"] == ["vendors", "acme"]
    assert mem["scope"] == "user"
    assert mem["source"] == "claude-desktop"
    assert ISO_MS.match(mem["created_at"]) and ISO_MS.match(mem["updated_at"])
    first, second = mem["contexts"]
    assert first["id"].startswith("mctx_")
    assert first["citation"] == {"conversation_id": "conv-1", "message_id": "msg-7"}
    assert first["origin"] == "active_conversation"
    assert second["citation"] is None and second["origin"] is None
    got = service.client.get(f"/v1/memory/{mem['id']}", headers=headers)
    assert got.status_code == 200
    assert got.json()["memory"] == mem


def test_source_in_body_is_overridden_and_scope_user_stays_personal(service):
    headers = service.auth(source="vscode")
    r = service.client.post(
        "/v1/memory",
        json={"content": "Prefers tabs", "scope": "user", "source": "evil"},
        headers=headers,
    )
    assert r.status_code == 201
    assert r.json()["memory"]["scope"] == "user"
    assert r.json()["memory"]["source"] == "vscode"
    assert "created_by" not in r.json()["memory"]


def test_search_ranks_and_scores(service):
    headers = service.auth()
    for text in (
        "We dropped Acme as a vendor after the Q3 price change",
        "The team lunch is on Fridays",
        "Acme support phone line is slow",
    ):
        assert (
            service.client.post("/v1/memory", json={"content": text}, headers=headers).status_code
            == 201
        )
    r = service.client.get(
        "/v1/memory/search",
        params={"q": "what did I decide about the Acme vendor?"},
        headers=headers,
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert results[0]["content"].startswith("We dropped Acme")
    assert len(results) == 2
    assert results[0]["score"] > results[1]["score"] > 0


def test_search_without_match_is_empty_200(service):
    headers = service.auth()
    service.client.post("/v1/memory", json={"content": "hello world"}, headers=headers)
    r = service.client.get("/v1/memory/search", params={"q": "zebra"}, headers=headers)
    assert r.status_code == 200 and r.json() == {"results": [], "mode": "lexical"}


def test_search_limit(service):
    headers = service.auth()
    for i in range(5):
        service.client.post(
            "/v1/memory", json={"content": f"note about apples {i}"}, headers=headers
        )
    r = service.client.get("/v1/memory/search", params={"q": "apples", "limit": 3}, headers=headers)
    assert len(r.json()["results"]) == 3


def test_delete_removes_memory_contexts_and_postings(service):
    headers = service.auth()
    r = service.client.post(
        "/v1/memory",
        json={"content": "delete me soon", "contexts": [{"snippet": "a"}, {"snippet": "b"}]},
        headers=headers,
    )
    mid = r.json()["memory"]["id"]
    assert service.client.delete(f"/v1/memory/{mid}", headers=headers).status_code == 204
    assert service.client.get(f"/v1/memory/{mid}", headers=headers).status_code == 404
    # A retried delete succeeds again (deleteMemoryById is idempotent).
    assert service.client.delete(f"/v1/memory/{mid}", headers=headers).status_code == 204
    with service.engine.connect() as conn:
        for table in (memory, memory_context, memory_term):
            left = conn.execute(
                sa.select(sa.func.count()).select_from(table).where(table.c.user_id == "alice")
            ).scalar()
            assert left == 0, table.name
    r = service.client.get("/v1/memory/search", params={"q": "delete"}, headers=headers)
    assert r.json() == {"results": [], "mode": "lexical"}


def test_unicode_and_emoji_round_trip(service):
    headers = service.auth()
    text = "Zoë prefers 寿司 🍣 over 🍕 — naïve café ≠ cafe 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"
    r = service.client.post(
        "/v1/memory",
        json={"content": text, "tags": ["食べ物", "🍣"], "contexts": [{"snippet": "😀 emoji ok"}]},
        headers=headers,
    )
    assert r.status_code == 201, r.text
    mid = r.json()["memory"]["id"]
    got = service.client.get(f"/v1/memory/{mid}", headers=headers).json()["memory"]
    assert got["content"] == text
    assert got["tags"] == ["食べ物", "🍣"]
    assert got["contexts"][0]["snippet"] == "😀 emoji ok"
    found = service.client.get("/v1/memory/search", params={"q": "寿司"}, headers=headers).json()
    assert [x["id"] for x in found["results"]] == [mid]


def test_list_is_newest_first_with_cursor(service):
    headers = service.auth()
    ids = []
    for i in range(7):
        ids.append(
            service.client.post("/v1/memory", json={"content": f"m{i}"}, headers=headers).json()[
                "memory"
            ]["id"]
        )
    seen = []
    cursor = None
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = service.client.get("/v1/memory", params=params, headers=headers).json()
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))


def test_cursor_walk_sees_each_memory_once_while_others_are_added(service):
    headers = service.auth()
    before = [
        service.client.post("/v1/memory", json={"content": f"old {i}"}, headers=headers).json()[
            "memory"
        ]["id"]
        for i in range(10)
    ]
    seen = []
    cursor = None
    added = 0
    while True:
        params = {"limit": 4} | ({"cursor": cursor} if cursor else {})
        page = service.client.get("/v1/memory", params=params, headers=headers).json()
        seen += [m["id"] for m in page["memories"]]
        service.client.post("/v1/memory", json={"content": f"new {added}"}, headers=headers)
        added += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen))
    assert seen == list(reversed(before))


def test_health_and_readiness(service):
    assert service.client.get("/healthz").json() == {"status": "ok"}
    assert service.client.get("/readyz").json() == {"status": "ready"}


def test_spec_is_served(service):
    r = service.client.get("/openapi.json")
    assert r.status_code == 200
    ops = {
        op["operationId"]
        for item in r.json()["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    assert {
        "postMemory",
        "getMemorySearch",
        "getMemory",
        "getMemoryById",
        "deleteMemoryById",
    } <= ops
    assert service.client.get("/docs/").status_code == 200


def test_cursor_walk_while_others_are_deleted_sees_each_survivor_once(service):
    headers = service.auth()
    ids = [
        service.client.post("/v1/memory", json={"content": f"m {i}"}, headers=headers).json()[
            "memory"
        ]["id"]
        for i in range(12)
    ]
    newest_first = list(reversed(ids))
    seen: list[str] = []
    deleted: set[str] = set()
    cursor = None
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = service.client.get("/v1/memory", params=params, headers=headers).json()
        seen += [m["id"] for m in page["memories"]]
        # Delete one memory not seen yet (and one already seen) before the next page.
        unseen = [i for i in newest_first if i not in seen and i not in deleted]
        for victim in unseen[1:2] + seen[:1]:
            if victim not in deleted:
                assert (
                    service.client.delete(f"/v1/memory/{victim}", headers=headers).status_code
                    == 204
                )
                deleted.add(victim)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen))
    assert seen == [i for i in newest_first if i in seen]
    assert set(newest_first) - deleted <= set(seen)
