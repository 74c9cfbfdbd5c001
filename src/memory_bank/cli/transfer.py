"""`memory-bank users|orgs export|import|erase`: an owner's data lifecycle, from the command line.

A user's commands take user ids only and an org's take org ids only: an org's owner key
(`org:<id>`) given to a `users` command is refused, so an org is never exported, filled or
erased by a command written for one person.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError
from tqdm import tqdm

from memory_bank.cli import export_reader
from memory_bank.cli.common import EXIT_DATABASE, CliError, open_database
from memory_bank.domain import filters, transfer
from memory_bank.errors import ApiError
from memory_bank.settings import Settings
from memory_bank.store import owners
from memory_bank.store.database import Database

EXIT_BAD_LINES = 1
ORG_COMMANDS = "memory-bank orgs export|import|erase"


@dataclass(frozen=True)
class Target:
    """Whose data a command handles: the owner key, and how messages name the owner."""

    owner: str
    name: str


def user_target(user: str) -> Target:
    """A user's target; a CliError (exit 2) when the id is an org's owner key."""
    org_id = owners.org_of(user)
    if org_id is not None:
        raise CliError(
            f"{user!r} is an org's owner key, not a user id (user ids never start with "
            f"{owners.ORG_PREFIX!r}); an org's memories have their own commands: "
            f"{ORG_COMMANDS} {org_id or 'ORG'}"
        )
    return Target(user, user)


def add_filters(export: argparse.ArgumentParser) -> None:
    """The list filters an export takes (as on the API's list and search)."""
    export.add_argument(
        "--tag", action="append", help="only memories with this tag (repeat: all of them; any case)"
    )
    export.add_argument(
        "--created-after", help="only memories created at or after: an RFC 3339 date or date-time"
    )
    export.add_argument("--created-before", help="only memories created before (same form)")
    export.add_argument("--updated-after", help="only memories saved or edited at or after")
    export.add_argument("--source", help="only memories saved by this integration")


def export(args: argparse.Namespace, settings: Settings, target: Target) -> int:
    """Write the owner's export (the API's ndjson) to stdout: every memory, or those that pass
    the filters given (as on the API's list and search)."""
    try:
        only = filters.parse(
            args.tag, args.created_after, args.created_before, args.updated_after, args.source
        )
    except ApiError as exc:
        option = "--" + (exc.field or "filter").split(".")[0].replace("_", "-")
        raise CliError(f"{option}: {exc.detail}") from None
    db = open_database(settings)
    count = -1
    for line in transfer.export_lines(db, target.owner, only):
        sys.stdout.write(line)
        count += 1
    sys.stdout.flush()
    print(f"exported {count} memories of {target.name}", file=sys.stderr)
    return 0


def import_(
    args: argparse.Namespace, settings: Settings, target: Target, author: str | None = None
) -> int:
    """Check every line of an export, then write the good ones in one transaction (none when a
    line is bad, unless --skip-bad); ids already there are skipped, so importing twice is
    harmless. An org's lines need an author (theirs, else author)."""
    lines = _read(args.file)
    db = open_database(settings)
    good = [(line.number, line.memory) for line in lines if line.memory is not None]
    plan = transfer.plan(db, target.owner, good, author)
    unparsed = [(line.number, line.problem) for line in lines if line.problem is not None]
    bad = sorted(unparsed + plan.problems)
    for number, why in bad:
        print(f"{args.file}:{number}: {why}", file=sys.stderr)
    if bad and not args.skip_bad:
        print(
            f"imported nothing: {len(bad)} bad line(s), the first on line {bad[0][0]}; "
            "fix them or pass --skip-bad",
            file=sys.stderr,
        )
        return EXIT_BAD_LINES
    written = _write(db, args, target, plan.new)
    already = plan.already + len(plan.new) - written
    print(
        f"imported {written} memories for {target.name}"
        + (f", {already} already there" if already else "")
        + (f", {len(bad)} bad line(s) skipped" if bad else ""),
        file=sys.stderr,
    )
    return 0


def _read(path: str) -> list[export_reader.Line]:
    """Every line of an export file, checked; a CliError when it cannot be read or is none."""
    try:
        with open(path, "rb") as handle:
            return list(export_reader.read_export(handle))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None


def _write(
    db: Database, args: argparse.Namespace, target: Target, memories: list[transfer.Restored]
) -> int:
    """Write the memories in one transaction, with a progress bar; a CliError when it fails,
    after which nothing of the import is stored."""
    with tqdm(total=len(memories), unit="memory", disable=args.quiet, file=sys.stderr) as bar:

        def progress(done: int) -> None:
            bar.n = done
            bar.refresh()

        try:
            return transfer.restore(db, target.owner, memories, progress)
        except Exception as exc:
            # Whatever broke the write, its transaction was rolled back: say so, not how.
            raise CliError(
                f"imported nothing: writing failed ({_reason(exc)}); the database is as it "
                "was, so the same command can be run again",
                EXIT_DATABASE,
            ) from None


def _reason(exc: Exception) -> str:
    """A failure in one line, without SQL or a stack."""
    if isinstance(exc, ApiError):
        return exc.detail
    cause: BaseException = exc
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        cause = exc.orig  # the driver's words, without the statement SQLAlchemy adds
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0][:200]}" if text else type(cause).__name__


