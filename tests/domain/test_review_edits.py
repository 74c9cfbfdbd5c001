"""Review applies to edits: an agent's PATCH becomes a draft of the edit, on both engines."""

from __future__ import annotations

import sqlalchemy as sa

from contract import assert_problem
from memory_bank.domain import review
from memory_bank.store.schema import memory_draft, memory_revision

AGENT = ("mcp:read", "mcp:write")
REVIEWER = ("mcp:read", "mcp:write", "memory:review")
MERGE = {"Content-Type": "application/merge-patch+json"}


def _setup(make_service, **changes):
    service = make_service(review_required=True, **changes)
    agent = service.auth(scopes=AGENT, source="claude-desktop")
    reviewer = service.auth(scopes=REVIEWER, source="panel")
    r = service.client.post(
        "/v1/memory",
        json={"content": "We signed Acme in March", "tags": ["acme"]},
        headers=reviewer,
    )
    assert r.status_code == 201, r.text
    return service, agent, reviewer, r.json()["memory"]


def _propose(service, agent, mid, body):
    r = service.client.patch(f"/v1/memory/{mid}", json=body, headers={**agent, **MERGE})
    assert r.status_code == 202, r.text
    return r.json()


def _memory(service, headers, mid):
    return service.client.get(f"/v1/memory/{mid}", headers=headers).json()["memory"]


def test_agent_edit_becomes_a_draft_and_confirm_applies_it(make_service):
    service, agent, reviewer, mem = _setup(make_service)
    envelope = _propose(service, agent, mem["id"], {"content": "We re-signed Acme in January"})
    assert envelope["status"] == "pending_review" and envelope["message"] == review.EDIT_FOR_REVIEW
    draft = envelope["draft"]
    assert draft["memory_id"] == mem["id"] and draft["base_revision"] == 1
    assert draft["content"] == "We re-signed Acme in January" and draft["tags"] == ["acme"]
    # Nothing changed yet: the memory, its search and its history are as they were.
    assert _memory(service, agent, mem["id"])["content"] == "We signed Acme in March"
    queue = service.client.get("/v1/memory/drafts", headers=reviewer).json()["drafts"]
    assert [d["memory_id"] for d in queue] == [mem["id"]]
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/confirm", headers=reviewer)
    assert r.status_code == 200, r.text
    edited = r.json()["memory"]
    assert edited["revision"] == 2 and r.headers["etag"] == '"2"'
    assert edited["content"] == "We re-signed Acme in January"
    found = service.client.get("/v1/memory/search", params={"q": "January"}, headers=agent)
    assert [m["id"] for m in found.json()["results"]] == [mem["id"]]
    history = service.client.get(f"/v1/memory/{mem['id']}/revisions", headers=agent).json()
    # The revision names the agent that proposed it, not the person who confirmed it.
    assert [(h["revision"], h["source"]) for h in history["revisions"]] == [
        (2, "claude-desktop"),
        (1, "panel"),
    ]


def test_reject_leaves_the_memory_as_it_was(make_service):
    service, agent, reviewer, mem = _setup(make_service)
    draft = _propose(service, agent, mem["id"], {"tags": ["vendors"]})["draft"]
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/reject", headers=reviewer)
    assert r.status_code == 204
    assert _memory(service, agent, mem["id"]) == mem
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_revision)).scalar() == 0
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_draft)).scalar() == 0


def test_confirm_after_a_concurrent_edit_is_412_and_the_draft_stays(make_service):
    service, agent, reviewer, mem = _setup(make_service)
    draft = _propose(service, agent, mem["id"], {"content": "Acme renewed in January"})["draft"]
    direct = service.client.patch(
        f"/v1/memory/{mem['id']}", json={"content": "Acme renewed in February"}, headers=reviewer
    )
    assert direct.status_code == 200 and direct.json()["memory"]["revision"] == 2
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/confirm", headers=reviewer)
    assert assert_problem(r, 412, "revision_conflict")["revision"] == 2
    assert _memory(service, agent, mem["id"])["content"] == "Acme renewed in February"
    still = service.client.get(f"/v1/memory/drafts/{draft['id']}", headers=agent)
    assert still.status_code == 200


def test_no_op_edit_under_review_makes_no_draft(make_service):
    service, agent, _, mem = _setup(make_service)
    r = service.client.patch(
        f"/v1/memory/{mem['id']}", json={"tags": ["acme"]}, headers={**agent, **MERGE}
    )
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 1
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_draft)).scalar() == 0


def test_stale_if_match_is_412_before_any_draft(make_service):
    service, agent, _, mem = _setup(make_service)
    r = service.client.patch(
        f"/v1/memory/{mem['id']}",
        json={"content": "x"},
        headers={**agent, **MERGE, "If-Match": '"7"'},
    )
    assert_problem(r, 412, "revision_conflict")


def test_edit_drafts_count_against_the_quota(make_service):
    service = make_service(review_required=True, max_memories_per_user=2)
    agent = service.auth(scopes=AGENT, source="claude-desktop")
    reviewer = service.auth(scopes=REVIEWER, source="panel")
    saved = service.client.post(
        "/v1/memory", json={"content": "Acme pays net 30"}, headers=reviewer
    )
    mid = saved.json()["memory"]["id"]
    first = _propose(service, agent, mid, {"content": "Acme pays net 45"})["draft"]
    # One memory and one waiting draft fill a quota of 2: more drafts of edits are refused.
    r = service.client.patch(
        f"/v1/memory/{mid}", json={"content": "Acme pays net 60"}, headers={**agent, **MERGE}
    )
    assert assert_problem(r, 409, "quota_exceeded")["limit"] == 2
    # Memories and waiting drafts count together, for a save that needs no review too.
    direct = service.client.post("/v1/memory", json={"content": "Globex"}, headers=reviewer)
    assert_problem(direct, 409, "quota_exceeded")
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_draft)).scalar() == 1
    # Deciding a draft frees its place.
    confirmed = service.client.post(f"/v1/memory/drafts/{first['id']}/confirm", headers=reviewer)
    assert confirmed.status_code == 200, confirmed.text
    _propose(service, agent, mid, {"content": "Acme pays net 60"})


def test_confirming_an_edit_drops_revisions_past_the_limit(make_service):
    service, agent, reviewer, mem = _setup(make_service, max_revisions_per_memory=2)
    mid = mem["id"]
    for text in ("Acme renewed in May", "Acme renewed in June"):
        direct = service.client.patch(f"/v1/memory/{mid}", json={"content": text}, headers=reviewer)
        assert direct.status_code == 200
    draft = _propose(service, agent, mid, {"content": "Acme renewed in July"})["draft"]
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/confirm", headers=reviewer)
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 4
    history = service.client.get(f"/v1/memory/{mid}/revisions", headers=agent).json()
    assert [h["revision"] for h in history["revisions"]] == [4, 3]
    assert history["dropped_revisions"] == 2
