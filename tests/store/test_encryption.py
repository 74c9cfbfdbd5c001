"""Encryption at rest on both engines: nothing readable in the database's bytes while every read
returns the text; moved ciphertext fails closed; a wrong or missing master key stops start-up."""

from __future__ import annotations

import json
import logging
import secrets
import string
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from memory_bank.app import create_app
from memory_bank.domain.reindex import STATE_NAME
from memory_bank.store import service_state
from memory_bank.store.schema import memory, memory_context, memory_term, owner_key
from memory_bank.store.sealing import crypto

REVIEWER = ("mcp:read", "mcp:write", "memory:review")


def new_key() -> str:
    """A fresh master key in its setting's form."""
    return crypto.encode_master_key(crypto.new_master_key())


def unique_word() -> str:
    """A word found nowhere else: letters only, so the analyzer keeps it whole."""
    return "zqv" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(14))


def database_bytes(engine: sa.Engine, url: str) -> bytes:
    """Everything a thief of the database gets: the SQLite file and its WAL, or a dump of every
    table of the MariaDB database."""
    if engine.dialect.name == "sqlite":
        path = Path(sa.engine.make_url(url).database or "")
        return b"".join(
            p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()
        )
    dump = []
    with engine.connect() as conn:
        for name in sa.inspect(conn).get_table_names():
            for row in conn.exec_driver_sql(f"SELECT * FROM `{name}`"):
                dump.append(repr(tuple(row)))
    return "\n".join(dump).encode("utf-8")


def save_everywhere(service, word: str) -> dict[str, Any]:
    """Put the word in a memory's content, tag, snippet and citation, and in a pending draft."""
    reviewer = service.auth(scopes=REVIEWER)
    body = {
        "content": f"The {word} decision was final.",
        "tags": [f"tag-{word}"],
        "contexts": [
            {
                "snippet": f"we talked about {word} at length",
                "conversation_id": f"conv-{word}",
                "message_id": f"msg-{word}",
                "origin": "active_conversation",
            }
        ],
    }
    saved = service.client.post("/v1/memory", json=body, headers=reviewer)
    assert saved.status_code == 201, saved.text
    agent = service.auth()
    draft = service.client.post(
        "/v1/memory", json={**body, "content": f"Draft {word}"}, headers=agent
    )
    assert draft.status_code == 202, draft.text
    return {
        "memory": saved.json()["memory"]["id"],
        "draft": draft.json()["draft"]["id"],
        "reviewer": reviewer,
    }


def test_a_unique_word_is_nowhere_in_the_database_yet_every_read_returns_it(
    make_service, database_url
):
    service = make_service(master_key=new_key(), review_required=True)
    word = unique_word()
    made = save_everywhere(service, word)
    headers = made["reviewer"]
    # Reads: get, list, search (by the word, and by its tag), the draft queue.
    got = service.client.get(f"/v1/memory/{made['memory']}", headers=headers).json()["memory"]
    assert word in got["content"] and got["tags"] == [f"tag-{word}"]
    ctx = got["contexts"][0]
    assert word in ctx["snippet"]
    assert ctx["citation"] == {"conversation_id": f"conv-{word}", "message_id": f"msg-{word}"}
    listed = service.client.get("/v1/memory", headers=headers).json()["memories"]
    assert [m["id"] for m in listed] == [made["memory"]] and listed[0] == got
    found = service.client.get("/v1/memory/search", params={"q": word}, headers=headers)
    assert [m["id"] for m in found.json()["results"]] == [made["memory"]]
    assert found.json()["results"][0]["contexts"] == got["contexts"]
    drafts = service.client.get("/v1/memory/drafts", headers=headers).json()["drafts"]
    assert [d["id"] for d in drafts] == [made["draft"]] and word in drafts[0]["content"]
    assert word in drafts[0]["contexts"][0]["snippet"]
    exported = service.client.get("/v1/memory/export", headers=headers)
    assert exported.status_code == 200 and json.loads(exported.text.splitlines()[1]) == got
    # ...and the database's bytes hold neither the word nor its stem (the index term).
    raw = database_bytes(service.engine, database_url)
    assert made["memory"].encode() in raw  # the scan does see the rows
    assert word.encode() not in raw
    assert word[:10].encode() not in raw
    # Confirming the draft turns it into a searchable memory, still sealed.
    confirmed = service.client.post(f"/v1/memory/drafts/{made['draft']}/confirm", headers=headers)
    assert confirmed.status_code == 201, confirmed.text
    found = service.client.get("/v1/memory/search", params={"q": "draft " + word}, headers=headers)
    assert confirmed.json()["memory"]["id"] in [m["id"] for m in found.json()["results"]]
    assert word[:10].encode() not in database_bytes(service.engine, database_url)


