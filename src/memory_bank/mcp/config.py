"""Client set-up snippets: the JSON block each MCP host wants, for stdio or HTTP."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

CLIENTS = ("claude-desktop", "vscode", "cursor")


def _command() -> list[str]:
    """How to start `memory-bank mcp` on this machine."""
    beside = Path(sys.executable).with_name("memory-bank")
    found = str(beside) if beside.is_file() else shutil.which("memory-bank")
    if found:
        return [found, "mcp"]
    return [sys.executable, "-m", "memory_bank.cli", "mcp"]


def client_config(
    client: str, database_url: str | None = None, url: str | None = None, key: str | None = None
) -> dict[str, Any]:
    """The configuration block for a host: stdio by default, HTTP with url and key."""
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; choose from {', '.join(CLIENTS)}")
    command = _command()
    if url:
        base = url.rstrip("/").removesuffix("/mcp")
        secret = key or "<your mb_ API key>"
        if client == "claude-desktop":
            # Claude Desktop's config file starts local commands; bridge to the server over
            # stdio, with the key in the environment rather than on the command line.
            server: dict[str, Any] = {
                "command": command[0],
                "args": [*command[1:], "--url", base],
                "env": {"MEMORY_BANK_MCP_KEY": secret},
            }
        else:
            server = {"url": base + "/mcp", "headers": {"Authorization": f"Bearer {secret}"}}
            if client == "vscode":
                server = {"type": "http", **server}
    else:
        server = {"command": command[0], "args": command[1:]}
        if client == "vscode":
            server = {"type": "stdio", **server}
        if database_url:
            server["env"] = {"MEMORY_BANK_DATABASE_URL": database_url}
    key_name = "servers" if client == "vscode" else "mcpServers"
    return {key_name: {"memory-bank": server}}
