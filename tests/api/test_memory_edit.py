"""Editing a memory: merge-patch, ETag/If-Match, revisions, restore and delete, on both
engines."""

from __future__ import annotations

import sqlalchemy as sa

from contract import assert_problem
from memory_bank.store.schema import memory_context, memory_revision, memory_user_stats

MERGE = {"Content-Type": "application/merge-patch+json"}


def _save(service, headers, content="We signed Acme in March", **extra):
    r = service.client.post("/v1/memory", json={"content": content, **extra}, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["memory"]


def _patch(service, headers, mid, body, if_match=None, merge=True):
    sent = {**headers, **(MERGE if merge else {})}
    if if_match is not None:
        sent["If-Match"] = if_match
    return service.client.patch(f"/v1/memory/{mid}", json=body, headers=sent)


def _search(service, headers, q):
    r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
    assert r.status_code == 200, r.text
    return [m["id"] for m in r.json()["results"]]


def test_save_answers_revision_1_and_an_etag(service):
    headers = service.auth()
    r = service.client.post("/v1/memory", json={"content": "Tabs over spaces"}, headers=headers)
    assert r.json()["memory"]["revision"] == 1 and r.headers["etag"] == '"1"'
    got = service.client.get(f"/v1/memory/{r.json()['memory']['id']}", headers=headers)
    assert got.headers["etag"] == '"1"' and got.json()["memory"]["revision"] == 1


def test_edit_content_moves_the_index_with_it(service):
    headers = service.auth()
    mem = _save(service, headers, "We signed Acme in March", tags=["vendors"])
    _save(service, headers, "Lunch is on Fridays")
    assert _search(service, headers, "March") == [mem["id"]]
    r = _patch(service, headers, mem["id"], {"content": "We re-signed Acme in January"})
    assert r.status_code == 200, r.text
    edited = r.json()["memory"]
    assert edited["revision"] == 2 and r.headers["etag"] == '"2"'
    assert edited["content"] == "We re-signed Acme in January" and edited["tags"] == ["vendors"]
    assert edited["id"] == mem["id"] and edited["created_at"] == mem["created_at"]
    assert _search(service, headers, "March") == []
    assert _search(service, headers, "January") == [mem["id"]]
    got = service.client.get(f"/v1/memory/{mem['id']}", headers=headers).json()["memory"]
    assert got == edited
    with service.engine.connect() as conn:
        # Still two documents in the statistics: the edit replaced one, it added none.
        stats = conn.execute(sa.select(memory_user_stats.c.doc_count)).scalar()
    assert stats == 2


def test_tags_and_contexts_are_replaced_whole(service):
    headers = service.auth()
    mem = _save(
        service,
        headers,
        tags=["a", "b"],
        contexts=[{"snippet": "first words"}, {"snippet": "second words"}],
    )
    body = {"tags": ["c"], "contexts": [{"snippet": "brand new snippet", "message_id": "m1"}]}
    r = _patch(service, headers, mem["id"], body, merge=False)  # plain application/json too
    assert r.status_code == 200, r.text
    edited = r.json()["memory"]
    assert edited["tags"] == ["c"] and edited["content"] == mem["content"]
    assert [c["snippet"] for c in edited["contexts"]] == ["brand new snippet"]
    assert edited["contexts"][0]["citation"] == {"conversation_id": None, "message_id": "m1"}
    assert _search(service, headers, "brand snippet") == [mem["id"]]
    assert _search(service, headers, "second") == []
    with service.engine.connect() as conn:
        kept = conn.execute(sa.select(sa.func.count()).select_from(memory_context)).scalar()
    assert kept == 1


def test_no_op_edit_is_200_without_a_revision(service):
    headers = service.auth()
    mem = _save(service, headers, tags=["x"])
    for body in ({}, {"content": mem["content"]}, {"tags": ["x"], "contexts": []}):
        r = _patch(service, headers, mem["id"], body)
        assert r.status_code == 200, r.text
        assert r.json()["memory"]["revision"] == 1 and r.headers["etag"] == '"1"'
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_revision)).scalar() == 0


def test_if_match_conflict_is_412_with_the_current_revision(service):
    headers = service.auth()
    mem = _save(service, headers)
    first = _patch(service, headers, mem["id"], {"content": "One"}, if_match='"1"')
    assert first.status_code == 200
    stale = _patch(service, headers, mem["id"], {"content": "Two"}, if_match='"1"')
    problem = assert_problem(stale, 412, "revision_conflict")
    assert problem["revision"] == 2 and stale.headers["etag"] == '"2"'
    got = service.client.get(f"/v1/memory/{mem['id']}", headers=headers).json()["memory"]
    assert got["content"] == "One"
    # The current ETag matches, alone or listed; so does *.
    for i, tag in enumerate(('"2"', '"7", "3"', "*")):
        r = _patch(service, headers, mem["id"], {"tags": [f"etag-{i}"]}, if_match=tag)
        assert r.status_code == 200, r.text
    gone = service.client.delete(f"/v1/memory/{mem['id']}", headers={**headers, "If-Match": '"4"'})
    assert_problem(gone, 412, "revision_conflict")
    ok = service.client.delete(f"/v1/memory/{mem['id']}", headers={**headers, "If-Match": '"5"'})
    assert ok.status_code == 204


