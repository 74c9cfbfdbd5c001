"""`memory-bank drafts`: housekeeping of the review queue."""

from __future__ import annotations

import argparse

from memory_bank.cli.common import CliError, open_database
from memory_bank.domain import review
from memory_bank.ids import iso
from memory_bank.settings import Settings


def purge(_args: argparse.Namespace, settings: Settings) -> int:
    """Delete expired drafts now (they are already invisible; this frees the rows)."""
    db = open_database(settings)
    print(f"purged {review.sweep(db)} expired draft(s)")
    return 0


def audit(args: argparse.Namespace, settings: Settings) -> int:
    """Print an owner's review decisions, newest first, one per line (never content)."""
    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    db = open_database(settings)
    try:
        rows = review.audit(db, args.user, args.limit)
    finally:
        db.dispose()
    print("AT\tACTION\tDRAFT\tMEMORY\tKEY\tSOURCE")
    for row in rows:
        fields = [iso(row.at), row.action, row.draft_id, row.memory_id]
        print("\t".join(f or "-" for f in [*fields, row.actor_key_id, row.actor_source]))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `drafts purge` and `drafts audit`."""
    drafts = sub.add_parser("drafts", help="manage drafts waiting for review")
    drafts_sub = drafts.add_subparsers(dest="drafts_command", required=True, metavar="ACTION")
    drafts_sub.add_parser("purge", help="delete expired drafts").set_defaults(func=purge)
    trail = drafts_sub.add_parser("audit", help="print a user's (or org's) review decisions")
    trail.add_argument("--user", required=True, help="the user id, or org:<id> for an org")
    trail.add_argument("--limit", type=int, default=100, help="how many, newest first (100)")
    trail.set_defaults(func=audit)
