"""`memory-bank crypto init`, and a process that refuses to start over its master key."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import httpx
import pytest

from live_server import free_port, start_server, stop_server
from memory_bank.cli import main
from memory_bank.store.sealing import crypto


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "memory_bank.cli", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_init_writes_a_private_key_file_and_never_overwrites_it(tmp_path, capsys):
    path = tmp_path / "keys" / "master.key"
    assert main(["crypto", "init", "--out", str(path)]) == 0
    out = capsys.readouterr().out
    assert str(path) in out and "Back this file up" in out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    master = crypto.read_master_key_file(str(path))
    assert master.fingerprint in out
    before = path.read_bytes()
    assert main(["crypto", "init", "--out", str(path)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_serve_refuses_a_wrong_or_missing_master_key(database_url, tmp_path):
    key_file = tmp_path / "master.key"
    crypto.write_master_key_file(str(key_file), crypto.new_master_key())
    right = {"MEMORY_BANK_MASTER_KEY_FILE": str(key_file)}
    server = start_server(database_url, right)
    try:
        key = next(w for w in server.first_output.split() if w.startswith("mb_"))
        saved = httpx.post(
            server.base_url + "/v1/memory",
            json={"content": "sealed at rest"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert saved.status_code == 201
    finally:
        stop_server(server)
    port = str(free_port())
    env = {"MEMORY_BANK_DATABASE_URL": database_url, "MEMORY_BANK_MASTER_KEY_FILE": ""}
    wrong = crypto.encode_master_key(crypto.new_master_key())
    damaged = tmp_path / "damaged.key"
    damaged.write_text("not base64 at all!")
    for extra, says in (
        ({"MEMORY_BANK_MASTER_KEY": wrong}, "wrong master key"),
        ({}, "holds encrypted memories"),
        ({"MEMORY_BANK_MASTER_KEY_FILE": str(damaged)}, "not valid base64"),
        ({"MEMORY_BANK_MASTER_KEY_FILE": str(tmp_path / "absent.key")}, "cannot read"),
    ):
        proc = run_cli("serve", "--port", port, env={**env, **extra})
        assert proc.returncode == 4, proc.stderr
        assert says in proc.stderr and "cannot start" in proc.stderr
        assert "Traceback" not in proc.stderr + proc.stdout


def test_a_worker_started_with_a_wrong_key_exits_with_a_message(database_url, monkeypatch, capsys):
    # What uvicorn runs in each worker: a refusal is exit code 4, not a traceback per request.
    from memory_bank.app import create_app
    from memory_bank.asgi import app_factory
    from memory_bank.settings import Settings
    from memory_bank.state import dispose, state_of

    key = crypto.encode_master_key(crypto.new_master_key())
    # Semantic search off, as in the worker below (the suite's environment): no model to load.
    dispose(
        state_of(create_app(Settings(database_url=database_url, master_key=key, embeddings="off")))
    )
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", crypto.encode_master_key(crypto.new_master_key()))
    with pytest.raises(SystemExit) as stopped:
        app_factory()
    assert stopped.value.code == 4
    assert "cannot start: wrong master key" in capsys.readouterr().err
