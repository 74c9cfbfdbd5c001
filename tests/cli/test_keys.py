"""`memory-bank keys create --expires`: only a time still to come makes a key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from memory_bank.cli import main
from memory_bank.store.engine import make_engine
from memory_bank.store.schema import api_key


def key_count(database_url: str) -> int:
    """How many API keys the database holds."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(api_key)).scalar_one())
    finally:
        engine.dispose()


def test_a_past_expiry_is_refused_and_creates_no_key(database_url):
    proc = subprocess.run(
        [sys.executable, "-m", "memory_bank.cli", "--database-url", database_url,
         "keys", "create", "--user", "dave", "--expires", "2000-01-01"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--expires '2000-01-01' is not in the future" in proc.stderr
    assert "no key was created" in proc.stderr
    assert "Traceback" not in proc.stderr and "mb_" not in proc.stdout
    assert main(["--database-url", database_url, "migrate"]) == 0
    assert key_count(database_url) == 0


@pytest.mark.parametrize(
    ("expires", "message"),
    [
        ("0d", "is not in the future"),
        ("0m", "is not in the future"),
        ("2001-01-01T00:00:00+14:00", "is not in the future"),
        ("99999999999d", "past the year 9999"),
        ("9" * 5000 + "d", "--expires must be like"),
    ],
)
def test_expiries_that_are_not_to_come_exit_2(database_url, capsys, expires, message):
    argv = ["--database-url", database_url, "keys", "create", "--user", "dave"]
    assert main([*argv, "--expires", expires]) == 2
    out, err = capsys.readouterr()
    assert message in err and "mb_" not in out
    assert main(["--database-url", database_url, "migrate"]) == 0
    assert key_count(database_url) == 0


def test_an_expiry_with_a_zone_is_kept_in_utc(database_url, capsys):
    argv = ["--database-url", database_url, "keys", "create", "--user", "dave"]
    assert main([*argv, "--expires", "2031-01-31T10:00:00+02:00"]) == 0
    assert "expires: 2031-01-31T08:00:00.000Z" in capsys.readouterr().out
