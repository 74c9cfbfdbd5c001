"""encrypt-existing and decrypt-existing over everything a user stores, on both engines: memories,
contexts, revisions, drafts (new and of edits), vectors and org memories. After each direction no
stored word is in the database's bytes the wrong way round, everything reads back as written,
search works in every mode, and a data key is destroyed only once nothing sealed with it is left.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from memory_bank.app import state_of
from memory_bank.cli import main
from memory_bank.domain import encryption, vector_jobs
from memory_bank.store.schema import memory_term, memory_vector, owner_key
from memory_bank.store.sealing import crypto, data_keys, seal_existing
from memory_bank.store.sealing.sealed import registry

# The small packaged model: real vectors without building mpnet.
MODEL = "local:all-MiniLM-L6-v2"
pytestmark = pytest.mark.model
WRITER = ("mcp:read", "mcp:write")
REVIEWER = (*WRITER, "memory:review")
ORG_REVIEWER = (*REVIEWER, "org:write")
PLACES = (
    "first_wording",
    "first_tag",
    "first_snippet",
    "first_conversation",
    "first_message",
    "second_wording",
    "final_wording",
    "edit_draft",
    "draft",
    "draft_snippet",
    "org_wording",
    "org_snippet",
    "org_draft",
)


def _word() -> str:
    """A word found nowhere else: letters only, so the analyzer keeps it whole."""
    return "zqv" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(14))


def database_bytes(engine: sa.Engine) -> bytes:
    """What a thief gets: the SQLite file and its WAL, or every column of every MariaDB table."""
    if engine.dialect.name == "sqlite":
        path = Path(engine.url.database or "")
        files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
        return b"".join(p.read_bytes() for p in files if p.exists())
    dump = []
    with engine.connect() as conn:
        for name in sa.inspect(conn).get_table_names():
            for row in conn.exec_driver_sql(f"SELECT * FROM `{name}`"):
                dump.append(repr(tuple(row)))
    return "\n".join(dump).encode("utf-8")


class Data:
    """Everything one user and one org stored, and how to read it back."""

    def __init__(self, service: Any) -> None:
        self.words = {place: _word() for place in PLACES}
        self.reviewer = service.auth("alice", scopes=REVIEWER)
        self.agent = service.auth("alice", scopes=WRITER)
        self.org_reviewer = service.auth("bob", org="acme", scopes=ORG_REVIEWER)
        self.org_agent = service.auth("carol", org="acme", scopes=(*WRITER, "org:write"))
        self.memory = self._fill(service)

    def _fill(self, service: Any) -> dict[str, str]:
        """Save, edit twice, propose an edit and a draft, save and propose for the org, embed."""
        w, post, patch = self.words, service.client.post, service.client.patch
        body = {
            "content": f"First wording {w['first_wording']}",
            "tags": [f"tag-{w['first_tag']}"],
            "contexts": [
                {
                    "snippet": f"said {w['first_snippet']}",
                    "conversation_id": f"c-{w['first_conversation']}",
                    "message_id": f"m-{w['first_message']}",
                    "origin": "active_conversation",
                }
            ],
        }
        saved = post("/v1/memory", json=body, headers=self.reviewer)
        assert saved.status_code == 201, saved.text
        mid = saved.json()["memory"]["id"]
        for content in (
            f"Second wording {w['second_wording']}",
            f"Leo has football practice every Saturday, {w['final_wording']}",
        ):
            r = patch(f"/v1/memory/{mid}", json={"content": content}, headers=self.reviewer)
            assert r.status_code == 200, r.text
        r = patch(f"/v1/memory/{mid}", json={"content": w["edit_draft"]}, headers=self.agent)
        assert r.status_code == 202, r.text
        draft = {"content": f"Draft {w['draft']}", "contexts": [{"snippet": w["draft_snippet"]}]}
        assert post("/v1/memory", json=draft, headers=self.agent).status_code == 202
        org = {
            "content": f"Team rule: the boiler service is due in November, {w['org_wording']}",
            "contexts": [{"snippet": f"said {w['org_snippet']}"}],
            "scope": "org",
        }
        saved_org = post("/v1/memory", json=org, headers=self.org_reviewer)
        assert saved_org.status_code == 201, saved_org.text
        org_draft = {"content": f"Org draft {w['org_draft']}", "scope": "org"}
        assert post("/v1/memory", json=org_draft, headers=self.org_agent).status_code == 202
        semantic = state_of(service.app).semantic
        while vector_jobs.drain_once(service.db, semantic):
            pass
        return {"mine": mid, "org": saved_org.json()["memory"]["id"]}

    def read(self, service: Any) -> dict[str, Any]:
        """Every read a user and an org member make, as JSON, and searches in every mode."""
        get = service.client.get
        mid, oid = self.memory["mine"], self.memory["org"]
        reads = {
            "memory": (f"/v1/memory/{mid}", self.reviewer),
            "revisions": (f"/v1/memory/{mid}/revisions", self.reviewer),
            "drafts": ("/v1/memory/drafts", self.reviewer),
            "org memory": (f"/v1/memory/{oid}", self.org_reviewer),
            "org drafts": ("/v1/memory/drafts", self.org_reviewer),
            "list": ("/v1/memory", self.org_reviewer),
        }
        out: dict[str, Any] = {}
        for name, (path, headers) in reads.items():
            r = get(path, headers=headers)
            assert r.status_code == 200, (name, r.text)
            out[name] = r.json()
        queries = {
            "mine": ("What sport does my son do at the weekend?", self.reviewer, mid),
            "org": ("When is the heating maintenance?", self.org_reviewer, oid),
            "mine-words": (f"football {self.words['final_wording']}", self.reviewer, mid),
        }
        for name, (q, headers, expected) in queries.items():
            for mode in ("lexical", "semantic", "hybrid"):
                if mode == "lexical" and name != "mine-words":
                    continue  # a paraphrase shares no word with the memory
                r = get(
                    "/v1/memory/search",
                    params={"q": q, "mode": mode, "min_score": 0},
                    headers=headers,
                )
                assert r.status_code == 200, (name, mode, r.text)
                found = r.json()
                assert found["mode"] == mode, (name, found)
                ids = [m["id"] for m in found["results"]]
                assert ids and ids[0] == expected, (name, mode, found)
                out[f"search {name} {mode}"] = ids
        return out


@pytest.fixture
def cli_key(monkeypatch: pytest.MonkeyPatch, database_url: str) -> Callable[[str | None], None]:
    """Point the in-process CLI at the test database; returns a setter for the master key."""
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)

    def use(key: str | None) -> None:
        if key is None:
            monkeypatch.delenv("MEMORY_BANK_MASTER_KEY", raising=False)
        else:
            monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", key)

    return use


def _service(make_service: Callable[..., Any], key: str | None = None) -> Any:
    """A reviewed service with real (small) embeddings and, optionally, the master key."""
    return make_service(
        review_required=True,
        embeddings=MODEL,
        embeddings_worker=False,
        embeddings_deadline_ms=120_000,
        **({"master_key": key} if key else {}),
    )


def _stored_values(engine: sa.Engine) -> dict[str, list[list[str | None]]]:
    """Every sealed table's sealed columns, row by row, as stored."""
    out = {}
    with engine.connect() as conn:
        for spec in registry():
            columns = [spec.table.c[name] for name in spec.columns]
            out[spec.table.name] = [list(r) for r in conn.execute(sa.select(*columns))]
    return out


