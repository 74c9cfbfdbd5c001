"""`memory-bank drafts`: housekeeping of the review queue."""

from __future__ import annotations

import argparse

from memory_bank.cli.common import open_database
from memory_bank.domain import review
from memory_bank.settings import Settings


def purge(_args: argparse.Namespace, settings: Settings) -> int:
    """Delete expired drafts now (they are already invisible; this frees the rows)."""
    db = open_database(settings)
    print(f"purged {review.sweep(db)} expired draft(s)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `drafts purge`."""
    drafts = sub.add_parser("drafts", help="manage drafts waiting for review")
    drafts_sub = drafts.add_subparsers(dest="drafts_command", required=True, metavar="ACTION")
    drafts_sub.add_parser("purge", help="delete expired drafts").set_defaults(func=purge)
