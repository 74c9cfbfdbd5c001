"""`memory-bank migrate`: bring the database schema up to date."""

from __future__ import annotations

import argparse

from memory_bank.cli.common import open_database, safe_url
from memory_bank.settings import Settings


def run(_args: argparse.Namespace, settings: Settings) -> int:
    """Bring the database schema up to date."""
    db = open_database(settings)
    print(f"database at {safe_url(settings.database_url)} is up to date")
    db.dispose()
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `migrate`."""
    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(func=run)
