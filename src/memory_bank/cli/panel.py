"""`memory-bank panel-link`, and the panel link `serve` prints at start-up."""

from __future__ import annotations

import argparse

from memory_bank.cli.common import open_database
from memory_bank.ids import utcnow
from memory_bank.settings import Settings
from memory_bank.store import api_keys
from memory_bank.store.database import Database
from memory_bank.store.migrate import signing_secret
from memory_bank.web import signin

LOCAL_USER = "local"


def panel_link(settings: Settings, db: Database, base_url: str, user_id: str) -> str:
    """A one-time sign-in link to the panel for user_id (the code rides in the fragment)."""
    code = signin.make_code(signing_secret(db.engine), user_id, settings.panel_link_minutes)
    base = settings.base_url(base_url)
    # The fragment never reaches the server, so the code stays out of access logs.
    return f"{base}/#signin={code}"


def browsable(base_url: str) -> str:
    """A base URL a browser on this machine can open (0.0.0.0 is not one)."""
    return base_url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")


def print_local_link(settings: Settings, db: Database, base_url: str) -> None:
    """At start-up: a panel sign-in link for the local user, when the panel is on."""
    if not settings.panel_enabled:
        return
    with db.reading() as conn:
        local_keys = api_keys.list_keys(conn, LOCAL_USER)
    now = utcnow()
    if not any(k.usable(now) for k in local_keys):
        return
    link = panel_link(settings, db, browsable(base_url), LOCAL_USER)
    print(f"Panel: open this one-time sign-in link within {settings.panel_link_minutes} min:")
    print(f"  {link}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Print a fresh one-time panel sign-in link for a user."""
    db = open_database(settings)
    base = args.base_url or f"http://{settings.host}:{settings.port}"
    print(panel_link(settings, db, browsable(base), args.user))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `panel-link`."""
    link = sub.add_parser("panel-link", help="print a one-time panel sign-in link")
    link.add_argument("--user", default=LOCAL_USER, help=f"the user to sign in as ({LOCAL_USER})")
    link.add_argument("--base-url", help="the server's address as a browser reaches it")
    link.set_defaults(func=run)
