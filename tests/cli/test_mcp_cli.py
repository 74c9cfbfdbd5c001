"""`memory-bank mcp-config` and `memory-bank prompt` print what users paste."""

from __future__ import annotations

import json

import pytest

from memory_bank.cli import main


def run(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_stdio_configs_use_an_absolute_database(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", "sqlite:///memories.db")
    desktop = json.loads(run(capsys, "mcp-config", "--client", "claude-desktop"))
    server = desktop["mcpServers"]["memory-bank"]
    assert server["args"][-1] == "mcp"
    assert server["env"] == {"MEMORY_BANK_DATABASE_URL": f"sqlite:///{tmp_path / 'memories.db'}"}
    vscode = json.loads(run(capsys, "mcp-config", "--client", "vscode"))
    assert vscode["servers"]["memory-bank"]["type"] == "stdio"
    cursor = json.loads(run(capsys, "mcp-config", "--client", "cursor"))
    assert cursor["mcpServers"]["memory-bank"]["command"] == server["command"]


def test_http_configs_point_at_mcp_with_the_key(capsys):
    base = "http://127.0.0.1:8080"
    vscode = json.loads(
        run(capsys, "mcp-config", "--client", "vscode", "--url", base, "--key", "mb_k")
    )
    assert vscode == {
        "servers": {
            "memory-bank": {
                "type": "http",
                "url": f"{base}/mcp",
                "headers": {"Authorization": "Bearer mb_k"},
            }
        }
    }
    cursor = json.loads(run(capsys, "mcp-config", "--client", "cursor", "--url", base + "/mcp/"))
    assert cursor["mcpServers"]["memory-bank"]["url"] == f"{base}/mcp"
    desktop = json.loads(
        run(capsys, "mcp-config", "--client", "claude-desktop", "--url", base, "--key", "mb_k")
    )
    bridge = desktop["mcpServers"]["memory-bank"]
    assert bridge["args"][-3:] == ["mcp", "--url", base]
    assert bridge["env"] == {"MEMORY_BANK_MCP_KEY": "mb_k"}  # not on the command line


def test_unknown_client_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["mcp-config", "--client", "emacs"])
    assert exc.value.code == 2


def test_prompt_command_prints_the_snippet(capsys, monkeypatch):
    monkeypatch.delenv("MEMORY_BANK_PUBLIC_URL", raising=False)
    out = run(capsys, "prompt", "--url", "https://mb.example.org/")
    assert out.startswith("## Memory Bank\n")
    assert "`POST https://mb.example.org/v1/memory`" in out


def test_mcp_url_without_key_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.delenv("MEMORY_BANK_MCP_KEY", raising=False)
    assert main(["mcp", "--url", "http://127.0.0.1:9"]) == 2
    assert "--url needs --key" in capsys.readouterr().err
