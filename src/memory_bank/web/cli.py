"""CLI pieces for the panel and review: the sign-in link at serve, user switches, draft purge."""

from __future__ import annotations

import argparse

from sqlalchemy import Engine

from memory_bank import cli, review
from memory_bank.ids import utcnow
from memory_bank.settings import Settings
from memory_bank.store import keys, user_settings
from memory_bank.store.engine import writing
from memory_bank.store.migrate import signing_secret
from memory_bank.web import signin

LOCAL_USER = "local"


def panel_link(settings: Settings, engine: Engine, base_url: str, user_id: str) -> str:
    """A one-time sign-in link to the panel for user_id (the code rides in the fragment)."""
    code = signin.make_code(signing_secret(engine), user_id, settings.panel_link_minutes)
    base = (settings.public_url or base_url).rstrip("/")
    # The fragment never reaches the server, so the code stays out of access logs.
    return f"{base}/#signin={code}"


def _browsable(base_url: str) -> str:
    """A base URL a browser on this machine can open (0.0.0.0 is not one)."""
    return base_url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")


def _on_serve(settings: Settings, engine: Engine, base_url: str, _first_key: str | None) -> None:
    """At start-up: purge expired drafts, and print a panel sign-in link for the local user."""
    purged = review.sweep(engine)
    if purged:
        print(f"purged {purged} expired draft(s)")
    if not settings.panel_enabled:
        return
    with engine.connect() as conn:
        local_keys = keys.list_keys(conn, LOCAL_USER)
    now = utcnow()
    if not any(k.usable(now) for k in local_keys):
        return
    link = panel_link(settings, engine, _browsable(base_url), LOCAL_USER)
    print(f"Panel: open this one-time sign-in link within {settings.panel_link_minutes} min:")
    print(f"  {link}")


def cmd_panel_link(args: argparse.Namespace, settings: Settings) -> int:
    """Print a fresh one-time panel sign-in link for a user."""
    engine = cli.open_database(settings)
    base = args.base_url or f"http://{settings.host}:{settings.port}"
    print(panel_link(settings, engine, _browsable(base), args.user))
    return 0


def cmd_users_switch(args: argparse.Namespace, settings: Settings) -> int:
    """Switch memory off (disable) or back on (enable) for one user."""
    engine = cli.open_database(settings)
    disabled = args.users_command == "disable"
    writing(engine, lambda conn: user_settings.change(conn, args.user, memory_disabled=disabled))
    state = "off" if disabled else "on"
    print(f"memory is {state} for user {args.user}")
    return 0


def cmd_drafts_purge(_args: argparse.Namespace, settings: Settings) -> int:
    """Delete expired drafts now (they are already invisible; this frees the rows)."""
    engine = cli.open_database(settings)
    print(f"purged {review.sweep(engine)} expired draft(s)")
    return 0


def _add(sub: argparse._SubParsersAction) -> None:
    """Add the panel-link, users and drafts subcommands."""
    link = sub.add_parser("panel-link", help="print a one-time panel sign-in link")
    link.add_argument("--user", default=LOCAL_USER, help=f"the user to sign in as ({LOCAL_USER})")
    link.add_argument("--base-url", help="the server's address as a browser reaches it")
    link.set_defaults(func=cmd_panel_link)

    users = sub.add_parser("users", help="switch memory off or on for one user")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    for action, text in (("disable", "switch memory off"), ("enable", "switch memory back on")):
        parser = users_sub.add_parser(action, help=f"{text} for a user (403 memory_disabled)")
        parser.add_argument("user")
        parser.set_defaults(func=cmd_users_switch)

    drafts = sub.add_parser("drafts", help="manage drafts waiting for review")
    drafts_sub = drafts.add_subparsers(dest="drafts_command", required=True, metavar="ACTION")
    drafts_sub.add_parser("purge", help="delete expired drafts").set_defaults(func=cmd_drafts_purge)


cli.register(_add)
cli.on_serve(_on_serve)