def _forms(engine: sa.Engine) -> dict[str, set[bool]]:
    """Per sealed table, whether its non-NULL values are sealed (True), plain (False) or both."""
    return {
        table: {crypto.is_sealed(v) for row in rows for v in row if v is not None}
        for table, rows in _stored_values(engine).items()
    }


def _all(sealed: bool) -> dict[str, set[bool]]:
    """_forms() when every sealed table has rows and all of them are sealed (or plain)."""
    return {spec.table.name: {sealed} for spec in registry()}


def _no_row_is_half(engine: sa.Engine) -> None:
    """Every row's sealed columns are all in one form."""
    for table, rows in _stored_values(engine).items():
        for row in rows:
            assert len({crypto.is_sealed(v) for v in row if v is not None}) == 1, table


def _terms(engine: sa.Engine) -> set[bool]:
    """Whether the index's terms are hashed (True), plain (False) or both."""
    with engine.connect() as conn:
        terms = conn.execute(sa.select(memory_term.c.term)).scalars()
        return {t.startswith(crypto.HASHED_TERM_PREFIX) for t in terms}


def _key_count(engine: sa.Engine) -> int:
    """Data keys in the database."""
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(owner_key)).scalar_one())


def _plain_vectors(engine: sa.Engine) -> list[str]:
    """The beginnings of every stored (plain) vector."""
    with engine.connect() as conn:
        return [v[:40] for v in conn.execute(sa.select(memory_vector.c.vector)).scalars()]