def test_without_a_master_key_the_same_word_is_in_the_bytes(make_service, database_url):
    # The control for the test above: the scan finds the word when nothing is sealed.
    service = make_service(review_required=True)
    word = unique_word()
    save_everywhere(service, word)
    assert word.encode() in database_bytes(service.engine, database_url)


def test_postings_hold_keyed_hashes_not_terms(make_service):
    service = make_service(master_key=new_key())
    headers = service.auth()
    service.client.post("/v1/memory", json={"content": "Paris trip planning"}, headers=headers)
    with service.engine.connect() as conn:
        terms = list(conn.execute(sa.select(memory_term.c.term)).scalars())
    assert terms and all(t.startswith(crypto.HASHED_TERM_PREFIX) for t in terms)
    assert not {"paris", "trip", "plan"} & set(terms)


def _swap(engine: sa.Engine, table: sa.Table, column: str, a: str, b: str) -> None:
    """Exchange one column's stored values between two rows (what an attacker with write access
    to the database could do)."""
    with engine.begin() as conn:
        va = conn.execute(sa.select(table.c[column]).where(table.c.id == a)).scalar_one()
        vb = conn.execute(sa.select(table.c[column]).where(table.c.id == b)).scalar_one()
        conn.execute(sa.update(table).where(table.c.id == a).values({column: vb}))
        conn.execute(sa.update(table).where(table.c.id == b).values({column: va}))


def _unreadable(response, *secret_texts: str) -> None:
    """A clean 500 problem that names no stored text."""
    assert response.status_code == 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "stored_data_unreadable"
    for text in secret_texts:
        assert text not in response.text


@pytest.mark.parametrize("column", ["content", "tags"])
def test_ciphertext_swapped_between_two_rows_fails_closed(make_service, caplog, column):
    service = make_service(master_key=new_key())
    headers = service.auth()
    ids = [
        service.client.post(
            "/v1/memory", json={"content": f"secret number {n}", "tags": [f"t{n}"]}, headers=headers
        ).json()["memory"]["id"]
        for n in (1, 2)
    ]
    _swap(service.engine, memory, column, *ids)
    with caplog.at_level(logging.ERROR, logger="memory_bank.crypto"):
        _unreadable(service.client.get(f"/v1/memory/{ids[0]}", headers=headers), "secret number")
        _unreadable(service.client.get("/v1/memory", headers=headers), "secret number")
    logged = [r.getMessage() for r in caplog.records if r.name == "memory_bank.crypto"]
    assert any(ids[0] in line for line in logged)
    assert not any("secret number" in line for line in logged)


def test_a_context_swapped_between_two_users_fails_closed(make_service):
    service = make_service(master_key=new_key())
    alice, bob = service.auth("alice"), service.auth("bob")
    body = {"content": "x", "contexts": [{"snippet": "alice's private snippet"}]}
    a = service.client.post("/v1/memory", json=body, headers=alice).json()["memory"]
    body = {"content": "y", "contexts": [{"snippet": "bob's snippet"}]}
    b = service.client.post("/v1/memory", json=body, headers=bob).json()["memory"]
    # Same column, same row id for bob: only the owner differs.
    with service.engine.begin() as conn:
        stolen = conn.execute(
            sa.select(memory_context.c.snippet).where(memory_context.c.id == a["contexts"][0]["id"])
        ).scalar_one()
        conn.execute(
            sa.update(memory_context)
            .where(memory_context.c.id == b["contexts"][0]["id"])
            .values(snippet=stolen)
        )
    _unreadable(service.client.get(f"/v1/memory/{b['id']}", headers=bob), "alice's private")
    # Alice's own memory still reads.
    assert service.client.get(f"/v1/memory/{a['id']}", headers=alice).status_code == 200


