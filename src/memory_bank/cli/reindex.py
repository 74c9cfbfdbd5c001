"""The `memory-bank reindex` subcommand: rebuild the search index with a progress bar."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from memory_bank.cli.common import open_database
from memory_bank.domain import reindex
from memory_bank.search.document import index_version
from memory_bank.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    """Rebuild the postings and statistics of one user or of everyone."""
    engine = open_database(settings)
    try:
        total = reindex.count_memories(engine, args.user)
        with tqdm(total=total, unit="memory", desc="reindex", disable=args.quiet) as bar:
            done = reindex.rebuild(engine, args.user, args.batch, bar.update)
        who = f"user {args.user}" if args.user else "all users"
        print(f"reindexed {done} memories of {who} ({index_version()})")
    finally:
        engine.dispose()
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `reindex`."""
    parser = subparsers.add_parser(
        "reindex",
        help="rebuild the search index (postings and per-user statistics) from the memories",
        description="Rebuild the search index in batches, each in its own transaction; "
        "searches keep working meanwhile.",
    )
    parser.add_argument("--user", help="only this user's memories (default: everyone)")
    parser.add_argument("--batch", type=int, default=reindex.BATCH, help="memories per transaction")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=_run)
