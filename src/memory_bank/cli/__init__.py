"""The memory-bank command: one module per subcommand, assembled here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memory_bank import __version__
from memory_bank.cli import (
    crypto,
    drafts,
    keys,
    mcp,
    migrate,
    models,
    orgs,
    panel,
    reindex,
    serve,
    shards,
    users,
)
from memory_bank.cli.common import EXIT_MASTER_KEY, EXIT_USAGE, CliError
from memory_bank.models.errors import EmbeddingsMisconfigured
from memory_bank.settings import PREFIX, Settings, documented
from memory_bank.store.sealing.crypto import KeyProblem

# Subcommands in the order `memory-bank --help` lists them.
COMMANDS = (serve, migrate, shards, keys, orgs, mcp, reindex, models, panel, users, drafts, crypto)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    settings_help = "\n".join(
        f"  {name} (default {default!r})" for name, default, _ in documented()
    )
    parser = argparse.ArgumentParser(
        prog="memory-bank",
        description="A self-hosted memory bank for AI agents.",
        epilog="settings (environment):\n" + settings_help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"memory-bank {__version__}")
    parser.add_argument("--database-url", help=f"overrides {PREFIX}DATABASE_URL")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env()
        if args.database_url:
            settings = settings.replace(database_url=args.database_url)
        code: int = args.func(args, settings)
        return code
    except CliError as exc:
        print(f"memory-bank: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyProblem as exc:
        print(f"memory-bank: error: cannot start: {exc}", file=sys.stderr)
        return EXIT_MASTER_KEY
    except EmbeddingsMisconfigured as exc:
        print(f"memory-bank: error: cannot start: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        print(f"memory-bank: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
