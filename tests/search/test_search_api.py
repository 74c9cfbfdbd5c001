"""Search through the API on both engines: stemming, exact tokens, isolation, deletes."""

from __future__ import annotations

import sqlalchemy as sa

from memory_bank.store.schema import memory_term, memory_user_stats


def _save(service, headers, content, **extra):
    r = service.client.post("/v1/memory", json={"content": content, **extra}, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["memory"]["id"]


def _search(service, headers, q, limit=10):
    r = service.client.get("/v1/memory/search", params={"q": q, "limit": limit}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_decide_finds_decided(service):
    headers = service.auth()
    mid = _save(service, headers, "We decided to move the launch to Monday.")
    _save(service, headers, "Lunch was good.")
    assert [m["id"] for m in _search(service, headers, "decide")] == [mid]


def test_exact_tokens_find_themselves(service):
    headers = service.auth()
    q3 = _save(service, headers, "Revenue target for Q3 is 4M.")
    v12 = _save(service, headers, "Release v1.2 ships the new importer.")
    _save(service, headers, "Release v2.0 is later; Q4 is quiet.")
    assert _search(service, headers, "Q3")[0]["id"] == q3
    assert _search(service, headers, "v1.2")[0]["id"] == v12
    proxy = _save(service, headers, "Restart den-worker-proxy after deploys.")
    assert _search(service, headers, "den-worker-proxy")[0]["id"] == proxy


def test_stop_words_only_query_is_200_and_empty(service):
    headers = service.auth()
    _save(service, headers, "The thing is what it is.")
    assert _search(service, headers, "what is the") == []
    assert _search(service, headers, "🎉") == []


def test_contexts_are_searchable_but_content_ranks_higher(service):
    headers = service.auth()
    in_context = _save(
        service,
        headers,
        "Melanie: that sounds lovely",
        contexts=[{"snippet": "Caroline: I adopted a puppy named Oscar"}],
    )
    in_content = _save(service, headers, "Caroline: Oscar the puppy chewed my shoes")
    found = [m["id"] for m in _search(service, headers, "Oscar puppy")]
    assert found == [in_content, in_context]


def test_cjk_part_of_a_run_matches(service):
    headers = service.auth()
    mid = _save(service, headers, "東京タワーに行きました")
    assert [m["id"] for m in _search(service, headers, "東京")] == [mid]


def test_scores_do_not_change_when_another_user_adds_memories(service):
    alice, bob = service.auth("alice"), service.auth("bob")
    for text in ["budget review on Friday", "budget for the offsite", "dentist at noon"]:
        _save(service, alice, text)
    before = [(m["id"], m["score"]) for m in _search(service, alice, "budget offsite")]
    for i in range(20):
        _save(service, bob, f"budget line {i} offsite offsite budget")
    after = [(m["id"], m["score"]) for m in _search(service, alice, "budget offsite")]
    assert before == after and len(before) == 2
    assert all(m["content"].startswith("budget") for m in _search(service, bob, "budget"))


def test_delete_removes_postings_and_statistics_in_the_same_transaction(service):
    headers = service.auth()
    keep = _save(service, headers, "Keep the blue notebook")
    gone = _save(service, headers, "Throw away the blue notebook")
    assert service.client.delete(f"/v1/memory/{gone}", headers=headers).status_code == 204
    assert [m["id"] for m in _search(service, headers, "blue notebook")] == [keep]
    with service.engine.connect() as conn:
        left = conn.execute(
            sa.select(sa.func.count()).where(memory_term.c.memory_id == gone)
        ).scalar()
        stats = conn.execute(
            sa.select(memory_user_stats.c.doc_count).where(memory_user_stats.c.user_id == "alice")
        ).scalar()
    assert left == 0 and stats == 1


def test_failed_write_leaves_no_postings(service):
    headers = service.auth()
    r = service.client.post(
        "/v1/memory",
        json={"content": "orphan words here", "contexts": [{"snippet": ""}]},
        headers=headers,
    )
    assert r.status_code == 400
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory_term)).scalar() == 0
