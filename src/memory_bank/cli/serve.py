"""`memory-bank serve`: prepare the database, print how to get in, run the HTTP server."""

from __future__ import annotations

import argparse
import os
import sys

from sqlalchemy import Connection

from memory_bank import __version__
from memory_bank.cli import panel
from memory_bank.cli.common import open_database, safe_url
from memory_bank.domain import memories, review
from memory_bank.domain.semantic import from_settings
from memory_bank.errors import ServiceUnavailable
from memory_bank.http import limitstore
from memory_bank.settings import PREFIX, Settings
from memory_bank.store import api_keys
from memory_bank.store.database import Database


def ensure_local_key(db: Database) -> str | None:
    """On first start with no keys, create a local key with every scope; return it."""

    def work(conn: Connection) -> str | None:
        if api_keys.count_keys(conn) > 0:
            return None
        secret, _ = api_keys.create_key(
            conn, "local", api_keys.PERSONAL_SCOPES, "local", label="created on first start"
        )
        return secret

    return db.writing(work)


def prepare(settings: Settings, db: Database, base: str) -> None:
    """What serve does before it listens: first key, expired drafts, the panel link."""
    secret = ensure_local_key(db)
    print(f"memory-bank {__version__} serving on {base} ({safe_url(settings.database_url)})")
    if secret:
        print("First start: created a local API key with every scope. It is shown only once:")
        print(f"  {secret}")
        print(f"  try: curl -H 'Authorization: Bearer {secret}' {base}/v1/memory")
    try:
        purged = review.sweep(db)
        if purged:
            print(f"purged {purged} expired draft(s)")
        memories.sweep_tombstones(db)
    except ServiceUnavailable:
        # A database backend is down (several backends, docs/scale-out.md): serve the owners
        # on the others; the next start sweeps both (`memory-bank drafts purge`, the drafts).
        print("skipped the sweep of expired drafts and old tombstones: a database backend is down")
    panel.print_local_link(settings, db, base)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the HTTP server (REST, MCP at /mcp, panel at /)."""
    import uvicorn

    host = args.host or settings.host
    port = args.port or settings.port
    workers = args.workers or settings.workers
    # A MEMORY_BANK_EMBEDDINGS that cannot work stops here, before anything listens.
    check = from_settings(settings)
    if check is not None:
        check.close()
    # So does a MEMORY_BANK_RATE_LIMIT_STORAGE that cannot work (no connection made here).
    limitstore.open_storage(settings.rate_limit_storage.reveal(), "check")
    db = open_database(settings)
    prepare(settings, db, f"http://{host}:{port}")
    sys.stdout.flush()
    db.dispose()
    # Workers re-read the settings from the environment, so carry the flags over.
    os.environ[PREFIX + "HOST"] = host
    os.environ[PREFIX + "PORT"] = str(port)
    os.environ[PREFIX + "DATABASE_URL"] = settings.database_url.reveal()
    uvicorn.run(
        "memory_bank.asgi:app_factory",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=settings.log_level.lower(),
        # The service writes its own access line (http/logs.py): JSON, once, and without the
        # query string, which holds search words (the user's content). Uvicorn's would repeat it.
        access_log=False,
        proxy_headers=False,
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `serve`."""
    serve = sub.add_parser("serve", help="run the server (migrates first)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--workers", type=int)
    serve.set_defaults(func=run)