def test_encrypt_then_decrypt_existing_converts_every_sealed_table(make_service, cli_key):
    plain = _service(make_service)
    data = Data(plain)
    before = data.read(plain)
    vectors = _plain_vectors(plain.engine)
    # Every table of the registry has rows here: a sealed table added later without data in
    # this test fails it, so no table can escape the conversion unseen.
    assert _forms(plain.engine) == _all(False)
    raw = database_bytes(plain.engine)
    assert all(word.encode() in raw for word in data.words.values())  # the scan finds them

    key = crypto.encode_master_key(crypto.new_master_key())
    online = _service(make_service, key)
    cli_key(key)
    assert main(["crypto", "encrypt-existing", "--batch", "2", "--quiet"]) == 0
    assert _forms(online.engine) == _all(True)
    assert _terms(online.engine) == {True}
    raw = database_bytes(online.engine)
    left = [place for place, word in data.words.items() if word.encode() in raw]
    assert left == [], f"still in the database's bytes: {left}"
    assert not any(v.encode() in raw for v in vectors)
    with online.engine.connect() as conn:
        assert set(conn.execute(sa.select(owner_key.c.state)).scalars()) == {data_keys.SEALED}
    assert data.read(online) == before
    assert data.read(_service(make_service, key)) == before  # a restart reads it all too

    assert main(["crypto", "decrypt-existing", "--batch", "3", "--quiet"]) == 0
    assert _forms(online.engine) == _all(False)
    assert _terms(online.engine) == {False}
    assert _key_count(online.engine) == 0
    cli_key(None)
    assert data.read(_service(make_service)) == before


def test_a_key_is_kept_while_anything_sealed_with_it_is_left(make_service, cli_key, monkeypatch):
    key = crypto.encode_master_key(crypto.new_master_key())
    sealed = _service(make_service, key)
    data = Data(sealed)
    before = data.read(sealed)
    keys = _key_count(sealed.engine)
    assert keys == 2  # alice's and the org's
    # A conversion that walks every table but the revisions (as one did): the key check still
    # finds them sealed, so no key is destroyed and nothing becomes unreadable.
    walked = tuple(s for s in registry() if s.table.name != "memory_revision")
    cli_key(key)
    with monkeypatch.context() as patched:
        patched.setattr(seal_existing, "tables", lambda: walked)
        assert main(["crypto", "decrypt-existing", "--quiet"]) == 1
    assert _key_count(sealed.engine) == 1  # the org has no revisions: its key went
    assert data.read(sealed) == before
    assert main(["crypto", "decrypt-existing", "--quiet"]) == 0
    assert _key_count(sealed.engine) == 0
    cli_key(None)
    assert data.read(_service(make_service)) == before


class _Stop(Exception):
    """Stands for a crash between two batches."""


@pytest.mark.parametrize("to_sealed", [True, False], ids=["encrypt", "decrypt"])
def test_an_interrupted_conversion_leaves_whole_rows_and_resumes(
    make_service, monkeypatch, to_sealed
):
    key = crypto.encode_master_key(crypto.new_master_key())
    service = _service(make_service, None if to_sealed else key)
    data = Data(service)
    before = data.read(service)
    online = _service(make_service, key)
    real = seal_existing.convert_batch
    calls = {"n": 0}

    def failing(conn: sa.Connection, *args: Any, **kwargs: Any) -> Any:
        """Convert, then fail the seventh batch after its writes (so it rolls back)."""
        calls["n"] += 1
        done = real(conn, *args, **kwargs)
        if calls["n"] == 7:
            raise _Stop
        return done

    with monkeypatch.context() as patched, pytest.raises(_Stop):
        patched.setattr(seal_existing, "convert_batch", failing)
        encryption.convert(online.db, to_sealed=to_sealed, batch=1)
    forms = set().union(*_forms(online.engine).values())
    assert forms == {True, False}  # it really stopped half way
    _no_row_is_half(online.engine)
    assert data.read(online) == before
    assert encryption.convert(online.db, to_sealed=to_sealed, batch=1) == []
    # And once more: a finished conversion run again changes nothing.
    assert encryption.convert(online.db, to_sealed=to_sealed, batch=1) == []
    assert _forms(online.engine) == _all(to_sealed)
    assert _key_count(online.engine) == (2 if to_sealed else 0)
    assert data.read(online) == before