def test_if_match_is_compared_strongly(service):
    headers = service.auth()
    mid = _save(service, headers)["id"]
    # RFC 9110's strong comparison: a weak tag never matches, even naming the current state.
    for tag in ('W/"1"', 'W/"1", W/"2"'):
        r = _patch(service, headers, mid, {"content": "Weak"}, if_match=tag)
        assert assert_problem(r, 412, "revision_conflict")["revision"] == 1
    restore = service.client.post(
        f"/v1/memory/{mid}/revisions/1/restore", headers={**headers, "If-Match": 'W/"1"'}
    )
    assert_problem(restore, 412, "revision_conflict")
    gone = service.client.delete(f"/v1/memory/{mid}", headers={**headers, "If-Match": 'W/"1"'})
    assert_problem(gone, 412, "revision_conflict")
    # A list may hold empty elements and tags with commas in them; one strong match is enough.
    r = _patch(service, headers, mid, {"content": "Listed"}, if_match=' , "a,b",, W/"x", "1" ,')
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 2, r.text


def test_malformed_if_match_is_400_naming_it_and_changes_nothing(service):
    headers = service.auth()
    mid = _save(service, headers)["id"]
    for tag in ("1", "2", '"1', "'1'", "W/1", 'W/ "1"', '*, "1"', '"1" "2"', '"1"x', "", " , "):
        r = _patch(service, headers, mid, {"content": "Never"}, if_match=tag)
        problem = assert_problem(r, 400, "invalid_request", "If-Match")
        assert "revision" not in problem, tag
        for answer in (
            service.client.post(
                f"/v1/memory/{mid}/revisions/1/restore", headers={**headers, "If-Match": tag}
            ),
            service.client.delete(f"/v1/memory/{mid}", headers={**headers, "If-Match": tag}),
        ):
            assert_problem(answer, 400, "invalid_request", "If-Match")
    got = service.client.get(f"/v1/memory/{mid}", headers=headers).json()["memory"]
    assert got["revision"] == 1 and got["content"] == "We signed Acme in March"


def test_if_match_on_several_header_lines_is_one_list(service):
    headers = service.auth()
    mid = _save(service, headers)["id"]
    base = [*headers.items(), *MERGE.items()]
    url = f"/v1/memory/{mid}"
    bad = [*base, ("If-Match", '"1"'), ("If-Match", "1")]
    r = service.client.patch(url, json={"content": "Never"}, headers=bad)
    assert_problem(r, 400, "invalid_request", "If-Match")
    stale = [*base, ("If-Match", '"7"'), ("If-Match", '"8"')]
    assert_problem(
        service.client.patch(url, json={"content": "No"}, headers=stale), 412, "revision_conflict"
    )
    good = [*base, ("If-Match", '"7"'), ("If-Match", '"1"')]
    r = service.client.patch(url, json={"content": "Yes"}, headers=good)
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 2, r.text


def test_revisions_past_the_limit_are_dropped_by_the_edit(make_service):
    service = make_service(max_revisions_per_memory=3)
    headers = service.auth()
    mid = _save(service, headers, "Version 1")["id"]
    for n in range(2, 7):
        assert _patch(service, headers, mid, {"content": f"Version {n}"}).status_code == 200
    listed = service.client.get(f"/v1/memory/{mid}/revisions", headers=headers).json()
    assert [r["revision"] for r in listed["revisions"]] == [6, 5, 4]
    assert listed["dropped_revisions"] == 3 and listed["next_cursor"] is None
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_revision)).scalar() == 3
    # A dropped revision is gone for good; a kept one restores, and the restore drops one more.
    missing = service.client.post(f"/v1/memory/{mid}/revisions/2/restore", headers=headers)
    assert_problem(missing, 404, "revision_not_found")
    r = service.client.post(f"/v1/memory/{mid}/revisions/4/restore", headers=headers)
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 7
    page = service.client.get(
        f"/v1/memory/{mid}/revisions", params={"limit": 2}, headers=headers
    ).json()
    assert [r["revision"] for r in page["revisions"]] == [7, 6]
    assert page["dropped_revisions"] == 4
    rest = service.client.get(
        f"/v1/memory/{mid}/revisions",
        params={"limit": 2, "cursor": page["next_cursor"]},
        headers=headers,
    ).json()
    assert [r["revision"] for r in rest["revisions"]] == [5] and rest["dropped_revisions"] == 4
    assert rest["revisions"][0]["content"] == "Version 5"


