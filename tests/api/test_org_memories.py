"""Organisation memories through the API, on both engines: saving, finding, deleting, review
and the audit log."""

from __future__ import annotations

import sqlalchemy as sa

from contract import assert_problem
from memory_bank.store.schema import memory, memory_term, memory_user_stats

READ_WRITE = ("mcp:read", "mcp:write")
MEMBER = (*READ_WRITE, "org:write")
ADMIN = (*READ_WRITE, "org:write", "org:admin")


def _save(service, headers, content, scope=None):
    body = {"content": content, "tags": ["t"]}
    if scope is not None:
        body["scope"] = scope
    return service.client.post("/v1/memory", json=body, headers=headers)


def test_org_save_records_org_creator_and_source(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER, source="claude-desktop")
    r = _save(service, alice, "Deploys go out on Tuesdays", "org")
    assert r.status_code == 201, r.text
    mem = r.json()["memory"]
    assert mem["scope"] == "org" and mem["created_by"] == "alice"
    assert mem["source"] == "claude-desktop"
    with service.engine.connect() as conn:
        row = conn.execute(sa.select(memory).where(memory.c.id == mem["id"])).one()
    # The shard key of an org memory is its org.
    assert (row.user_id, row.org_id, row.created_by, row.scope) == (
        "org:acme",
        "acme",
        "alice",
        "org",
    )


def test_org_save_without_org_write_or_org_is_403_and_stores_nothing(service):
    no_write = service.auth("alice", org="acme", scopes=READ_WRITE)
    no_org = service.auth("dave", scopes=READ_WRITE)
    for headers in (no_write, no_org):
        assert_problem(
            _save(service, headers, "Shared secret plan", "org"), 403, "org_scope_forbidden"
        )
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 0
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_term)).scalar() == 0


