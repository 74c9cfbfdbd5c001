"""The memory-bank command: key management, clear errors and exit codes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime

import pytest

from memory_bank import cli
from memory_bank.cli.common import open_database
from memory_bank.cli.serve import ensure_local_key
from memory_bank.settings import Settings, documented
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing

UNREACHABLE = "mysql+pymysql://agent:s3cret-pw@127.0.0.1:1/memory"


def run(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _key_of(out):
    return re.search(r"key:\s+(mb_\S+)", out).group(1)


def _id_of(out):
    return re.search(r"id:\s+(key_\S+)", out).group(1)


def test_keys_create_prints_a_working_key_once(service, database_url, capsys):
    code, out, _ = run(
        capsys, "--database-url", database_url, "keys", "create", "--user", "carol",
        "--source", "claude-desktop", "--scopes", "mcp:read,mcp:write",
    )  # fmt: skip
    assert code == 0
    secret = _key_of(out)
    assert "not shown again" in out
    headers = {"Authorization": f"Bearer {secret}"}
    r = service.client.post("/v1/memory", json={"content": "from cli key"}, headers=headers)
    assert r.status_code == 201
    assert r.json()["memory"]["source"] == "claude-desktop"
    code, listed, _ = run(capsys, "--database-url", database_url, "keys", "list")
    assert code == 0
    assert _id_of(out) in listed and "carol" in listed and "active" in listed
    assert secret not in listed and secret[3:15] not in listed


def test_keys_list_filters_by_user_and_shows_state(database_url, capsys):
    base = ["--database-url", database_url, "keys"]
    run(capsys, *base, "create", "--user", "erin", "--scopes", "mcp:read")
    # The command refuses a past expiry; a key that has expired since is made directly.
    engine = make_engine(database_url)
    _, record = writing(
        engine,
        lambda conn: api_keys.create_key(
            conn, "dave", ("mcp:read",), "api", None, datetime(2000, 1, 1)
        ),
    )
    engine.dispose()
    expired = record.id
    code, listed, _ = run(capsys, *base, "list", "--user", "dave")
    assert code == 0
    assert expired in listed and "expired" in listed and "erin" not in listed


def test_keys_revoke_makes_the_key_401(service, database_url, capsys):
    base = ["--database-url", database_url, "keys"]
    _, out, _ = run(capsys, *base, "create", "--user", "frank")
    secret, key_id = _key_of(out), _id_of(out)
    headers = {"Authorization": f"Bearer {secret}"}
    assert service.client.get("/v1/memory", headers=headers).status_code == 200
    code, out, _ = run(capsys, *base, "revoke", key_id)
    assert code == 0 and key_id in out
    r = service.client.get("/v1/memory", headers=headers)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    _, listed, _ = run(capsys, *base, "list")
    assert "revoked" in listed
    code, _, err = run(capsys, *base, "revoke", key_id)
    assert code == 1 and "no active key" in err
    code, _, err = run(capsys, *base, "revoke", "key_doesnotexist")
    assert code == 1 and "no active key" in err


def test_expiry_forms(database_url, capsys):
    base = ["--database-url", database_url, "keys", "create", "--user", "gina", "--expires"]
    for good in ("30d", "12h", "90m", "2031-01-31", "2031-01-31T10:00:00Z"):
        code, out, err = run(capsys, *base, good)
        assert code == 0, err
        assert "expires: never" not in out
    code, _, err = run(capsys, *base, "next tuesday")
    assert code == 2 and "--expires" in err


def test_keys_create_rejects_bad_arguments_with_exit_2(database_url, capsys):
    cases = [
        (["--scopes", "mcp:read,admin"], "unknown scope"),
        (["--scopes", ""], "unknown scope"),
        (["--user", ""], "--user must be"),
        (["--user", "alice "], "surrounding spaces"),
        (["--user", "u" * 129], "--user must be"),
        (["--source", "s" * 129], "source must be"),
        (["--org", " acme"], "org id"),
    ]
    for args, message in cases:
        argv = ["--database-url", database_url, "keys", "create", "--user", "hank", *args]
        code, out, err = run(capsys, *argv)
        assert code == 2, args
        assert message in err and err.startswith("memory-bank: error:"), args
        assert "mb_" not in out, args


@pytest.mark.parametrize(
    "argv",
    [[], ["keys"], ["keys", "create"], ["frobnicate"], ["serve", "--port", "eighty"]],
)
def test_argparse_errors_exit_2_with_usage(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert "usage: memory-bank" in capsys.readouterr().err


def test_bad_setting_in_environment_exits_2_naming_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    monkeypatch.setenv("MEMORY_BANK_DB_POOL_SIZE", "lots")
    code, _, err = run(capsys, "migrate")
    assert code == 2 and "MEMORY_BANK_DB_POOL_SIZE" in err


@pytest.mark.parametrize(
    ("url", "code", "message"),
    [
        (UNREACHABLE, 3, "cannot use the database"),
        ("sqlite:////proc/no-such-dir/x.db", 3, "cannot use the database"),
        ("not a url", 2, "DATABASE_URL"),
        ("postgresql://agent:s3cret-pw@localhost/db", 2, "unsupported"),
        # A driver this project does not install.
        ("mysql+mysqlconnector://agent:s3cret-pw@localhost/db", 2, "driver"),
    ],
)
def test_unusable_database_exits_nonzero_without_the_password(capsys, url, code, message):
    for argv in (["migrate"], ["keys", "list"], ["keys", "create", "--user", "x"]):
        got, out, err = run(capsys, "--database-url", url, *argv)
        assert got == code, err
        assert message in err
        assert "s3cret-pw" not in err + out
        assert "Traceback" not in err


def test_unreachable_database_as_a_real_process(tmp_path):
    env = {**os.environ, "MEMORY_BANK_DATABASE_URL": UNREACHABLE}
    for argv in (["migrate"], ["serve", "--port", "1"]):
        proc = subprocess.run(
            [sys.executable, "-m", "memory_bank.cli", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 3, proc.stderr
        assert "cannot use the database at mysql+pymysql://agent:***@127.0.0.1:1" in proc.stderr
        assert "s3cret-pw" not in proc.stderr + proc.stdout


def test_migrate_reports_success(database_url, capsys):
    code, out, _ = run(capsys, "--database-url", database_url, "migrate")
    assert code == 0 and "up to date" in out
    code, out, _ = run(capsys, "--database-url", database_url, "migrate")
    assert code == 0 and "up to date" in out


def test_first_start_key_is_created_once(database_url):
    db = open_database(Settings(database_url=database_url))
    try:
        first = ensure_local_key(db)
        assert first is not None and first.startswith("mb_")
        assert ensure_local_key(db) is None
    finally:
        db.dispose()


def test_plain_mysql_urls_use_the_bundled_driver():
    engine = make_engine("mysql://agent@127.0.0.1/db")
    assert engine.url.drivername == "mysql+pymysql"
    assert engine.url.query["charset"] == "utf8mb4"
    engine.dispose()


def test_help_lists_every_setting(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name, _, _ in documented():
        assert name in out