def test_plain_text_slipped_into_a_sealed_row_is_refused(make_service):
    service = make_service(master_key=new_key())
    headers = service.auth()
    mid = service.client.post("/v1/memory", json={"content": "real"}, headers=headers).json()
    mid = mid["memory"]["id"]
    with service.engine.begin() as conn:
        conn.execute(sa.update(memory).where(memory.c.id == mid).values(content="forged"))
    _unreadable(service.client.get(f"/v1/memory/{mid}", headers=headers), "forged")


def test_a_wrong_master_key_refuses_to_start(make_service, settings):
    first = make_service(master_key=new_key())
    first.client.post("/v1/memory", json={"content": "kept"}, headers=first.auth())
    with pytest.raises(crypto.KeyProblem, match="wrong master key"):
        create_app(settings.replace(master_key=new_key()))
    with pytest.raises(crypto.KeyProblem, match="holds encrypted memories"):
        create_app(settings)


def test_a_wrong_key_refuses_even_before_any_owner_has_a_key(make_service, settings):
    make_service(master_key=new_key())
    with pytest.raises(crypto.KeyProblem, match="wrong master key"):
        create_app(settings.replace(master_key=new_key()))


def test_owner_keys_are_stored_only_wrapped(make_service):
    key = new_key()
    service = make_service(master_key=key)
    service.client.post("/v1/memory", json={"content": "x"}, headers=service.auth())
    with service.engine.connect() as conn:
        row = conn.execute(sa.select(owner_key)).one()
    master = crypto.parse_master_key(key)
    assert row.master_id == master.fingerprint and row.state == "sealed"
    data_key = crypto.unwrap(master, "user:alice", row.wrapped)
    assert data_key not in database_bytes_of_row(row)
    with pytest.raises(crypto.KeyProblem):
        crypto.unwrap(master, "user:bob", row.wrapped)


def database_bytes_of_row(row: sa.Row) -> bytes:
    """A row's values as bytes."""
    return repr(tuple(row)).encode()


def test_a_rebuild_at_start_reads_sealed_rows_and_writes_hashed_terms(make_service):
    key = new_key()
    service = make_service(master_key=key)
    headers = service.auth()
    saved = service.client.post(
        "/v1/memory", json={"content": "The lighthouse keeper", "tags": ["coast"]}, headers=headers
    ).json()["memory"]
    with service.engine.begin() as conn:
        conn.execute(sa.delete(memory_term))
        service_state.put(conn, STATE_NAME, "an older analyzer")
    restarted = make_service(master_key=key)  # rebuilds the index under the migration lock
    with restarted.engine.connect() as conn:
        terms = list(conn.execute(sa.select(memory_term.c.term)).scalars())
    assert terms and all(t.startswith(crypto.HASHED_TERM_PREFIX) for t in terms)
    found = restarted.client.get("/v1/memory/search", params={"q": "coast"}, headers=headers)
    assert [m["id"] for m in found.json()["results"]] == [saved["id"]]


def test_a_process_without_the_key_refuses_sealed_rows_instead_of_showing_them(make_service):
    # A server started before the deployment was encrypted keeps running without the key.
    plain = make_service()
    headers = plain.auth()
    sealed = make_service(master_key=new_key())
    mid = sealed.client.post("/v1/memory", json={"content": "sealed one"}, headers=headers)
    mid = mid.json()["memory"]["id"]
    _unreadable(plain.client.get(f"/v1/memory/{mid}", headers=headers), "mbe1:")


def test_org_memories_are_sealed_under_the_org_s_own_key(make_service, database_url):
    service = make_service(master_key=new_key())
    alice = service.auth("alice", org="acme", scopes=("mcp:read", "mcp:write", "org:write"))
    bob = service.auth("bob", org="acme")
    word = unique_word()
    body = {
        "content": f"Team rule: {word} before deploys",
        "tags": [f"tag-{word}"],
        "contexts": [{"snippet": f"said {word}", "conversation_id": f"c-{word}"}],
        "scope": "org",
    }
    saved = service.client.post("/v1/memory", json=body, headers=alice)
    assert saved.status_code == 201, saved.text
    found = service.client.get("/v1/memory/search", params={"q": word}, headers=bob)
    assert [m["id"] for m in found.json()["results"]] == [saved.json()["memory"]["id"]]
    assert found.json()["results"][0]["contexts"] == saved.json()["memory"]["contexts"]
    with service.engine.connect() as conn:
        owners = set(conn.execute(sa.select(owner_key.c.user_id)).scalars())
    assert owners == {"org:acme"}  # the org's key; alice saved nothing of her own
    raw = database_bytes(service.engine, database_url)
    assert word[:10].encode() not in raw


