"""The memory-bank command: serve, migrate and manage API keys."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from memory_bank import __version__
from memory_bank.ids import iso, utcnow
from memory_bank.settings import PREFIX, Settings, documented
from memory_bank.store import keys
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import migrate

EXIT_USAGE = 2
EXIT_DATABASE = 3

# Subcommands register here so helpers in other modules (mcp, reindex, …) can add theirs.
Command = Callable[[argparse.Namespace, Settings], int]
_EXTRA: list[Callable[[argparse._SubParsersAction], None]] = []


def register(add: Callable[[argparse._SubParsersAction], None]) -> None:
    """Let another module add a subcommand (called at import time)."""
    _EXTRA.append(add)


class CliError(Exception):
    """A user-facing failure with its exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _safe_url(url: str) -> str:
    """The database URL without its password, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<invalid URL>"


def open_database(settings: Settings, run_migrations: bool = True) -> Engine:
    """An engine for the configured database, migrated; a clear error when unreachable."""
    try:
        engine = make_engine(settings.database_url, pool_size=2)
        if run_migrations:
            migrate(engine)
        else:
            with engine.connect():
                pass
    except DBAPIError as exc:
        raise CliError(
            f"cannot use the database at {_safe_url(settings.database_url)}: "
            f"{type(exc.orig).__name__}: {str(exc.orig).splitlines()[0][:200]}",
            EXIT_DATABASE,
        ) from None
    except (ValueError, ArgumentError) as exc:
        raise CliError(f"bad {PREFIX}DATABASE_URL: {exc}") from None
    except ImportError as exc:
        raise CliError(
            f"bad {PREFIX}DATABASE_URL: its driver is not installed ({exc.name}); "
            "use sqlite:///path or mysql+pymysql://user:pass@host/db"
        ) from None
    except OSError as exc:
        raise CliError(
            f"cannot use the database at {_safe_url(settings.database_url)}: {exc}",
            EXIT_DATABASE,
        ) from None
    return engine


def _parse_scopes(raw: str) -> tuple[str, ...]:
    """A comma- or space-separated scope list, checked against the known scopes."""
    scopes = tuple(s for s in re.split(r"[,\s]+", raw.strip()) if s)
    unknown = [s for s in scopes if s not in keys.ALL_SCOPES]
    if unknown or not scopes:
        raise CliError(
            f"unknown scope(s): {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(keys.ALL_SCOPES)}"
        )
    return scopes


def _parse_expiry(raw: str | None) -> datetime | None:
    """'30d', '12h' or an ISO date/time (UTC) -> expiry time."""
    if not raw:
        return None
    match = re.fullmatch(r"(\d+)([dhm])", raw.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        delta = {"d": timedelta(days=amount), "h": timedelta(hours=amount)}.get(
            unit, timedelta(minutes=amount)
        )
        return utcnow() + delta
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"--expires must be like 30d, 12h or 2027-01-31, not {raw!r}") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(tz=None).replace(tzinfo=None)
    return parsed


def ensure_local_key(engine: Engine) -> str | None:
    """On first start with no keys, create a local key with every scope; return it."""

    def work(conn: object) -> str | None:
        if keys.count_keys(conn) > 0:  # type: ignore[arg-type]
            return None
        secret, _ = keys.create_key(
            conn,  # type: ignore[arg-type]
            "local",
            keys.ALL_SCOPES,
            "local",
            label="created on first start",
        )
        return secret

    return writing(engine, work)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the HTTP server (REST, MCP at /mcp, panel at /)."""
    import uvicorn

    host = args.host or settings.host
    port = args.port or settings.port
    workers = args.workers or settings.workers
    engine = open_database(settings)
    secret = ensure_local_key(engine)
    base = f"http://{host}:{port}"
    print(f"memory-bank {__version__} serving on {base} ({_safe_url(settings.database_url)})")
    if secret:
        print("First start: created a local API key with every scope. It is shown only once:")
        print(f"  {secret}")
        print(f"  try: curl -H 'Authorization: Bearer {secret}' {base}/v1/memory")
    for hook in _SERVE_HOOKS:
        hook(settings, engine, base, secret)
    sys.stdout.flush()
    engine.dispose()
    # Workers re-read the settings from the environment, so carry the flags over.
    os.environ[PREFIX + "HOST"] = host
    os.environ[PREFIX + "PORT"] = str(port)
    os.environ[PREFIX + "DATABASE_URL"] = settings.database_url
    uvicorn.run(
        "memory_bank.asgi:app_factory",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=settings.log_level.lower(),
        # The service writes its own access line (logs.py): JSON, once, and without the query
        # string, which holds search words (the user's content). Uvicorn's would repeat it.
        access_log=False,
        proxy_headers=False,
    )
    return 0


