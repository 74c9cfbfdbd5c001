"""Key operations on both engines: rotate-master, encrypt-existing (killed with -9, resumed)
and decrypt-existing, each ending with a service that reads everything it read before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from functools import partial

import pytest
import sqlalchemy as sa

from memory_bank.app import create_app
from memory_bank.cli import main
from memory_bank.store.engine import writing
from memory_bank.store.schema import memory, memory_draft, owner_key
from memory_bank.store.sealing import crypto, data_keys
from memory_bank.store.sealing.seal_existing import left_to_convert
from polling import poll

USERS = ("alice", "bob", "carol")
# Small batches with a pause between them, so the kill lands half way through.
SLOW_BATCHES = ("--batch", "4", "--pause", "0.05", "--quiet")


def fill(service, per_user: int) -> dict[str, dict[str, str]]:
    """Memories (with contexts, citations, tags) and a draft for each user; their keys."""
    keys = {}
    for user in USERS:
        headers = service.auth(user)
        keys[user] = headers
        for i in range(per_user):
            body = {
                "content": f"{user} noted item {i} about the lighthouse and the ferry {i % 7}",
                "tags": [f"k{i % 5}"],
                "contexts": [{"snippet": f"chat {i}", "conversation_id": f"c{i}"}],
            }
            assert service.client.post("/v1/memory", json=body, headers=headers).status_code == 201
    return keys


def seen(service, keys: dict[str, dict[str, str]]) -> dict[str, object]:
    """What each user reads: every memory, and two searches with their scores."""
    out: dict[str, object] = {}
    for user, headers in keys.items():
        listed = service.client.get("/v1/memory", params={"limit": 100}, headers=headers)
        assert listed.status_code == 200, listed.text
        out[f"{user}/list"] = listed.json()["memories"]
        for q in ("lighthouse ferry 3", "item 12 chat"):
            r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
            assert r.status_code == 200, r.text
            out[f"{user}/{q}"] = [(m["id"], m["score"]) for m in r.json()["results"]]
    return out


@pytest.fixture
def cli_env(monkeypatch, database_url):
    """Point the in-process CLI at the test database; returns a setter for the master key."""
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)

    def use(key: str | None) -> None:
        if key is None:
            monkeypatch.delenv("MEMORY_BANK_MASTER_KEY", raising=False)
        else:
            monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", key)

    return use


def test_rotate_master_then_restart_reads_everything(make_service, cli_env, tmp_path, settings):
    old = crypto.encode_master_key(crypto.new_master_key())
    service = make_service(master_key=old)
    keys = fill(service, 4)
    before = seen(service, keys)
    new_file = tmp_path / "new.key"
    new = crypto.write_master_key_file(str(new_file), crypto.new_master_key())
    new_master = crypto.read_master_key_file(str(new))
    # An interrupted rotation: one key re-wrapped, the others not. Neither key may start.
    writing(
        service.engine,
        partial(
            data_keys.rewrap,
            user_id="alice",
            old=crypto.parse_master_key(old),
            new=new_master,
        ),
    )
    for key in (old, crypto.encode_master_key(new_master)):
        with pytest.raises(crypto.KeyProblem, match="finish `memory-bank crypto rotate-master`"):
            create_app(settings.replace(master_key=key))
    cli_env(old)
    assert main(["crypto", "rotate-master", "--new-key-file", str(new_file), "--quiet"]) == 0
    with service.engine.connect() as conn:
        assert set(conn.execute(sa.select(owner_key.c.master_id)).scalars()) == {
            new_master.fingerprint
        }
    restarted = make_service(master_key=crypto.encode_master_key(new_master))
    assert seen(restarted, keys) == before
    with pytest.raises(crypto.KeyProblem, match="wrong master key"):
        create_app(settings.replace(master_key=old))


def _sealed_counts(engine: sa.Engine) -> tuple[int, int]:
    """(sealed, plain) memory rows."""
    with engine.connect() as conn:
        contents = list(conn.execute(sa.select(memory.c.content)).scalars())
    sealed = sum(crypto.is_sealed(c) for c in contents)
    return sealed, len(contents) - sealed


@pytest.mark.slow
def test_encrypt_existing_killed_with_9_and_resumed_ends_sealed_with_nothing_lost(
    make_service, cli_env, database_url
):
    plain = make_service()
    keys = fill(plain, 30)
    # Another user's save meanwhile (alice's would change her scores).
    dave = plain.auth("dave")
    before = seen(plain, keys)
    reviewed = make_service(review_required=True)
    erin = reviewed.auth("erin")
    body = {"content": "draft about the ferry", "contexts": [{"snippet": "erin's chat"}]}
    draft = reviewed.client.post("/v1/memory", json=body, headers=erin).json()["draft"]
    key = crypto.encode_master_key(crypto.new_master_key())
    # The service restarts with the key first, as docs/security.md says; it reads throughout.
    online = make_service(master_key=key)
    assert seen(online, keys) == before
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_bank.cli", "crypto", "encrypt-existing", *SLOW_BATCHES],
        env={**os.environ, "MEMORY_BANK_DATABASE_URL": database_url, "MEMORY_BANK_MASTER_KEY": key},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        poll(lambda: _sealed_counts(online.engine)[0] >= 12, every=0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    sealed, left = _sealed_counts(online.engine)
    assert proc.returncode == -signal.SIGKILL
    assert sealed >= 12 and left > 0  # it really stopped half way
    # Half converted, the live service still reads everything the same, and saves sealed.
    assert seen(online, keys) == before
    extra = online.client.post("/v1/memory", json={"content": "saved meanwhile"}, headers=dave)
    assert crypto.is_sealed(_content_of(online.engine, extra.json()["memory"]["id"]))
    cli_env(key)
    assert main(["crypto", "encrypt-existing", "--batch", "7", "--quiet"]) == 0
    assert _sealed_counts(online.engine)[1] == 0
    with online.engine.connect() as conn:
        states = set(conn.execute(sa.select(owner_key.c.state)).scalars())
        assert states == {data_keys.SEALED}
        assert all(left_to_convert(conn, u, to_sealed=True) == 0 for u in (*USERS, "dave", "erin"))
    assert seen(online, keys) == before
    got = online.client.get(f"/v1/memory/drafts/{draft['id']}", headers=erin).json()["draft"]
    assert got["content"] == draft["content"] and got["contexts"] == draft["contexts"]
    with online.engine.connect() as conn:
        stored = conn.execute(sa.select(memory_draft.c.content, memory_draft.c.contexts)).one()
    assert all(crypto.is_sealed(v) for v in stored)
    # And back, for recovery: every row plain, no key left, a service without a key reads all.
    assert main(["crypto", "decrypt-existing", "--quiet"]) == 0
    assert _sealed_counts(online.engine)[0] == 0
    with online.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(owner_key)).scalar() == 0
    cli_env(None)
    assert seen(make_service(), keys) == before


def _content_of(engine: sa.Engine, memory_id: str) -> str:
    """A memory's content column as stored."""
    with engine.connect() as conn:
        return conn.execute(
            sa.select(memory.c.content).where(memory.c.id == memory_id)
        ).scalar_one()