@pytest.mark.parametrize("sealed", [True, False], ids=["encrypted", "plain-control"])
def test_vectors_are_sealed_at_rest_and_semantic_search_still_works(
    make_service, database_url, sealed
):
    import base64

    from memory_bank.app import state_of
    from memory_bank.domain import vector_jobs
    from memory_bank.models.embeddings import DEFAULT_LOCAL, embed_text
    from memory_bank.models.local_model import load

    master = {"master_key": new_key()} if sealed else {}
    service = make_service(embeddings="local", embeddings_worker=False, **master)
    headers = service.auth()
    content = "Leo has football practice every Saturday"
    saved = service.client.post("/v1/memory", json={"content": content}, headers=headers)
    assert saved.status_code == 201
    assert vector_jobs.drain_once(service.db, state_of(service.app).semantic) == 1
    vector = load(DEFAULT_LOCAL).embed([embed_text(content, [])])[0].tobytes()
    raw = database_bytes(service.engine, database_url)
    plain_forms = [base64.b64encode(vector)[:40], vector[:32]]
    if sealed:
        assert not any(form in raw for form in plain_forms)
    else:
        assert base64.b64encode(vector)[:40] in raw  # the control: the scan finds it
    found = service.client.get(
        "/v1/memory/search",
        params={"q": "What sport does my son do at the weekend?", "mode": "semantic"},
        headers=headers,
    ).json()
    assert found["mode"] == "semantic"
    assert [m["id"] for m in found["results"]] == [saved.json()["memory"]["id"]]


def _edit_everywhere(service, word: str) -> tuple[str, dict[str, str]]:
    """A memory edited twice (its revisions hold the word in content, tags and contexts) and
    an agent's pending edit draft with the word."""
    reviewer = service.auth(scopes=REVIEWER)
    saved = service.client.post("/v1/memory", json={"content": "plain start"}, headers=reviewer)
    mid = saved.json()["memory"]["id"]
    for n in (1, 2):
        body = {
            "content": f"The {word} plan, take {n}.",
            "tags": [f"tag-{word}-{n}"],
            "contexts": [{"snippet": f"said {word} again", "conversation_id": f"c-{word}"}],
        }
        r = service.client.patch(f"/v1/memory/{mid}", json=body, headers=reviewer)
        assert r.status_code == 200, r.text
    proposed = service.client.patch(
        f"/v1/memory/{mid}", json={"content": f"Agent's {word} idea"}, headers=service.auth()
    )
    assert proposed.status_code == 202, proposed.text
    return mid, reviewer


@pytest.mark.parametrize("sealed", [True, False])
def test_revisions_and_edit_drafts_are_sealed(make_service, database_url, sealed):
    changes = {"master_key": new_key()} if sealed else {}
    service = make_service(review_required=True, **changes)
    word = unique_word()
    mid, headers = _edit_everywhere(service, word)
    history = service.client.get(f"/v1/memory/{mid}/revisions", headers=headers).json()
    assert [r["revision"] for r in history["revisions"]] == [3, 2, 1]
    assert word in history["revisions"][1]["content"]
    assert history["revisions"][1]["tags"] == [f"tag-{word}-1"]
    assert history["revisions"][0]["contexts"][0]["citation"]["conversation_id"] == f"c-{word}"
    drafts = service.client.get("/v1/memory/drafts", headers=headers).json()["drafts"]
    assert word in drafts[0]["content"] and drafts[0]["memory_id"] == mid
    raw = database_bytes(service.engine, database_url)
    # Sealed: the word is in no table's bytes; the control without a key shows the scan finds it.
    assert mid.encode() in raw
    assert (word[:10].encode() in raw) is not sealed