_SERVE_HOOKS: list[Callable[[Settings, Engine, str, str | None], None]] = []


def on_serve(hook: Callable[[Settings, Engine, str, str | None], None]) -> None:
    """Run a hook after serve has prepared the database (e.g. print a panel link)."""
    _SERVE_HOOKS.append(hook)


def cmd_migrate(_args: argparse.Namespace, settings: Settings) -> int:
    """Bring the database schema up to date."""
    engine = open_database(settings)
    print(f"database at {_safe_url(settings.database_url)} is up to date")
    engine.dispose()
    return 0


def cmd_keys_create(args: argparse.Namespace, settings: Settings) -> int:
    """Create an API key and print it once."""
    scopes = _parse_scopes(args.scopes)
    expires = _parse_expiry(args.expires)
    if not args.user.strip() or len(args.user) > 128:
        raise CliError("--user must be 1-128 characters")
    engine = open_database(settings)
    secret, record = writing(
        engine,
        lambda conn: keys.create_key(
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


def cmd_keys_list(args: argparse.Namespace, settings: Settings) -> int:
    """List keys (never their secrets)."""
    engine = open_database(settings)
    with engine.connect() as conn:
        found = keys.list_keys(conn, args.user)
    now = utcnow()
    print(f"{'ID':32} {'USER':16} {'SCOPES':34} {'SOURCE':16} STATE")
    for k in found:
        state = "revoked" if k.revoked_at else ("expired" if not k.usable(now) else "active")
        print(f"{k.id:32} {k.user_id:16} {' '.join(k.scopes):34} {k.source:16} {state}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace, settings: Settings) -> int:
    """Revoke a key by id."""
    engine = open_database(settings)
    if not writing(engine, lambda conn: keys.revoke_key(conn, args.id)):
        raise CliError(f"no active key with id {args.id}", 1)
    print(f"revoked {args.id}")
    return 0


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

    serve = sub.add_parser("serve", help="run the server (migrates first)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--workers", type=int)
    serve.set_defaults(func=cmd_serve)

    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(
        func=cmd_migrate
    )

    keys_parser = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys_parser.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = keys_sub.add_parser("create", help="create a key and print it once")
    create.add_argument("--user", required=True, help="the user the key acts for")
    create.add_argument("--org", help="the user's organisation")
    create.add_argument(
        "--scopes",
        default="mcp:read,mcp:write",
        help=f"comma-separated: {', '.join(keys.ALL_SCOPES)} (default mcp:read,mcp:write)",
    )
    create.add_argument("--source", default="api", help="the integration, e.g. claude-desktop")
    create.add_argument("--expires", help="e.g. 30d, 12h or 2027-01-31 (UTC)")
    create.add_argument("--label", help="a note for yourself")
    create.set_defaults(func=cmd_keys_create)
    listing = keys_sub.add_parser("list", help="list keys")
    listing.add_argument("--user")
    listing.set_defaults(func=cmd_keys_list)
    revoke = keys_sub.add_parser("revoke", help="revoke a key")
    revoke.add_argument("id")
    revoke.set_defaults(func=cmd_keys_revoke)

    for add in _EXTRA:
        add(sub)
    return parser


def _load_plugins() -> None:
    """Import modules that register extra subcommands, if present."""
    import importlib

    for name in ("memory_bank.mcp.cli", "memory_bank.search.cli", "memory_bank.web.cli"):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # Absent plugin (or its whole package) is fine; a missing import inside it is not.
            missing = exc.name or ""
            if name != missing and not name.startswith(missing + "."):
                raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    _load_plugins()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        if args.database_url:
            settings = settings.replace(database_url=args.database_url)
        code: int = args.func(args, settings)
        return code
    except CliError as exc:
        print(f"memory-bank: error: {exc}", file=sys.stderr)
        return exc.code
    except ValueError as exc:
        print(f"memory-bank: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    # `python -m memory_bank.cli` runs a second copy of this module as __main__; plugins
    # register with the importable one, so run that.
    from memory_bank import cli as _importable

    sys.exit(_importable.main())
