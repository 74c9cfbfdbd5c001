"""`memory-bank keys`: create, list and revoke API keys."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

from memory_bank.cli.common import CliError, open_database
from memory_bank.ids import iso, utcnow
from memory_bank.settings import Settings
from memory_bank.store import api_keys


def parse_scopes(raw: str) -> tuple[str, ...]:
    """A comma- or space-separated scope list, checked against the known scopes."""
    scopes = tuple(s for s in re.split(r"[,\s]+", raw.strip()) if s)
    unknown = [s for s in scopes if s not in api_keys.ALL_SCOPES]
    if unknown or not scopes:
        raise CliError(
            f"unknown scope(s): {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(api_keys.ALL_SCOPES)}"
        )
    return scopes


def parse_expiry(raw: str | None) -> datetime | None:
    """'30d', '12h', '90m' or an ISO date/time (UTC unless it names a zone) -> a future expiry
    time (UTC, as the store keeps it); a CliError for anything else, the past included."""
    if not raw:
        return None
    now = utcnow()
    match = re.fullmatch(r"(\d+)([dhm])", raw.strip())
    try:
        if match:
            amount, unit = int(match.group(1)), match.group(2)
            delta = {"d": timedelta(days=amount), "h": timedelta(hours=amount)}.get(
                unit, timedelta(minutes=amount)
            )
            expires = now + delta
        else:
            expires = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
            if expires.tzinfo is not None:
                expires = expires.astimezone(UTC).replace(tzinfo=None)
    except ValueError:
        raise CliError(f"--expires must be like 30d, 12h or 2027-01-31, not {raw!r}") from None
    except OverflowError:
        raise CliError(f"--expires {raw!r} is past the year 9999") from None
    if expires <= now:
        raise CliError(
            f"--expires {raw!r} is not in the future (now is {iso(now)}); no key was created"
        )
    return expires


def create(args: argparse.Namespace, settings: Settings) -> int:
    """Create an API key and print it once."""
    scopes = parse_scopes(args.scopes)
    expires = parse_expiry(args.expires)
    if not args.user.strip() or len(args.user) > 128:
        raise CliError("--user must be 1-128 characters")
    db = open_database(settings)
    secret, record = db.writing(
        lambda conn: api_keys.create_key(
            conn, args.user, scopes, args.source, args.org, expires, args.label
        ),
    )
    print(f"id:      {record.id}")
    print(f"user:    {record.user_id}" + (f" (org {record.org_id})" if record.org_id else ""))
    print(f"scopes:  {' '.join(record.scopes)}")
    print(f"source:  {record.source}")
    print(f"expires: {iso(expires) if expires else 'never'}")
    print(f"key:     {secret}")
    print("Store the key now: it is not shown again.")
    return 0


def list_(args: argparse.Namespace, settings: Settings) -> int:
    """List keys (never their secrets)."""
    db = open_database(settings)
    with db.reading() as conn:
        found = api_keys.list_keys(conn, args.user)
    now = utcnow()
    print(f"{'ID':32} {'USER':16} {'ORG':12} {'SCOPES':34} {'SOURCE':16} STATE")
    for k in found:
        state = "revoked" if k.revoked_at else ("expired" if not k.usable(now) else "active")
        org = k.org_id or "-"
        print(f"{k.id:32} {k.user_id:16} {org:12} {' '.join(k.scopes):34} {k.source:16} {state}")
    return 0


def revoke(args: argparse.Namespace, settings: Settings) -> int:
    """Revoke a key by id."""
    db = open_database(settings)
    if not db.writing(lambda conn: api_keys.revoke_key(conn, args.id)):
        raise CliError(f"no active key with id {args.id}", 1)
    print(f"revoked {args.id}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `keys create|list|revoke`."""
    keys_parser = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys_parser.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    made = keys_sub.add_parser("create", help="create a key and print it once")
    made.add_argument("--user", required=True, help="the user the key acts for")
    made.add_argument(
        "--org", help="the user's organisation (its members share org memories; see docs/acl.md)"
    )
    made.add_argument(
        "--scopes",
        default="mcp:read,mcp:write",
        help=f"comma-separated: {', '.join(api_keys.ALL_SCOPES)} (default mcp:read,mcp:write; "
        "org:write and org:admin need --org)",
    )
    made.add_argument("--source", default="api", help="the integration, e.g. claude-desktop")
    made.add_argument("--expires", help="e.g. 30d, 12h or 2027-01-31 (UTC)")
    made.add_argument("--label", help="a note for yourself")
    made.set_defaults(func=create)
    listing = keys_sub.add_parser("list", help="list keys")
    listing.add_argument("--user")
    listing.set_defaults(func=list_)
    gone = keys_sub.add_parser("revoke", help="revoke a key")
    gone.add_argument("id")
    gone.set_defaults(func=revoke)
