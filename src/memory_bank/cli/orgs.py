"""`memory-bank orgs`: the organisations keys belong to, with member and memory counts; an org's
export, import and erase (the org's own commands: `users` ones refuse an org's key)."""

from __future__ import annotations

import argparse

from memory_bank.cli import export_reader, transfer
from memory_bank.cli.common import CliError, open_database
from memory_bank.settings import Settings
from memory_bank.store import api_keys, orgs, owners


def list_(args: argparse.Namespace, settings: Settings) -> int:
    """List organisations: members (users with a usable key of the org) and org memories."""
    db = open_database(settings)
    with db.reading() as conn:
        found = orgs.summaries(conn)
    print(f"{'ORG':32} {'MEMBERS':>8} {'MEMORIES':>9}")
    for org in found:
        print(f"{org.org_id:32} {org.members:>8} {org.memories:>9}")
    return 0


def org_target(org_id: str) -> transfer.Target:
    """An org's target, its id checked as `keys create --org` checks it (a CliError if bad)."""
    try:
        api_keys.check_name("org id", org_id, required=True)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if len(org_id) > owners.MAX_ORG_ID:
        raise CliError(f"org id must be 1-{owners.MAX_ORG_ID} characters")
    return transfer.Target(owners.org_owner(org_id), f"org {org_id}")


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """`orgs export`: the org's memories as ndjson, each naming its author."""
    return transfer.export(args, settings, org_target(args.org))


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """`orgs import`: an export restored as the org's memories, each logged in its audit log."""
    target = org_target(args.org)
    if args.author is not None:
        problem = export_reader.author_problem(args.author, "--author")
        if problem is not None:
            raise CliError(problem.rstrip("."))
    return transfer.import_(args, settings, target, args.author)


def cmd_erase(args: argparse.Namespace, settings: Settings) -> int:
    """Destroy the org's data key, then every row of the org, after a confirmation."""
    target = org_target(args.org)
    db = open_database(settings)
    question = (
        f"Erase every memory, draft and the audit log of org {args.org!r} for good (its "
        "members and their keys stay)? Type the org id: "
    )
    if not transfer.confirmed(args, question, args.org):
        return transfer.EXIT_BAD_LINES
    transfer.erase(db, target)
    with db.reading() as conn:
        members = next((o.members for o in orgs.summaries(conn) if o.org_id == args.org), 0)
    if members:
        print(
            f"kept: {members} member(s) with a usable key of {args.org}; their next org save "
            "starts the org afresh (memory-bank keys revoke ends a key)"
        )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `orgs list|export|import|erase`."""
    orgs_parser = sub.add_parser("orgs", help="organisations: list; an org's export, import, erase")
    orgs_sub = orgs_parser.add_subparsers(dest="orgs_command", required=True, metavar="ACTION")
    listing = orgs_sub.add_parser("list", help="orgs with member and memory counts")
    listing.set_defaults(func=list_)
    org_help = "the org id, as keys create --org takes it (acme, not org:acme)"
    export = orgs_sub.add_parser(
        "export",
        help="write an org's memories as ndjson to stdout, each with its author (all, or those "
        "that pass the filters)",
    )
    export.add_argument("org", help=org_help)
    transfer.add_filters(export)
    export.set_defaults(func=cmd_export)
    imp = orgs_sub.add_parser(
        "import",
        help="restore an export as an org's memories: every line checked first, then one "
        "transaction (by id, idempotent), each memory logged as created in the org's audit log",
    )
    imp.add_argument("org", help=org_help)
    transfer.add_import_options(imp)
    imp.add_argument(
        "--author",
        help="the user id that lines without a created_by are imported as written by "
        "(without it, such a line is refused)",
    )
    imp.set_defaults(func=cmd_import)
    erase = orgs_sub.add_parser(
        "erase",
        help="destroy an org's data key, then its memories, drafts and audit log (cannot be "
        "undone); members' keys and personal memories stay",
    )
    erase.add_argument("org", help=org_help)
    erase.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    erase.set_defaults(func=cmd_erase)