def test_revisions_are_paged_newest_first_and_restore_appends(service):
    headers = service.auth(source="claude-code")
    mem = _save(service, headers, "Version one")
    listed = service.client.get(f"/v1/memory/{mem['id']}/revisions", headers=headers).json()
    assert [r["revision"] for r in listed["revisions"]] == [1] and listed["next_cursor"] is None
    editor = service.auth(source="vscode")
    for n in ("two", "three", "four"):
        assert _patch(service, editor, mem["id"], {"content": f"Version {n}"}).status_code == 200
    page = service.client.get(
        f"/v1/memory/{mem['id']}/revisions", params={"limit": 3}, headers=headers
    ).json()
    assert [r["revision"] for r in page["revisions"]] == [4, 3, 2]
    assert page["revisions"][0]["content"] == "Version four"
    assert page["revisions"][0]["source"] == "vscode"
    rest = service.client.get(
        f"/v1/memory/{mem['id']}/revisions",
        params={"limit": 3, "cursor": page["next_cursor"]},
        headers=headers,
    ).json()
    assert [r["revision"] for r in rest["revisions"]] == [1] and rest["next_cursor"] is None
    assert rest["revisions"][0]["content"] == "Version one"
    assert rest["revisions"][0]["source"] == "claude-code"
    r = service.client.post(f"/v1/memory/{mem['id']}/revisions/1/restore", headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["content"] == "Version one" and r.json()["memory"]["revision"] == 5
    assert _search(service, headers, "four") == []
    assert _search(service, headers, "one") == [mem["id"]]
    again = service.client.post(f"/v1/memory/{mem['id']}/revisions/5/restore", headers=headers)
    assert again.status_code == 200 and again.json()["memory"]["revision"] == 5
    history = service.client.get(f"/v1/memory/{mem['id']}/revisions", headers=headers).json()
    assert [r["revision"] for r in history["revisions"]] == [5, 4, 3, 2, 1]
    assert history["dropped_revisions"] == 0
    missing = service.client.post(f"/v1/memory/{mem['id']}/revisions/9/restore", headers=headers)
    assert_problem(missing, 404, "revision_not_found")


def test_delete_removes_the_revisions(service):
    headers = service.auth()
    mem = _save(service, headers)
    assert _patch(service, headers, mem["id"], {"content": "Changed"}).status_code == 200
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_revision)).scalar() == 2
    assert service.client.delete(f"/v1/memory/{mem['id']}", headers=headers).status_code == 204
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_revision)).scalar() == 0
    gone = service.client.get(f"/v1/memory/{mem['id']}/revisions", headers=headers)
    assert_problem(gone, 404, "memory_not_found")


def test_other_users_memory_is_404_like_a_missing_one(service):
    alice = service.auth("alice")
    bob = service.auth("bob")
    mem = _save(service, alice)
    missing = "mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C"
    for mid in (mem["id"], missing):
        answers = [
            _patch(service, bob, mid, {"content": "Mine now"}),
            service.client.get(f"/v1/memory/{mid}/revisions", headers=bob),
            service.client.post(f"/v1/memory/{mid}/revisions/1/restore", headers=bob),
        ]
        bodies = [assert_problem(r, 404, "memory_not_found") for r in answers]
        assert all(b["field"] == "id" for b in bodies)
    got = service.client.get(f"/v1/memory/{mem['id']}", headers=alice).json()["memory"]
    assert got["content"] == mem["content"] and got["revision"] == 1


def test_read_only_key_is_403(service):
    alice = service.auth("alice")
    mem = _save(service, alice)
    reader = service.auth("alice", scopes=("mcp:read",))
    assert_problem(_patch(service, reader, mem["id"], {"content": "x"}), 403, "insufficient_scope")
    restore = service.client.post(f"/v1/memory/{mem['id']}/revisions/1/restore", headers=reader)
    assert_problem(restore, 403, "insufficient_scope")
    listed = service.client.get(f"/v1/memory/{mem['id']}/revisions", headers=reader)
    assert listed.status_code == 200


def test_bad_patches_are_400_and_change_nothing(service):
    headers = service.auth()
    mem = _save(service, headers)
    for body, field in (
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"scope": "org"}, "scope"),
        ({"tags": ["x"] * 33}, "tags"),
        ({"content": None}, "content"),
    ):
        r = _patch(service, headers, mem["id"], body)
        assert assert_problem(r, 400, "invalid_request")["field"] == field, body
    got = service.client.get(f"/v1/memory/{mem['id']}", headers=headers).json()["memory"]
    assert got["revision"] == 1