def confirmed(args: argparse.Namespace, question: str, expected: str) -> bool:
    """Whether an erase may go ahead: --yes, or the id typed back on a terminal; a CliError
    (exit 2) when there is no terminal to ask on."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise CliError("erase cannot be undone: confirm on a terminal, or pass --yes")
    if input(question).strip() == expected:
        return True
    print("not erased", file=sys.stderr)
    return False


def erase(db: Database, target: Target) -> None:
    """Destroy the owner's data key, then delete every row of theirs, and say what went."""
    done = transfer.erase(db, target.owner)
    left = transfer.remaining(db, target.owner)
    if any(left.values()):
        raise CliError(f"rows of {target.name} remain: {left}", EXIT_BAD_LINES)
    shown = ", ".join(f"{name} {n}" for name, n in sorted(done.items()) if n)
    print(f"erased {target.name}: {shown or 'nothing was stored'}")


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """`users export`: a user's memories as ndjson."""
    return export(args, settings, user_target(args.user))


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """`users import`: an export restored as the user's memories."""
    return import_(args, settings, user_target(args.user))


def cmd_erase(args: argparse.Namespace, settings: Settings) -> int:
    """Destroy the user's data key, then delete every row of theirs, after a confirmation."""
    target = user_target(args.user)
    db = open_database(settings)
    question = (
        f"Erase every memory and key of {args.user!r} for good (what they wrote in an org "
        "stays the org's)? Type the user id: "
    )
    if not confirmed(args, question, args.user):
        return EXIT_BAD_LINES
    erase(db, target)
    kept = transfer.kept_for_orgs(db, args.user)
    shown = ", ".join(f"{n} {name}" for name, n in kept.items())
    print(f"kept, as their orgs' data: {shown} written by {args.user}")
    return 0


def add_import_options(imp: argparse.ArgumentParser) -> None:
    """The options every import takes."""
    imp.add_argument("file")
    imp.add_argument(
        "--skip-bad", action="store_true", help="report the bad lines and import the rest"
    )
    imp.add_argument("--quiet", action="store_true", help="no progress bar")


def add_to(users_sub: argparse._SubParsersAction) -> None:
    """Add export, import and erase to `users`."""
    export_parser = users_sub.add_parser(
        "export",
        help="write a user's memories as ndjson to stdout (all, or those that pass the filters)",
    )
    export_parser.add_argument("user")
    add_filters(export_parser)
    export_parser.set_defaults(func=cmd_export)
    imp = users_sub.add_parser(
        "import",
        help="restore an export for a user: every line checked first, then one transaction "
        "(by id, idempotent)",
    )
    imp.add_argument("user")
    add_import_options(imp)
    imp.set_defaults(func=cmd_import)
    erase_parser = users_sub.add_parser(
        "erase",
        help="destroy a user's data key, then every row of theirs (cannot be undone); "
        "what they wrote in an org stays the org's",
    )
    erase_parser.add_argument("user")
    erase_parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    erase_parser.set_defaults(func=cmd_erase)
