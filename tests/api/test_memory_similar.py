"""A save's "you already know this" hints and dedupe: "skip", on both engines."""

from __future__ import annotations

import sqlalchemy as sa

from memory_bank.store.schema import memory


def _save(service, headers, content, **extra):
    return service.client.post("/v1/memory", json={"content": content, **extra}, headers=headers)


TEAMS = ["platform", "mobile", "data", "growth", "infra", "support", "billing", "search"]


def _a_bank_of_other_memories(service, headers, n=40):
    """Unrelated memories, as a bank in use holds: ranking weighs words by how rare they are."""
    for i in range(n):
        text = f"The {TEAMS[i % len(TEAMS)]} team reviews its roadmap (note {i})"
        assert _save(service, headers, text).status_code == 201


def test_a_save_lists_the_memory_it_updates_and_not_one_that_only_shares_a_name(service):
    headers = service.auth()
    _a_bank_of_other_memories(service, headers)
    kept = _save(service, headers, "We signed Acme in March").json()["memory"]
    other = _save(service, headers, "Acme's support line is slow in the mornings").json()
    _save(service, headers, "The team lunch is on Fridays at noon")
    r = _save(service, headers, "We re-signed Acme in January")
    assert r.status_code == 201
    similar = r.json()["similar"]
    assert [s["id"] for s in similar] == [kept["id"]]
    assert similar[0]["content"] == kept["content"] and 0.3 <= similar[0]["score"] <= 1
    assert other["memory"]["id"] not in [s["id"] for s in similar]
    # Nothing alike: an empty list, and never the new memory itself.
    alone = _save(service, headers, "The printer on floor 3 needs toner").json()
    assert alone["similar"] == []


def test_hints_only_come_from_the_callers_own_memories(service):
    alice = service.auth("alice")
    bob = service.auth("bob")
    _save(service, bob, "We signed Acme in March")
    r = _save(service, alice, "We signed Acme in March")
    assert r.status_code == 201 and r.json()["similar"] == []


def test_hints_can_be_switched_off(make_service):
    service = make_service(similar_hints=False)
    headers = service.auth()
    _save(service, headers, "We signed Acme in March")
    r = _save(service, headers, "We signed Acme in March")
    assert r.status_code == 201 and r.json()["similar"] == []


def test_dedupe_skip_returns_the_memory_already_kept(service):
    headers = service.auth()
    kept = _save(service, headers, "We signed Acme in March", tags=["acme"]).json()["memory"]
    again = _save(service, headers, "  we signed ACME in   march ", dedupe="skip")
    assert again.status_code == 200, again.text
    assert again.json() == {"memory": kept, "similar": []}
    assert again.headers["etag"] == '"1"' and "location" not in again.headers
    # Different words are saved, with the kept one as a hint; without dedupe a copy is saved.
    changed = _save(service, headers, "We signed Acme in April", dedupe="skip")
    assert changed.status_code == 201
    assert kept["id"] in [s["id"] for s in changed.json()["similar"]]
    copy = _save(service, headers, "We signed Acme in March")
    assert copy.status_code == 201 and copy.json()["similar"][0]["id"] == kept["id"]
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 3


def test_a_write_only_key_learns_ids_and_scores_not_content(service):
    reader = service.auth()
    writer = service.auth(scopes=("mcp:write",))
    _a_bank_of_other_memories(service, reader)
    kept = _save(service, reader, "We signed Acme in March").json()["memory"]
    r = _save(service, writer, "We re-signed Acme in January")
    assert r.status_code == 201, r.text
    assert r.json()["similar"] == [{"id": kept["id"], "score": r.json()["similar"][0]["score"]}]
    assert "March" not in r.text
    # Skipping a duplicate answers with the memory kept: that is a read, refused without mcp:read.
    skip = _save(service, writer, "We signed Acme in March", dedupe="skip")
    assert skip.status_code == 403 and skip.json()["required_scope"] == "mcp:read"
    assert "March" not in skip.text
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 42


