"""A user's lifecycle on both engines, encrypted: export (API and CLI), erase, import back."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from memory_bank.cli import main
from memory_bank.store.schema import metadata
from memory_bank.store.sealing import crypto


@pytest.fixture
def sealed(make_service, monkeypatch, database_url):
    """An encrypted service, and the CLI pointed at the same database and key."""
    key = crypto.encode_master_key(crypto.new_master_key())
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", key)
    return make_service(master_key=key)


def fill(service, user: str, n: int) -> list[dict]:
    """Save n memories with tags and contexts for a user; returns them as the API shows them."""
    headers = service.auth(user)
    saved = []
    for i in range(n):
        body = {
            "content": f"{user} memory number {i} about the harbour",
            "tags": [f"t{i}", "common"],
            "contexts": [
                {"snippet": f"said {i}", "conversation_id": f"c{i}", "message_id": f"m{i}"},
                {"snippet": "no citation", "origin": "searched_conversation"},
            ],
        }
        r = service.client.post("/v1/memory", json=body, headers=headers)
        assert r.status_code == 201
        saved.append(r.json()["memory"])
    return saved


def rows_of(engine: sa.Engine, user: str) -> dict[str, int]:
    """The user's rows in every table with a user_id column."""
    with engine.connect() as conn:
        return {
            t.name: conn.execute(
                sa.select(sa.func.count()).select_from(t).where(t.c.user_id == user)
            ).scalar_one()
            for t in metadata.sorted_tables
            if "user_id" in t.c
        }


def test_api_export_streams_a_header_then_every_memory(sealed):
    saved = fill(sealed, "alice", 3)
    fill(sealed, "bob", 1)
    r = sealed.client.get("/v1/memory/export", headers=sealed.auth("alice"))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert lines[0]["format"] == "memory-bank-export" and lines[0]["version"] == 1
    assert lines[0]["user_id"] == "alice"
    assert lines[1:] == list(reversed(saved))  # newest first, exactly as getMemoryById
    scoped = sealed.client.get(
        "/v1/memory/export", headers=sealed.auth("alice", scopes=("mcp:write",))
    )
    assert scoped.status_code == 403


def test_export_erase_import_gives_back_the_same_memories(sealed, capsys, tmp_path):
    saved = fill(sealed, "alice", 5)
    fill(sealed, "bob", 2)
    bob_before = rows_of(sealed.engine, "bob")
    assert main(["users", "export", "alice"]) == 0
    export = capsys.readouterr().out
    dump = tmp_path / "alice.jsonl"
    dump.write_text(export)
    assert len(export.splitlines()) == 6

    assert main(["users", "erase", "alice", "--yes"]) == 0
    assert "erased alice" in capsys.readouterr().out
    assert set(rows_of(sealed.engine, "alice").values()) == {0}
    assert rows_of(sealed.engine, "bob") == bob_before

    assert main(["users", "import", "alice", str(dump), "--quiet"]) == 0
    assert "imported 5 memories" in capsys.readouterr().err
    headers = sealed.auth("alice")
    listed = sealed.client.get("/v1/memory", headers=headers).json()["memories"]
    assert listed == list(reversed(saved))  # ids, times, contexts and citations
    found = sealed.client.get("/v1/memory/search", params={"q": "harbour"}, headers=headers)
    assert len(found.json()["results"]) == 5
    # A new data key was made for the restored rows; importing again changes nothing.
    assert main(["users", "import", "alice", str(dump), "--quiet"]) == 0
    assert "imported 0 memories" in capsys.readouterr().err
    assert len(sealed.client.get("/v1/memory", headers=headers).json()["memories"]) == 5