def test_members_find_org_memories_with_scope_filter(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    bob = service.auth("bob", org="acme", scopes=READ_WRITE)
    shared = _save(service, alice, "The runbook: restart the queue worker first", "org").json()
    mine = _save(service, bob, "Bob prefers restarting the queue by hand").json()
    ids = {"shared": shared["memory"]["id"], "mine": mine["memory"]["id"]}
    got = service.client.get(f"/v1/memory/{ids['shared']}", headers=bob)
    assert got.status_code == 200 and got.json()["memory"]["created_by"] == "alice"

    def search(scope=None):
        params = {"q": "restart the queue"} | ({"scope": scope} if scope else {})
        r = service.client.get("/v1/memory/search", params=params, headers=bob)
        assert r.status_code == 200, r.text
        return {m["id"]: m["scope"] for m in r.json()["results"]}

    assert search() == {ids["shared"]: "org", ids["mine"]: "user"}
    assert search("all") == search()
    assert search("user") == {ids["mine"]: "user"}
    assert search("org") == {ids["shared"]: "org"}

    def listing(scope=None):
        params = {"scope": scope} if scope else {}
        return [
            m["id"]
            for m in service.client.get("/v1/memory", params=params, headers=bob).json()["memories"]
        ]

    assert listing() == [ids["mine"], ids["shared"]]
    assert listing("user") == [ids["mine"]]
    assert listing("org") == [ids["shared"]]
    assert_problem(
        service.client.get("/v1/memory", params={"scope": "everyone"}, headers=bob),
        400,
        "invalid_request",
        "scope",
    )


def test_listing_pages_merge_both_owners(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    made = [
        _save(service, alice, f"note {i}", "org" if i % 2 else None).json()["memory"]["id"]
        for i in range(5)
    ]
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = service.client.get("/v1/memory", params=params, headers=alice).json()
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(made, reverse=True)


def test_other_org_and_no_org_see_nothing(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    carol = service.auth("carol", org="other", scopes=ADMIN)
    dave = service.auth("dave", scopes=READ_WRITE)
    mid = _save(service, alice, "Acme's staging password rotation is monthly", "org").json()[
        "memory"
    ]["id"]
    for outsider in (carol, dave):
        r = service.client.get(f"/v1/memory/{mid}", headers=outsider)
        assert_problem(r, 404, "memory_not_found", "id")
        r = service.client.get(
            "/v1/memory/search", params={"q": "staging password"}, headers=outsider
        )
        assert r.json() == {"results": [], "mode": "lexical"}
        assert service.client.get("/v1/memory", headers=outsider).json()["memories"] == []
        assert_problem(
            service.client.delete(f"/v1/memory/{mid}", headers=outsider), 404, "memory_not_found"
        )
    assert service.client.get(f"/v1/memory/{mid}", headers=alice).status_code == 200


def test_delete_rules(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    bob = service.auth("bob", org="acme", scopes=MEMBER)
    bob_reader = service.auth("bob", org="acme", scopes=READ_WRITE)
    admin = service.auth("erin", org="acme", scopes=ADMIN)

    def shared(text):
        return _save(service, alice, text, "org").json()["memory"]["id"]

    first, second, third = shared("one"), shared("two"), shared("three")
    # A member without org:admin deleting another member's memory: readable, so 403.
    r = service.client.delete(f"/v1/memory/{first}", headers=bob)
    assert assert_problem(r, 403, "insufficient_scope")["required_scope"] == "org:admin"
    assert service.client.get(f"/v1/memory/{first}", headers=alice).status_code == 200
    # Its creator deletes it (org:write); a retry answers 204 again.
    assert service.client.delete(f"/v1/memory/{first}", headers=alice).status_code == 204
    assert service.client.delete(f"/v1/memory/{first}", headers=alice).status_code == 204
    assert_problem(service.client.get(f"/v1/memory/{first}", headers=bob), 404, "memory_not_found")
    # A retry by a member who could not have deleted it is not a 204.
    assert service.client.delete(f"/v1/memory/{first}", headers=bob_reader).status_code == 404
    # The creator without org:write on this key cannot delete it either.
    alice_reader = service.auth("alice", org="acme", scopes=READ_WRITE)
    r = service.client.delete(f"/v1/memory/{second}", headers=alice_reader)
    assert assert_problem(r, 403, "insufficient_scope")["required_scope"] == "org:write"
    # An admin deletes anyone's.
    assert service.client.delete(f"/v1/memory/{second}", headers=admin).status_code == 204
    assert service.client.delete(f"/v1/memory/{third}", headers=admin).status_code == 204


def test_one_orgs_saves_never_change_another_owners_scores(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    carol = service.auth("carol", org="other", scopes=MEMBER)
    dave = service.auth("dave", scopes=READ_WRITE)
    for headers, scope in ((carol, "org"), (dave, None), (alice, None)):
        for text in ("Invoices are sent monthly", "The invoice template lives in the wiki"):
            assert _save(service, headers, text, scope).status_code == 201

    def scores():
        out = {}
        for name, headers, params in (
            ("carol-org", carol, {"scope": "org"}),
            ("dave", dave, {}),
            ("alice-own", alice, {"scope": "user"}),
        ):
            r = service.client.get(
                "/v1/memory/search", params={"q": "invoice template", **params}, headers=headers
            )
            out[name] = [(m["id"], m["score"]) for m in r.json()["results"]]
        return out

    before = scores()
    assert all(before.values())
    for i in range(10):
        assert (
            _save(service, alice, f"invoice number {i} for the template", "org").status_code == 201
        )
    assert scores() == before
    with service.engine.connect() as conn:
        stats = dict(
            conn.execute(
                sa.select(memory_user_stats.c.user_id, memory_user_stats.c.doc_count)
            ).all()
        )
    assert stats == {"org:other": 2, "dave": 2, "alice": 2, "org:acme": 10}


def test_org_audit_log_is_paged_and_admin_only(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    admin = service.auth("erin", org="acme", scopes=ADMIN)
    other_admin = service.auth("carol", org="other", scopes=ADMIN)
    made = [_save(service, alice, f"shared {i}", "org").json()["memory"]["id"] for i in range(3)]
    _save(service, alice, "personal, not audited")
    assert service.client.delete(f"/v1/memory/{made[0]}", headers=admin).status_code == 204
    assert_problem(service.client.get("/v1/org/audit", headers=alice), 403, "insufficient_scope")
    entries, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        r = service.client.get("/v1/org/audit", params=params, headers=admin)
        assert r.status_code == 200, r.text
        entries += r.json()["entries"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert [(e["action"], e["memory_id"], e["actor"]) for e in entries] == [
        ("deleted", made[0], "erin"),
        ("created", made[2], "alice"),
        ("created", made[1], "alice"),
        ("created", made[0], "alice"),
    ]
    assert all("shared" not in str(e) for e in entries)
    # Another org's admin sees only its own (empty) log, and cannot use acme's cursor.
    assert service.client.get("/v1/org/audit", headers=other_admin).json()["entries"] == []
    first = service.client.get("/v1/org/audit", params={"limit": 1}, headers=admin).json()
    r = service.client.get(
        "/v1/org/audit", params={"cursor": first["next_cursor"]}, headers=other_admin
    )
    assert_problem(r, 400, "invalid_cursor", "cursor")


def test_org_saves_wait_for_review_and_an_org_reviewer_confirms(make_service):
    service = make_service(review_required=True)
    agent = service.auth("alice", org="acme", scopes=MEMBER)
    reviewer = service.auth("bob", org="acme", scopes=(*READ_WRITE, "memory:review"))
    outsider = service.auth("carol", org="other", scopes=(*MEMBER, "memory:review"))
    admin = service.auth("erin", org="acme", scopes=(*ADMIN,))
    r = _save(service, agent, "Customer X wants invoices in EUR", "org")
    assert r.status_code == 202, r.text
    draft = r.json()["draft"]
    assert draft["scope"] == "org" and draft["created_by"] == "alice"
    assert service.client.get(f"/v1/memory/drafts/{draft['id']}", headers=agent).status_code == 200
    # Not a memory yet, for anyone.
    r = service.client.get("/v1/memory/search", params={"q": "invoices EUR"}, headers=reviewer)
    assert r.json()["results"] == []
    queue = service.client.get("/v1/memory/drafts", headers=reviewer).json()["drafts"]
    assert [d["id"] for d in queue] == [draft["id"]]
    assert service.client.get("/v1/memory/drafts", headers=outsider).json()["drafts"] == []
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/confirm", headers=outsider)
    assert_problem(r, 404, "draft_not_found")
    r = service.client.post(f"/v1/memory/drafts/{draft['id']}/confirm", headers=reviewer)
    assert r.status_code == 201, r.text
    mem = r.json()["memory"]
    assert mem["scope"] == "org" and mem["created_by"] == "alice"
    r = service.client.get("/v1/memory/search", params={"q": "invoices EUR"}, headers=agent)
    assert [m["id"] for m in r.json()["results"]] == [mem["id"]]
    second = _save(service, agent, "Customer Y pays late", "org").json()["draft"]["id"]
    r = service.client.post(f"/v1/memory/drafts/{second}/reject", headers=reviewer)
    assert r.status_code == 204
    log = service.client.get("/v1/org/audit", headers=admin).json()["entries"]
    assert [(e["action"], e["actor"]) for e in log] == [
        ("rejected", "bob"),
        ("drafted", "alice"),
        ("confirmed", "bob"),
        ("drafted", "alice"),
    ]


def test_org_edits_follow_the_delete_rule_and_are_audited(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER)
    bob = service.auth("bob", org="acme", scopes=MEMBER)
    admin = service.auth("erin", org="acme", scopes=ADMIN)
    mid = _save(service, alice, "Deploys go out on Tuesdays", "org").json()["memory"]["id"]
    denied = service.client.patch(f"/v1/memory/{mid}", json={"content": "Mine"}, headers=bob)
    assert assert_problem(denied, 403, "insufficient_scope")["required_scope"] == "org:admin"
    own = service.client.patch(
        f"/v1/memory/{mid}", json={"content": "Deploys go out on Wednesdays"}, headers=alice
    )
    assert own.status_code == 200 and own.json()["memory"]["scope"] == "org"
    # Members read the history; the org's index follows the edit for everyone.
    history = service.client.get(f"/v1/memory/{mid}/revisions", headers=bob).json()["revisions"]
    assert [r["revision"] for r in history] == [2, 1]
    found = service.client.get("/v1/memory/search", params={"q": "Wednesdays"}, headers=bob)
    assert [m["id"] for m in found.json()["results"]] == [mid]
    restored = service.client.post(f"/v1/memory/{mid}/revisions/1/restore", headers=admin)
    assert restored.status_code == 200 and restored.json()["memory"]["revision"] == 3
    entries = service.client.get("/v1/org/audit", headers=admin).json()["entries"]
    assert [(e["action"], e["actor"]) for e in entries] == [
        ("edited", "erin"),
        ("edited", "alice"),
        ("created", "alice"),
    ]
    assert all("Deploys" not in str(e) for e in entries)
