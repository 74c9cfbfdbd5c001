"""An org's data lifecycle on both engines, encrypted: `orgs export|import|erase`, and every
`users` command refusing an org's owner key."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from databases import MARIADB_ADMIN_URL
from memory_bank.cli import main
from memory_bank.store.schema import metadata, org_audit, user_settings
from memory_bank.store.sealing import crypto

ORG = "acme"
OWNER = f"org:{ORG}"
WRITER = ("mcp:read", "mcp:write", "org:write")
ADMIN = ("mcp:read", "mcp:write", "org:admin")


@pytest.fixture
def sealed(make_service, monkeypatch, database_url):
    """An encrypted service, and the CLI pointed at the same database and key."""
    key = crypto.encode_master_key(crypto.new_master_key())
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", key)
    return make_service(master_key=key)


@pytest.fixture
def other_database_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A second, empty database on the same engine: another cluster to move an org to."""
    if database_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'other.db'}"
        return
    name = f"mbtest_other_{secrets.token_hex(4)}"
    admin = sa.create_engine(MARIADB_ADMIN_URL)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    try:
        yield sa.engine.make_url(MARIADB_ADMIN_URL).set(database=name).render_as_string(False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


def rows_of(engine: sa.Engine, owner: str) -> dict[str, int]:
    """The owner's rows in every table with a user_id column."""
    with engine.connect() as conn:
        return {
            t.name: conn.execute(
                sa.select(sa.func.count()).select_from(t).where(t.c.user_id == owner)
            ).scalar_one()
            for t in metadata.sorted_tables
            if "user_id" in t.c
        }


def save(service, headers: dict[str, str], content: str, scope: str = "org") -> dict:
    """Save one memory with a tag and a cited context; returns it as the API shows it."""
    body = {
        "content": content,
        "scope": scope,
        "tags": ["team", content.split()[0]],
        "contexts": [{"snippet": f"said: {content}", "conversation_id": "c", "message_id": "m"}],
    }
    r = service.client.post("/v1/memory", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["memory"]


def org_listing(service, headers: dict[str, str]) -> list[dict]:
    """The org's memories as a member lists them."""
    r = service.client.get("/v1/memory", params={"scope": "org", "limit": 100}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["memories"]


def test_every_users_command_refuses_an_org_key(sealed, capsys, tmp_path):
    alice = sealed.auth("alice", org=ORG, scopes=WRITER)
    save(sealed, alice, "deploys happen on Tuesday")
    before = rows_of(sealed.engine, OWNER)
    line = {
        "id": "mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C",
        "content": "an intruder's memory",
        "tags": [],
        "source": "api",
        "created_at": "2026-03-01T10:00:00.000Z",
        "updated_at": "2026-03-01T10:00:00.000Z",
        "contexts": [],
    }
    dump = tmp_path / "f.ndjson"
    dump.write_text(json.dumps({"format": "memory-bank-export", "version": 1}) + "\n")
    dump.write_text(dump.read_text() + json.dumps(line) + "\n")
    commands = [
        ["users", "export", OWNER],
        ["users", "import", OWNER, str(dump), "--quiet"],
        ["users", "erase", OWNER, "--yes"],
        ["users", "disable", OWNER],
        ["users", "enable", OWNER],
    ]
    for argv in commands:
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "", argv
        assert "is an org's owner key, not a user id" in err, (argv, err)
        assert f"memory-bank orgs export|import|erase {ORG}" in err, (argv, err)
    assert rows_of(sealed.engine, OWNER) == before
    with sealed.engine.connect() as conn:
        switches = sa.select(sa.func.count()).select_from(user_settings)
        assert conn.execute(switches.where(user_settings.c.user_id == OWNER)).scalar_one() == 0
    member = sealed.auth("bob", org=ORG)
    assert [m["content"] for m in org_listing(sealed, member)] == ["deploys happen on Tuesday"]


def test_an_org_moves_to_another_database_with_its_authors(
    sealed, make_service, other_database_url, monkeypatch, capsys, tmp_path
):
    alice = sealed.auth("alice", org=ORG, scopes=WRITER)
    bob = sealed.auth("bob", org=ORG, scopes=WRITER)
    save(sealed, alice, "deploys happen on Tuesday")
    save(sealed, bob, "standup is at ten")
    save(sealed, alice, "the staging password rotates monthly")
    save(sealed, alice, "alice prefers tea", scope="user")
    globex = sealed.auth("gina", org="globex", scopes=WRITER)
    save(sealed, globex, "globex ships on Fridays")
    shown = org_listing(sealed, sealed.auth("carol", org=ORG))
    assert {m["created_by"] for m in shown} == {"alice", "bob"} and len(shown) == 3

    assert main(["orgs", "export", ORG]) == 0
    out, err = capsys.readouterr()
    assert "exported 3 memories of org acme" in err
    lines = out.splitlines()
    assert json.loads(lines[0])["org_id"] == ORG
    dump = tmp_path / "acme.ndjson"
    dump.write_text(out)

    # The other cluster: its own database and its own master key.
    other_key = crypto.encode_master_key(crypto.new_master_key())
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", other_database_url)
    monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", other_key)
    assert main(["orgs", "import", ORG, str(dump), "--quiet"]) == 0
    assert "imported 3 memories for org acme" in capsys.readouterr().err
    moved = make_service(database_url=other_database_url, master_key=other_key)
    member = moved.auth("carol", org=ORG, scopes=("mcp:read",))
    assert org_listing(moved, member) == shown  # ids, times, authors, contexts, citations
    found = moved.client.get(
        "/v1/memory/search", params={"q": "standup", "scope": "org"}, headers=member
    )
    assert [m["id"] for m in found.json()["results"]][:1] == [shown[1]["id"]]
    # Each memory written is logged as created by its author, as a save by them would be.
    admin = moved.auth("dana", org=ORG, scopes=ADMIN)
    audit = moved.client.get("/v1/org/audit", headers=admin).json()["entries"]
    assert sorted((e["action"], e["memory_id"], e["actor"]) for e in audit) == sorted(
        ("created", m["id"], m["created_by"]) for m in shown
    )
    assert {e["source"] for e in audit} == {"test-suite"}
    # Importing again writes nothing more.
    assert main(["orgs", "import", ORG, str(dump), "--quiet"]) == 0
    assert "imported 0 memories for org acme, 3 already there" in capsys.readouterr().err
    assert len(moved.client.get("/v1/org/audit", headers=admin).json()["entries"]) == 3
    # The authors keep what an author may do: alice deletes her own org memory there.
    alice_there = moved.auth("alice", org=ORG, scopes=WRITER)
    r = moved.client.delete(f"/v1/memory/{shown[0]['id']}", headers=alice_there)
    assert r.status_code == 204, r.text
    assert rows_of(moved.engine, "alice")["memory"] == 0  # personal memories did not travel
    assert rows_of(moved.engine, "org:globex")["memory"] == 0


def test_an_org_import_needs_an_author_for_every_memory(sealed, capsys, tmp_path):
    save(sealed, sealed.auth("alice"), "alice's own note", scope="user")
    assert main(["users", "export", "alice"]) == 0
    dump = tmp_path / "alice.ndjson"
    dump.write_text(capsys.readouterr().out)
    assert main(["users", "erase", "alice", "--yes"]) == 0
    capsys.readouterr()

    assert main(["orgs", "import", ORG, str(dump), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{dump}:2: 'created_by' is missing: an org memory needs its author" in err, err
    assert set(rows_of(sealed.engine, OWNER).values()) == {0}
    assert main(["orgs", "import", ORG, str(dump), "--author", "org:x", "--quiet"]) == 2
    assert "--author must be a user id" in capsys.readouterr().err
    assert main(["orgs", "import", ORG, str(dump), "--author", "bob", "--quiet"]) == 0
    member = sealed.auth("carol", org=ORG)
    assert [m["created_by"] for m in org_listing(sealed, member)] == ["bob"]


def test_orgs_erase_is_gated_then_removes_the_org_and_its_log(sealed, capsys, monkeypatch):
    alice = sealed.auth("alice", org=ORG, scopes=WRITER)
    save(sealed, alice, "deploys happen on Tuesday")
    save(sealed, alice, "alice prefers tea", scope="user")
    save(sealed, sealed.auth("gina", org="globex", scopes=WRITER), "globex ships on Fridays")
    before = rows_of(sealed.engine, OWNER)
    assert before["memory"] == 1 and before["org_audit"] == 1 and before["owner_key"] == 1
    others = {who: rows_of(sealed.engine, who) for who in ("alice", "org:globex")}

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["orgs", "erase", ORG]) == 2
    assert "--yes" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda question: "globex")
    assert main(["orgs", "erase", ORG]) == 1
    assert "not erased" in capsys.readouterr().err
    assert rows_of(sealed.engine, OWNER) == before

    assert main(["orgs", "erase", ORG, "--yes"]) == 0
    out = capsys.readouterr().out
    assert "erased org acme: " in out and "memory 1" in out and "org_audit 1" in out, out
    assert "kept: 1 member(s) with a usable key of acme" in out, out
    assert set(rows_of(sealed.engine, OWNER).values()) == {0}
    with sealed.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(org_audit)).scalar_one() == 1
    assert {who: rows_of(sealed.engine, who) for who in others} == others
    assert org_listing(sealed, alice) == []
