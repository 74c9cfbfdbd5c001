"""`memory-bank orgs`: the organisations keys belong to, with member and memory counts."""

from __future__ import annotations

import argparse

from memory_bank.cli.common import open_database
from memory_bank.settings import Settings
from memory_bank.store import orgs


def list_(args: argparse.Namespace, settings: Settings) -> int:
    """List organisations: members (users with a usable key of the org) and org memories."""
    db = open_database(settings)
    with db.reading() as conn:
        found = orgs.summaries(conn)
    print(f"{'ORG':32} {'MEMBERS':>8} {'MEMORIES':>9}")
    for org in found:
        print(f"{org.org_id:32} {org.members:>8} {org.memories:>9}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `orgs list`."""
    orgs_parser = sub.add_parser("orgs", help="list organisations")
    orgs_sub = orgs_parser.add_subparsers(dest="orgs_command", required=True, metavar="ACTION")
    listing = orgs_sub.add_parser("list", help="orgs with member and memory counts")
    listing.set_defaults(func=list_)