def test_a_committed_save_answers_201_when_its_hints_fail(service, caplog):
    headers = service.auth()
    _a_bank_of_other_memories(service, headers)
    assert _save(service, headers, "We signed Acme in March").json()["similar"] == []

    def fail_index_reads(conn, cursor, statement, *args):
        # The hints' read of the index fails after the save committed (as a pushed-down
        # function missing on a backend did on Spider).
        if statement.lstrip().upper().startswith("SELECT") and "memory_term" in statement:
            raise sa.exc.OperationalError(statement, {}, Exception("injected failure"))

    sa.event.listen(service.engine, "before_cursor_execute", fail_index_reads)
    try:
        r = _save(service, headers, "We re-signed Acme in January")
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", fail_index_reads)
    assert r.status_code == 201, r.text
    assert r.json()["similar"] == []
    again = service.client.get(r.headers["location"], headers=headers)
    assert (
        again.status_code == 200
        and again.json()["memory"]["content"] == "We re-signed Acme in January"
    )
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 42
    assert "hints failed" in caplog.text and "re-signed" not in caplog.text


def test_a_paraphrased_duplicate_is_hinted_by_meaning(make_service):
    """With semantic search on (the packaged MiniLM), a save whose words differ from a kept
    memory's but whose meaning is the same lists it; an unrelated one does not."""
    from memory_bank.app import state_of
    from memory_bank.domain import vector_jobs

    service = make_service(embeddings="local:all-MiniLM-L6-v2", embeddings_worker=False)
    headers = service.auth()
    _a_bank_of_other_memories(service, headers)
    kept = _save(service, headers, "I'm vegetarian.").json()["memory"]
    other = _save(service, headers, "The printer on floor 3 needs toner").json()["memory"]
    state = state_of(service.app)
    while vector_jobs.drain_once(service.db, state.semantic):
        pass
    r = _save(service, headers, "The user doesn't eat meat.")
    assert r.status_code == 201, r.text
    similar = r.json()["similar"]
    assert [s["id"] for s in similar] == [kept["id"]]
    assert similar[0]["content"] == "I'm vegetarian." and 0 < similar[0]["score"] <= 1
    assert other["id"] not in [s["id"] for s in similar]


def test_without_semantic_search_the_hints_are_by_words_alone(service):
    headers = service.auth()
    _a_bank_of_other_memories(service, headers)
    _save(service, headers, "I'm vegetarian.")
    r = _save(service, headers, "The user doesn't eat meat.")
    assert r.status_code == 201 and r.json()["similar"] == []


def test_the_vector_a_save_made_for_its_hints_is_stored_without_embedding_again(
    make_service, monkeypatch
):
    """The worker stores the vector a save's hints made of the same text, and asks the model
    only for a memory with no such vector kept (as when another process saved it)."""
    import numpy as np

    from memory_bank.app import state_of
    from memory_bank.domain import vector_jobs
    from memory_bank.store import vectors

    service = make_service(embeddings="local:all-MiniLM-L6-v2", embeddings_worker=False)
    headers = service.auth()
    semantic = state_of(service.app).semantic
    provider = semantic.provider
    asked: list[str] = []
    embed = provider.embed

    def counted(texts):
        asked.extend(texts)
        return embed(texts)

    monkeypatch.setattr(provider, "embed", counted)
    texts = ["The user doesn't eat meat.", "Leo has football on Saturdays"]
    ids = [_save(service, headers, text).json()["memory"]["id"] for text in texts]
    assert asked == texts  # each save's hints embedded its text
    assert semantic.made.take(texts[1]) is not None  # as if another process had saved it
    while vector_jobs.drain_once(service.db, semantic):
        pass
    assert asked == [*texts, texts[1]]  # the worker asked only for the second again
    with service.engine.connect() as conn:
        owner = conn.execute(sa.select(memory.c.user_id).where(memory.c.id == ids[0])).scalar()
        stored = {v.memory_id: v.vector for v in vectors.load(conn, owner, semantic.model)}
    assert set(stored) == set(ids)
    for mid, text in zip(ids, texts, strict=True):
        fresh = np.asarray(embed([text])[0], dtype=np.float32)
        assert np.allclose(np.frombuffer(stored[mid], dtype=np.float32), fresh, atol=1e-5), text
