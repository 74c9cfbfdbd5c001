"""`memory-bank users`: the operator's per-user kill switch (and, in cli/transfer.py, a user's
export, import and erase)."""

from __future__ import annotations

import argparse

from memory_bank.cli import transfer
from memory_bank.cli.common import open_database
from memory_bank.settings import Settings
from memory_bank.store import user_settings


def switch(args: argparse.Namespace, settings: Settings) -> int:
    """Switch memory off (disable) or back on (enable) for one user (never an org's key)."""
    transfer.user_target(args.user)
    db = open_database(settings)
    disabled = args.users_command == "disable"
    db.writing(lambda conn: user_settings.change(conn, args.user, memory_disabled=disabled))
    state = "off" if disabled else "on"
    print(f"memory is {state} for user {args.user}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `users disable|enable`."""
    users = sub.add_parser("users", help="one user: switch memory off or on; export, import, erase")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    for action, text in (("disable", "switch memory off"), ("enable", "switch memory back on")):
        parser = users_sub.add_parser(action, help=f"{text} for a user (403 memory_disabled)")
        parser.add_argument("user")
        parser.set_defaults(func=switch)
    transfer.add_to(users_sub)
