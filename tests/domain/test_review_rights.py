"""Confirming a draft with changes is an edit: it needs the rights a direct edit needs, on
both engines; a reviewer without them confirms or rejects as proposed."""

from __future__ import annotations

import sqlalchemy as sa

from contract import assert_problem
from memory_bank.store.schema import memory, memory_draft

MEMBER = ("mcp:read", "mcp:write", "org:write")
ADMIN = (*MEMBER, "org:admin")
REVIEW = "memory:review"


def _org(make_service):
    service = make_service(review_required=True)
    people = {
        # Alice's own reviewing key saves directly; her agent's saves and edits wait.
        "alice": service.auth("alice", org="acme", scopes=(*MEMBER, REVIEW), source="panel"),
        "agent": service.auth("alice", org="acme", scopes=MEMBER, source="claude-desktop"),
        # Bob reviews, and may neither write nor edit others' org memories.
        "bob": service.auth("bob", org="acme", scopes=("mcp:read", REVIEW), source="bob-panel"),
        "erin": service.auth("erin", org="acme", scopes=(*ADMIN, REVIEW), source="erin-panel"),
    }
    return service, people


def _org_memory(service, people):
    r = service.client.post(
        "/v1/memory",
        json={"content": "Deploys go out on Tuesdays", "tags": ["ops"], "scope": "org"},
        headers=people["alice"],
    )
    assert r.status_code == 201, r.text
    return r.json()["memory"]["id"]


def _edit_draft(service, people, mid, text="Deploys go out on Wednesdays"):
    r = service.client.patch(f"/v1/memory/{mid}", json={"content": text}, headers=people["agent"])
    assert r.status_code == 202, r.text
    return r.json()["draft"]["id"]


def _confirm(service, headers, draft_id, changes=None):
    url = f"/v1/memory/drafts/{draft_id}/confirm"
    return service.client.post(url, json=changes, headers=headers)


def _history(service, people, mid):
    r = service.client.get(f"/v1/memory/{mid}/revisions", headers=people["bob"])
    return [(h["revision"], h["content"], h["source"]) for h in r.json()["revisions"]]


def test_reviewer_without_edit_rights_confirms_an_org_edit_only_as_proposed(make_service):
    service, people = _org(make_service)
    mid = _org_memory(service, people)
    draft = _edit_draft(service, people, mid)
    direct = service.client.patch(
        f"/v1/memory/{mid}", json={"content": "Mine"}, headers=people["bob"]
    )
    assert_problem(direct, 403, "insufficient_scope")
    for changes in ({"content": "Deploys are frozen"}, {"tags": ["ops", "frozen"]}):
        r = _confirm(service, people["bob"], draft, changes)
        assert assert_problem(r, 403, "insufficient_scope")["required_scope"] == "org:admin"
    # Nothing moved: the memory, its history and the draft are as they were.
    got = service.client.get(f"/v1/memory/{mid}", headers=people["bob"]).json()["memory"]
    assert (got["content"], got["revision"]) == ("Deploys go out on Tuesdays", 1)
    assert _history(service, people, mid) == [(1, "Deploys go out on Tuesdays", "panel")]
    still = service.client.get(f"/v1/memory/drafts/{draft}", headers=people["bob"])
    assert still.status_code == 200
    # As proposed (the draft's own words sent back count as no change) it goes through.
    r = _confirm(service, people["bob"], draft, {"content": "Deploys go out on Wednesdays"})
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 2, r.text
    assert _history(service, people, mid)[0] == (
        2,
        "Deploys go out on Wednesdays",
        "claude-desktop",
    )


def test_a_reviewer_who_changes_the_text_is_its_revisions_source(make_service):
    service, people = _org(make_service)
    mid = _org_memory(service, people)
    draft = _edit_draft(service, people, mid)
    r = _confirm(service, people["erin"], draft, {"content": "Deploys go out on Thursdays"})
    assert r.status_code == 200, r.text
    assert _history(service, people, mid)[0] == (2, "Deploys go out on Thursdays", "erin-panel")
    # The memory's creator may change its agent's proposal (org:write, her own memory).
    second = _edit_draft(service, people, mid, "Deploys go out on Fridays")
    r = _confirm(service, people["alice"], second, {"tags": ["ops", "friday"]})
    assert r.status_code == 200, r.text
    assert _history(service, people, mid)[0] == (3, "Deploys go out on Fridays", "panel")


def test_reviewer_without_rights_confirms_an_org_save_only_as_proposed(make_service):
    service, people = _org(make_service)
    r = service.client.post(
        "/v1/memory",
        json={"content": "Customer X pays in EUR", "scope": "org"},
        headers=people["agent"],
    )
    assert r.status_code == 202, r.text
    draft = r.json()["draft"]["id"]
    denied = _confirm(service, people["bob"], draft, {"content": "Customer X pays in USD"})
    assert_problem(denied, 403, "insufficient_scope")
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 0
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_draft)).scalar() == 1
    r = _confirm(service, people["bob"], draft)
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["content"] == "Customer X pays in EUR"
    assert r.json()["memory"]["created_by"] == "alice"
    # An admin reviewer may change an org save before it is kept.
    r = service.client.post(
        "/v1/memory",
        json={"content": "Customer Y pays late", "scope": "org"},
        headers=people["agent"],
    )
    changed = _confirm(
        service, people["erin"], r.json()["draft"]["id"], {"content": "Customer Y pays on time"}
    )
    assert (
        changed.status_code == 201
        and changed.json()["memory"]["content"] == "Customer Y pays on time"
    )
