"""Human review: drafts, the queue, confirm (with edits), reject, expiry and the audit trail."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from memory_bank.domain import review
from memory_bank.ids import utcnow
from memory_bank.store.schema import memory, memory_context, memory_draft, review_audit

AGENT = ("mcp:read", "mcp:write")
REVIEWER = ("mcp:read", "mcp:write", "memory:review")
DRAFT = {
    "content": "Alice prefers window seats on long flights",
    "tags": ["travel"],
    "contexts": [
        {
            "snippet": "I always take the window seat.",
            "conversation_id": "conv-9",
            "message_id": "msg-2",
            "origin": "active_conversation",
        }
    ],
}


def _save_draft(service, headers, body=DRAFT):
    r = service.client.post("/v1/memory", json=body, headers=headers)
    assert r.status_code == 202, r.text
    return r


def _audit(service, draft_id):
    with service.engine.connect() as conn:
        rows = conn.execute(
            sa.select(review_audit)
            .where(review_audit.c.draft_id == draft_id)
            .order_by(review_audit.c.id)
        ).all()
    return [r._mapping for r in rows]


def _count(service, table, user="alice"):
    with service.engine.connect() as conn:
        return conn.execute(
            sa.select(sa.func.count()).select_from(table).where(table.c.user_id == user)
        ).scalar()


def test_agent_save_is_pending_and_invisible(make_service):
    service = make_service(review_required=True)
    agent = service.auth(scopes=AGENT, source="claude-desktop")
    r = _save_draft(service, agent)
    body = r.json()
    assert body["status"] == "pending_review"
    assert body["message"] == review.SAVED_FOR_REVIEW
    draft = body["draft"]
    assert draft["id"].startswith("mdr_") and draft["status"] == "pending_review"
    assert r.headers["location"] == f"/v1/memory/drafts/{draft['id']}"
    assert draft["source"] == "claude-desktop"
    assert draft["contexts"][0]["citation"] == {"conversation_id": "conv-9", "message_id": "msg-2"}
    assert draft["expires_at"] > draft["created_at"]
    # Not a memory: no search, list or fetch sees it; only the draft route does.
    search = service.client.get("/v1/memory/search", params={"q": "window seats"}, headers=agent)
    assert search.json() == {"results": [], "mode": "lexical"}
    assert service.client.get("/v1/memory", headers=agent).json()["memories"] == []
    # A draft id is not a memory id at all (the spec's pattern): never a memory.
    assert service.client.get(f"/v1/memory/{draft['id']}", headers=agent).status_code == 400
    got = service.client.get(r.headers["location"], headers=agent)
    assert got.status_code == 200 and got.json() == {"draft": draft}
    assert _count(service, memory) == 0 and _count(service, memory_draft) == 1
    assert [a["action"] for a in _audit(service, draft["id"])] == ["created"]


def test_reviewer_saves_directly_even_when_review_is_required(make_service):
    service = make_service(review_required=True)
    r = service.client.post("/v1/memory", json=DRAFT, headers=service.auth(scopes=REVIEWER))
    assert r.status_code == 201 and r.json()["memory"]["id"].startswith("mem_")


def test_confirm_with_edits_makes_a_searchable_memory(make_service):
    service = make_service(review_required=True)
    agent = service.auth(scopes=AGENT, source="claude-desktop")
    reviewer_key = service.key(scopes=REVIEWER, source="panel")
    reviewer = {"Authorization": f"Bearer {reviewer_key}"}
    draft = _save_draft(service, agent).json()["draft"]
    queue = service.client.get("/v1/memory/drafts", headers=reviewer).json()
    assert [d["id"] for d in queue["drafts"]] == [draft["id"]] and queue["next_cursor"] is None
    r = service.client.post(
        f"/v1/memory/drafts/{draft['id']}/confirm",
        json={"content": "Alice prefers aisle seats on long flights", "tags": ["travel", "seats"]},
        headers=reviewer,
    )
    assert r.status_code == 201, r.text
    mem = r.json()["memory"]
    assert r.headers["location"] == f"/v1/memory/{mem['id']}"
    assert mem["content"] == "Alice prefers aisle seats on long flights"
    assert mem["tags"] == ["travel", "seats"]
    assert mem["source"] == "claude-desktop"  # who saved it, not who reviewed it
    assert mem["contexts"][0]["snippet"] == "I always take the window seat."
    found = service.client.get("/v1/memory/search", params={"q": "aisle"}, headers=agent).json()
    assert [x["id"] for x in found["results"]] == [mem["id"]]
    assert service.client.get(f"/v1/memory/drafts/{draft['id']}", headers=agent).status_code == 404
    assert service.client.get("/v1/memory/drafts", headers=reviewer).json()["drafts"] == []
    trail = _audit(service, draft["id"])
    assert [a["action"] for a in trail] == ["created", "edited_and_confirmed"]
    assert trail[1]["memory_id"] == mem["id"] and trail[1]["actor_source"] == "panel"
    assert trail[1]["actor_key_id"] != trail[0]["actor_key_id"]
    again = service.client.post(f"/v1/memory/drafts/{draft['id']}/confirm", headers=reviewer)
    assert again.status_code == 404 and again.json()["code"] == "draft_not_found"


def test_confirm_without_body_keeps_the_draft_as_written(make_service):
    service = make_service(review_required=True)
    draft = _save_draft(service, service.auth(scopes=AGENT)).json()["draft"]
    r = service.client.post(
        f"/v1/memory/drafts/{draft['id']}/confirm", headers=service.auth(scopes=REVIEWER)
    )
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["content"] == DRAFT["content"]
    assert r.json()["memory"]["tags"] == ["travel"]
    assert [a["action"] for a in _audit(service, draft["id"])] == ["created", "confirmed"]


def test_bad_edit_is_400_and_the_draft_stays(make_service):
    service = make_service(review_required=True)
    draft = _save_draft(service, service.auth(scopes=AGENT)).json()["draft"]
    reviewer = service.auth(scopes=REVIEWER)
    r = service.client.post(
        f"/v1/memory/drafts/{draft['id']}/confirm", json={"content": "   "}, headers=reviewer
    )
    assert r.status_code == 400 and r.json()["field"] == "content"
    assert _count(service, memory) == 0 and _count(service, memory_draft) == 1


def test_reject_leaves_nothing_but_the_audit(make_service):
    service = make_service(review_required=True)
    agent = service.auth(scopes=AGENT)
    reviewer = service.auth(scopes=REVIEWER)
    draft = _save_draft(service, agent).json()["draft"]
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/reject", headers=reviewer)
    assert r.status_code == 204
    assert _count(service, memory) == 0 and _count(service, memory_context) == 0
    assert _count(service, memory_draft) == 0
    assert service.client.get(f"/v1/memory/drafts/{draft['id']}", headers=agent).status_code == 404
    assert [a["action"] for a in _audit(service, draft["id"])] == ["created", "rejected"]
    again = service.client.post(f"/v1/memory/drafts/{draft['id']}/reject", headers=reviewer)
    assert again.status_code == 404


def test_expired_drafts_are_gone_and_purged(make_service):
    service = make_service(review_required=True, draft_ttl_hours=1)
    agent = service.auth(scopes=AGENT)
    reviewer = service.auth(scopes=REVIEWER)
    old = _save_draft(service, agent).json()["draft"]
    fresh = _save_draft(service, agent, {"content": "A fresh draft"}).json()["draft"]
    with service.engine.begin() as conn:
        conn.execute(
            sa.update(memory_draft)
            .where(memory_draft.c.user_id == "alice", memory_draft.c.id == old["id"])
            .values(expires_at=utcnow() - timedelta(minutes=1))
        )
    # Gone everywhere at once, before any purge ran.
    assert service.client.get(f"/v1/memory/drafts/{old['id']}", headers=agent).status_code == 404
    confirm = service.client.post(f"/v1/memory/drafts/{old['id']}/confirm", headers=reviewer)
    assert confirm.status_code == 404
    assert (
        service.client.post(f"/v1/memory/drafts/{old['id']}/reject", headers=reviewer).status_code
        == 404
    )
    queue = service.client.get("/v1/memory/drafts", headers=reviewer).json()["drafts"]
    assert [d["id"] for d in queue] == [fresh["id"]]
    # Reads write nothing: the expired row stays until the user's next save (or the sweep).
    assert _count(service, memory_draft) == 2
    latest = _save_draft(service, agent, {"content": "The latest draft"}).json()["draft"]
    # That save purged the expired one, with an audit row and no content left.
    assert _count(service, memory_draft) == 2 and _count(service, memory) == 0
    assert {
        d["id"] for d in service.client.get("/v1/memory/drafts", headers=reviewer).json()["drafts"]
    } == {fresh["id"], latest["id"]}
    trail = _audit(service, old["id"])
    assert [a["action"] for a in trail] == ["created", "expired"]
    assert trail[1]["actor_key_id"] is None


def test_sweep_purges_every_users_expired_drafts(make_service):
    service = make_service(review_required=True)
    for user in ("alice", "bob"):
        _save_draft(service, service.auth(user, scopes=AGENT))
    with service.engine.begin() as conn:
        conn.execute(
            sa.update(memory_draft)
            .where(memory_draft.c.user_id.in_(["alice", "bob"]))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    assert review.sweep(service.db) == 2
    assert _count(service, memory_draft, "alice") == _count(service, memory_draft, "bob") == 0
    assert _count(service, review_audit, "bob") == 2


def test_agent_cannot_confirm_or_reject_its_own_draft(make_service):
    service = make_service(review_required=True)
    agent = service.auth(scopes=AGENT)
    draft = _save_draft(service, agent).json()["draft"]
    for action in ("confirm", "reject"):
        r = service.client.post(f"/v1/memory/drafts/{draft['id']}/{action}", headers=agent)
        assert r.status_code == 403, action
        assert r.json()["code"] == "insufficient_scope"
        assert r.json()["required_scope"] == "memory:review"
    assert service.client.get("/v1/memory/drafts", headers=agent).status_code == 403
    assert _count(service, memory) == 0 and _count(service, memory_draft) == 1


def test_another_users_draft_is_404(make_service):
    service = make_service(review_required=True)
    draft = _save_draft(service, service.auth("alice", scopes=AGENT)).json()["draft"]
    bob = service.auth("bob", scopes=REVIEWER)
    assert service.client.get(f"/v1/memory/drafts/{draft['id']}", headers=bob).status_code == 404
    for action in ("confirm", "reject"):
        r = service.client.post(f"/v1/memory/drafts/{draft['id']}/{action}", headers=bob)
        assert r.status_code == 404 and r.json()["code"] == "draft_not_found"
    assert service.client.get("/v1/memory/drafts", headers=bob).json()["drafts"] == []
    assert _count(service, memory_draft, "alice") == 1 and _count(service, memory, "bob") == 0


def test_malformed_draft_ids_are_400_and_unknown_ones_404(make_service):
    service = make_service(review_required=True)
    reviewer = service.auth(scopes=REVIEWER)
    for bad in ("nope", "mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C", "mdr_lowercase"):
        r = service.client.get(f"/v1/memory/drafts/{bad}", headers=reviewer)
        assert r.status_code == 400 and r.json()["field"] == "id", r.text
    r = service.client.get("/v1/memory/drafts/mdr_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C", headers=reviewer)
    assert r.status_code == 404 and r.json()["field"] == "id", r.text


def test_per_user_opt_in(make_service):
    service = make_service(review_required=False)
    agent = service.auth(scopes=AGENT)
    owner = service.auth(scopes=REVIEWER)
    bob_agent = service.auth("bob", scopes=AGENT)
    assert service.client.post("/v1/memory", json=DRAFT, headers=agent).status_code == 201
    settings = service.client.get("/v1/memory/settings", headers=agent).json()
    assert settings == {
        "review_required": False,
        "server_review_required": False,
        "review_in_effect": False,
        "draft_ttl_hours": 168,
    }
    # An agent cannot switch review off (or on) for its owner.
    r = service.client.put("/v1/memory/settings", json={"review_required": True}, headers=agent)
    assert r.status_code == 403
    r = service.client.put("/v1/memory/settings", json={"review_required": True}, headers=owner)
    assert r.status_code == 200 and r.json()["review_in_effect"] is True
    assert service.client.post("/v1/memory", json=DRAFT, headers=agent).status_code == 202
    assert service.client.post("/v1/memory", json=DRAFT, headers=owner).status_code == 201
    # Bob did not opt in.
    assert service.client.post("/v1/memory", json=DRAFT, headers=bob_agent).status_code == 201
    r = service.client.put("/v1/memory/settings", json={"review_required": False}, headers=owner)
    assert r.json()["review_required"] is False
    assert service.client.post("/v1/memory", json=DRAFT, headers=agent).status_code == 201
    bad = service.client.put("/v1/memory/settings", json={"review_required": "yes"}, headers=owner)
    assert bad.status_code == 400


def test_server_setting_wins_over_user_opt_out(make_service):
    service = make_service(review_required=True)
    owner = service.auth(scopes=REVIEWER)
    r = service.client.put("/v1/memory/settings", json={"review_required": False}, headers=owner)
    assert r.json()["review_in_effect"] is True and r.json()["server_review_required"] is True
    _save_draft(service, service.auth(scopes=AGENT))


def test_queue_pages_newest_first(make_service):
    service = make_service(review_required=True)
    agent = service.auth(scopes=AGENT)
    reviewer = service.auth(scopes=REVIEWER)
    ids = [
        _save_draft(service, agent, {"content": f"d{i}"}).json()["draft"]["id"] for i in range(5)
    ]
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = service.client.get("/v1/memory/drafts", params=params, headers=reviewer).json()
        seen += [d["id"] for d in page["drafts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