def test_an_import_with_a_bad_line_imports_nothing_and_names_it(sealed, capsys, tmp_path):
    fill(sealed, "alice", 3)
    assert main(["users", "export", "alice"]) == 0
    lines = capsys.readouterr().out.splitlines()
    broken = json.loads(lines[2])
    broken["content"] = "   "
    lines[2] = json.dumps(broken)
    lines.insert(3, "{not json")
    dump = tmp_path / "bad.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    assert main(["users", "import", "carol", str(dump), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{dump}:3: 'content' must not be blank" in err, err
    assert f"{dump}:4: The line is not valid JSON" in err
    assert "imported nothing" in err
    assert set(rows_of(sealed.engine, "carol").values()) == {0}
    # Alice's ids are hers: importing them for carol is refused by line, not half done.
    assert main(["users", "import", "carol", str(dump), "--skip-bad", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "belongs to another user" in err and "imported 0 memories" in err


def test_erase_asks_first_without_yes(sealed, capsys, monkeypatch):
    fill(sealed, "alice", 1)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["users", "erase", "alice"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert rows_of(sealed.engine, "alice")["memory"] == 1


def test_export_and_import_keep_text_with_unicode_line_separators(sealed, capsys, tmp_path):
    # json.dumps leaves U+2028 raw; a reader splitting on every Unicode line break would cut
    # the line inside the string. ndjson lines end at "\n" only, on both sides.
    odd = "first\u2028second\u2029third\x85fourth\x1cfifth"
    headers = sealed.auth("alice")
    saved = sealed.client.post("/v1/memory", json={"content": odd}, headers=headers)
    assert saved.status_code == 201
    exported = sealed.client.get("/v1/memory/export", headers=headers)
    assert exported.status_code == 200
    assert json.loads(exported.text.split("\n")[1])["content"] == odd
    assert main(["users", "export", "alice"]) == 0
    dump = tmp_path / "odd.jsonl"
    dump.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["users", "import", "zed", str(dump), "--quiet"]) == 1  # the id is alice's
    assert "belongs to another user" in capsys.readouterr().err
    assert main(["users", "erase", "alice", "--yes"]) == 0
    assert main(["users", "import", "alice", str(dump), "--quiet"]) == 0
    got = sealed.client.get("/v1/memory", headers=sealed.auth("alice")).json()["memories"]
    assert [m["content"] for m in got] == [odd]


def test_erase_says_what_it_keeps_of_the_users_org_writing(sealed, capsys):
    member = sealed.auth("alice", org="acme", scopes=("mcp:read", "mcp:write", "org:write"))
    for content in ("the team's deploy day is Tuesday", "the team's standup is at ten"):
        r = sealed.client.post(
            "/v1/memory", json={"content": content, "scope": "org"}, headers=member
        )
        assert r.status_code == 201, r.text
    fill(sealed, "alice", 1)
    colleague = sealed.auth("bob", org="acme")
    assert main(["users", "erase", "alice", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "erased alice: " in out
    kept = "kept, as their orgs' data: 2 org memories, 0 org drafts, 2 org audit entries"
    assert f"{kept} written by alice" in out, out
    shared = sealed.client.get("/v1/memory", params={"scope": "org"}, headers=colleague)
    assert len(shared.json()["memories"]) == 2
    assert set(rows_of(sealed.engine, "alice").values()) == {0}


def test_export_takes_the_list_filters(sealed, capsys):
    saved = fill(sealed, "alice", 4)
    headers = sealed.auth("alice")
    r = sealed.client.post(
        "/v1/memory",
        json={"content": "alice tagged twice", "tags": ["T1", "Extra"]},
        headers=headers,
    )
    assert r.status_code == 201
    extra = r.json()["memory"]["id"]
    capsys.readouterr()

    def exported(*flags: str) -> list[str]:
        assert main(["users", "export", "alice", *flags]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert json.loads(lines[0])["format"] == "memory-bank-export"
        return [json.loads(line)["id"] for line in lines[1:]]

    assert exported("--tag", "t1") == [extra, saved[1]["id"]]
    assert exported("--tag", "t1", "--tag", "EXTRA") == [extra]
    assert exported("--source", "test-suite", "--tag", "common") == [
        m["id"] for m in reversed(saved)
    ]
    assert exported("--created-after", "2999-01-01") == []
    assert exported("--created-before", "2999-01-01T00:00:00Z", "--tag", "t3") == [saved[3]["id"]]


def test_export_names_a_bad_filter(sealed, capsys):
    assert main(["users", "export", "alice", "--created-after", "last week"]) == 2
    err = capsys.readouterr().err
    assert "--created-after" in err and "RFC 3339" in err
