"""`memory-bank users import` on hostile files, as a real process on both engines: every bad line
named by number and field, nothing half imported, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from memory_bank.cli import main
from memory_bank.ids import new_id
from memory_bank.store.schema import metadata
from memory_bank.store.sealing import crypto

HEADER = {"format": "memory-bank-export", "version": 1, "user_id": "x", "exported_at": "x"}
WHEN = "2026-03-01T10:00:00.000Z"


@pytest.fixture
def sealed(make_service, database_url):
    """An encrypted service, and the environment a CLI process needs for the same database."""
    key = crypto.encode_master_key(crypto.new_master_key())
    service = make_service(master_key=key)
    service.env = {"MEMORY_BANK_DATABASE_URL": database_url, "MEMORY_BANK_MASTER_KEY": key}
    return service


def run_cli(service, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real command, in its own process, on the service's database."""
    proc = subprocess.run(
        [sys.executable, "-m", "memory_bank.cli", *argv],
        env={**os.environ, **service.env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc


def memory(content: str = "a memory about the harbour", contexts: int = 1) -> dict:
    """One export line's memory, with fresh ids."""
    return {
        "id": new_id("mem"),
        "content": content,
        "tags": ["t"],
        "source": "api",
        "scope": "user",
        "created_at": WHEN,
        "updated_at": WHEN,
        "revision": 1,
        "contexts": [
            {
                "id": new_id("mctx"),
                "snippet": f"snippet {n}",
                "citation": {"conversation_id": "c1", "message_id": f"m{n}"},
                "origin": None,
                "created_at": WHEN,
            }
            for n in range(contexts)
        ],
    }


def export_file(path: Path, lines: list[dict | str | bytes]) -> Path:
    """Write an export: the header, then each memory (a dict as JSON, text or bytes as given)."""
    raw = [json.dumps(HEADER).encode()]
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line)
        raw.append(line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass"))
    path.write_bytes(b"\n".join(raw) + b"\n")
    return path


def rows_of(engine: sa.Engine, user: str) -> int:
    """The user's rows in all tables with a user_id column."""
    with engine.connect() as conn:
        return sum(
            conn.execute(
                sa.select(sa.func.count()).select_from(t).where(t.c.user_id == user)
            ).scalar_one()
            for t in metadata.sorted_tables
            if "user_id" in t.c
        )


def listed(service, user: str) -> list[dict]:
    """The user's memories through the API."""
    r = service.client.get("/v1/memory", params={"limit": 100}, headers=service.auth(user))
    assert r.status_code == 200
    return r.json()["memories"]


def test_every_bad_line_is_named_and_nothing_is_imported(sealed, tmp_path):
    saved = sealed.client.post(
        "/v1/memory",
        json={"content": "bob's", "contexts": [{"snippet": "s"}]},
        headers=sealed.auth("bob"),
    )
    bobs_context = saved.json()["memory"]["contexts"][0]["id"]
    good, shared = memory(), memory(contexts=2)
    twin = memory()
    twin["contexts"][0]["id"] = shared["contexts"][1]["id"]
    stolen = memory()
    stolen["contexts"][0]["id"] = bobs_context
    early, before_year_one = memory(), memory()
    early["created_at"] = "0999-12-31T23:59:59.999Z"
    before_year_one["contexts"][0]["created_at"] = "0001-01-01T00:00:00+01:00"
    cited = memory()
    cited["contexts"][0]["citation"]["message_id"] = "m" * 129
    doubled = memory(contexts=2)
    doubled["contexts"][1]["id"] = doubled["contexts"][0]["id"]
    deep = memory()
    deep["content"] = "DEEP"
    huge = json.dumps(memory()).replace('"revision": 1', '"revision": ' + "9" * 5000)
    lone = json.dumps(memory()).replace("harbour", "harbour \\ud800")
    dump = export_file(
        tmp_path / "bad.jsonl",
        [
            good,  # 2
            shared,  # 3
            twin,  # 4: a context id of line 3
            stolen,  # 5: a context id of bob's
            early,  # 6
            before_year_one,  # 7
            json.dumps(deep).replace('"DEEP"', "[" * 100_000 + "]" * 100_000),  # 8
            huge,  # 9
            lone,  # 10
            b'{"content": "caf\xe9"}',  # 11: Latin-1, not UTF-8
            "id,content,tags",  # 12
            cited,  # 13
            doubled,  # 14
        ],
    )
    proc = run_cli(sealed, "users", "import", "carol", str(dump), "--quiet")
    assert proc.returncode == 1, proc.stderr
    expected = {
        4: f"'contexts.0.id' {twin['contexts'][0]['id']} is also on line 3.",
        5: f"'contexts.0.id' {bobs_context} belongs to another memory already stored.",
        6: "'created_at' must be between the years 1000 and 9999 (UTC).",
        7: "'contexts.0.created_at' must be between the years 1000 and 9999 (UTC).",
        8: "'content' is nested too deeply.",
        9: "'revision' has a number with too many digits.",
        10: "'content' contains an unpaired UTF-16 surrogate",
        11: "The line is not UTF-8 text (byte 0xe9 at column 17).",
        12: "The line is not valid JSON",
        13: "'contexts.0.citation.message_id' must be at most 128 characters.",
        14: f"'contexts.1.id' {doubled['contexts'][0]['id']} is also contexts.0.id.",
    }
    for number, message in expected.items():
        assert f"{dump}:{number}: {message}" in proc.stderr, proc.stderr
    assert f"{dump}:2:" not in proc.stderr and f"{dump}:3:" not in proc.stderr
    assert "imported nothing: 11 bad line(s), the first on line 4" in proc.stderr
    assert rows_of(sealed.engine, "carol") == 0

    proc = run_cli(sealed, "users", "import", "carol", str(dump), "--quiet", "--skip-bad")
    assert proc.returncode == 0, proc.stderr
    assert f"{dump}:4: 'contexts.0.id'" in proc.stderr
    assert "imported 2 memories for carol, 11 bad line(s) skipped" in proc.stderr
    assert {m["id"] for m in listed(sealed, "carol")} == {good["id"], shared["id"]}
    # Importing again writes nothing more and still names the bad lines.
    proc = run_cli(sealed, "users", "import", "carol", str(dump), "--quiet", "--skip-bad")
    assert "imported 0 memories for carol, 2 already there" in proc.stderr
    assert len(listed(sealed, "bob")) == 1


NOT_EXPORTS = [
    (b"id,content\n1,hello\n", "not a memory-bank export: The line is not valid JSON"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not a memory-bank export: The line is not UTF-8"),
    (b'[\n  {"content": "x"}\n]\n', "not a memory-bank export"),
    (b"", "not a memory-bank export"),
    (
        b'{"format": "memory-bank-export", "version": 2}\n',
        "export format version 2; this memory-bank reads version 1",
    ),
    (b'{"version": ' + b"9" * 5000 + b"}\n", "export: 'version' has a number with too many"),
]


def test_a_file_that_is_no_export_is_refused_whole(sealed, tmp_path, monkeypatch, capsys):
    # In this process (the bad-line tests run the command as its own process): an escaping
    # exception fails the test as a traceback would.
    for name, value in sealed.env.items():
        monkeypatch.setenv(name, value)
    for n, (content, message) in enumerate(NOT_EXPORTS):
        dump = tmp_path / f"not-an-export-{n}"
        dump.write_bytes(content)
        skip = ["--skip-bad"] if n % 2 else []  # the header is no line to skip
        assert main(["users", "import", "carol", str(dump), "--quiet", *skip]) == 2
        err = capsys.readouterr().err
        assert err.startswith("memory-bank: error: line 1: ") and message in err, err
    assert main(["users", "import", "carol", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["users", "import", "carol", str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert rows_of(sealed.engine, "carol") == 0


def _failing_insert(engine: sa.Engine, memory_id: str) -> tuple[str, str]:
    """DDL for a trigger that fails the insert of one memory, and DDL that drops it."""
    if engine.dialect.name == "sqlite":
        create = (
            "CREATE TRIGGER import_fails BEFORE INSERT ON memory "
            f"WHEN NEW.id = '{memory_id}' BEGIN SELECT RAISE(ABORT, 'refused by a test'); END"
        )
    else:
        create = (
            "CREATE TRIGGER import_fails BEFORE INSERT ON memory FOR EACH ROW "
            f"BEGIN IF NEW.id = '{memory_id}' THEN "
            "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by a test'; END IF; END"
        )
    return create, "DROP TRIGGER import_fails"


def test_a_failed_write_leaves_nothing_imported(sealed, tmp_path):
    # More memories than the old batches of 200, failing near the end: all or nothing.
    memories = [memory(f"memory {n} about the harbour") for n in range(230)]
    dump = export_file(tmp_path / "alice.jsonl", memories)
    create, drop = _failing_insert(sealed.engine, memories[-5]["id"])
    with sealed.engine.begin() as conn:
        conn.execute(sa.text(create))
    try:
        proc = run_cli(sealed, "users", "import", "carol", str(dump), "--quiet")
    finally:
        with sealed.engine.begin() as conn:
            conn.execute(sa.text(drop))
    assert proc.returncode == 3, proc.stderr
    assert "imported nothing: writing failed" in proc.stderr
    assert "refused by a test" in proc.stderr and "INSERT" not in proc.stderr
    assert "the same command can be run again" in proc.stderr
    assert rows_of(sealed.engine, "carol") == 0
    proc = run_cli(sealed, "users", "import", "carol", str(dump), "--quiet")
    assert proc.returncode == 0 and "imported 230 memories for carol" in proc.stderr
    assert rows_of(sealed.engine, "carol") > 0


SOURCES = [
    ("api\x00evil", "'source' must not contain NUL characters."),
    ("\x00", "'source' must not contain NUL characters."),
    ("a" * 129, "'source' must be an integration's name: 1-128 characters."),
    ("", "'source' must not be blank."),
    (None, "'source' must be a string."),
    ("api ", "'source' must not have surrounding spaces or control characters."),
    ("api\tx", "'source' must not have surrounding spaces or control characters."),
]


def test_a_source_a_key_could_not_carry_is_refused(sealed, tmp_path, monkeypatch, capsys):
    # The REST save stores its key's source, which may hold no NUL or other control character
    # (and the source filter could never find one): an import keeps to the same rules.
    for name, value in sealed.env.items():
        monkeypatch.setenv(name, value)
    good = memory()
    bad = []
    for source, _ in SOURCES:
        line = memory()
        line["source"] = source
        bad.append(line)
    missing = memory()
    del missing["source"]
    dump = export_file(tmp_path / "sources.jsonl", [good, *bad, missing])
    assert main(["users", "import", "carol", str(dump), "--quiet"]) == 1
    err = capsys.readouterr().err
    for number, (_, message) in enumerate(SOURCES, start=3):
        assert f"{dump}:{number}: {message}" in err, err
    assert f"{dump}:{len(SOURCES) + 3}: 'source' is required." in err, err
    assert f"imported nothing: {len(SOURCES) + 1} bad line(s), the first on line 3" in err
    assert rows_of(sealed.engine, "carol") == 0


def test_a_rule_of_the_saves_parsing_names_its_line(sealed, tmp_path, monkeypatch, capsys):
    # Import parses each line with the REST save's own parser (domain/bodies.py): a rule that
    # parser applies beyond the spec's schema refuses the line, by number, never a traceback.
    from memory_bank.domain import bodies
    from memory_bank.errors import InvalidRequest

    for name, value in sealed.env.items():
        monkeypatch.setenv(name, value)
    real = bodies.new_memory

    def stricter(body):
        if "forbidden" in body["content"]:
            raise InvalidRequest("'content' breaks a rule of the save.", field="content")
        return real(body)

    monkeypatch.setattr(bodies, "new_memory", stricter)
    dump = export_file(tmp_path / "rule.jsonl", [memory(), memory("a forbidden memory")])
    assert main(["users", "import", "carol", str(dump), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{dump}:3: 'content' breaks a rule of the save." in err, err
    assert rows_of(sealed.engine, "carol") == 0


def test_a_tag_with_a_comma_is_refused_as_the_save_refuses_it(
    sealed, tmp_path, monkeypatch, capsys
):
    # The `tag` filter splits its value on commas, so a tag holding one could never be found:
    # the spec refuses it in a new tag, and an import reads its lines with the save's schema.
    for name, value in sealed.env.items():
        monkeypatch.setenv(name, value)
    comma = memory()
    comma["tags"] = ["fine", "a,b"]
    dump = export_file(tmp_path / "comma.jsonl", [memory(), comma])
    assert main(["users", "import", "carol", str(dump), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{dump}:3: 'tags.1'" in err and "comma" in err, err
    assert rows_of(sealed.engine, "carol") == 0
