"""Subcommands: `memory-bank mcp`, `memory-bank mcp-config` and `memory-bank prompt`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from memory_bank.cli.common import EXIT_DATABASE, EXIT_USAGE, CliError, open_database
from memory_bank.settings import Settings


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve MCP over stdio."""
    from memory_bank.app import create_app
    from memory_bank.mcp import stdio
    from memory_bank.mcp.stdio_auth import CannotStart

    key = args.key or settings.mcp_key.reveal() or None
    if not args.url:
        # A database that cannot be used is a clear message and exit code 3, not a traceback;
        # nothing but JSON-RPC may reach stdout, so migration chatter goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            open_database(settings).dispose()
    try:
        return stdio.run(settings, create_app, url=args.url, key=key, manifest_path=args.manifest)
    except CannotStart as exc:
        raise CliError(str(exc), EXIT_DATABASE if exc.unreachable else EXIT_USAGE) from None


def cmd_mcp_config(args: argparse.Namespace, settings: Settings) -> int:
    """Print the JSON block to paste into an MCP host's configuration."""
    from memory_bank.mcp.config import client_config

    database_url = args.database_url_for_config
    configured = settings.database_url.reveal()
    if database_url is None and not args.url and configured.startswith("sqlite:///"):
        # A relative SQLite path would resolve against the host's working directory.
        path = Path(configured.removeprefix("sqlite:///")).expanduser().resolve()
        database_url = f"sqlite:///{path}"
    print(json.dumps(client_config(args.client, database_url, args.url, args.key), indent=2))
    return 0


def cmd_prompt(args: argparse.Namespace, settings: Settings) -> int:
    """Print the "## Memory Bank" snippet for hosts without MCP."""
    from memory_bank.domain.prompt import render_prompt
    from memory_bank.spec import load_spec

    base = args.url or settings.base_url(f"http://{settings.host}:{settings.port}")
    print(render_prompt(load_spec(), base), end="")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `mcp`, `mcp-config` and `prompt`."""
    mcp = sub.add_parser(
        "mcp",
        help="serve MCP over stdio (embedded database, or --url/--key for a server)",
        description="Serve MCP over stdio. By default it opens the database in "
        "MEMORY_BANK_DATABASE_URL in-process and acts as the user 'local' (with that user's "
        "own stdio key, made once and reused). With --url and --key it calls a running "
        "memory-bank server instead. A key that cannot be used stops it at start (exit 2; "
        "3 when the database or server cannot be reached).",
    )
    mcp.add_argument("--url", help="base URL of a memory-bank server, e.g. http://127.0.0.1:8080")
    mcp.add_argument("--key", help="API key to act with (or MEMORY_BANK_MCP_KEY)")
    mcp.add_argument("--manifest", type=Path, help=argparse.SUPPRESS)
    mcp.set_defaults(func=cmd_mcp)

    config = sub.add_parser("mcp-config", help="print the JSON to add memory-bank to an MCP host")
    config.add_argument(
        "--client", required=True, choices=("claude-desktop", "vscode", "cursor"), help="the host"
    )
    config.add_argument("--url", help="use the server's /mcp at this base URL instead of stdio")
    config.add_argument("--key", help="API key to put in the HTTP configuration")
    config.add_argument(
        "--db",
        dest="database_url_for_config",
        help="database URL for the stdio server (default: the current one, made absolute)",
    )
    config.set_defaults(func=cmd_mcp_config)

    prompt = sub.add_parser("prompt", help='print the "## Memory Bank" snippet for hosts w/o MCP')
    prompt.add_argument(
        "--url", help="base URL to spell calls with (default: public URL or host:port)"
    )
    prompt.set_defaults(func=cmd_prompt)
