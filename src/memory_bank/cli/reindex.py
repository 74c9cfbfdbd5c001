"""The `memory-bank reindex` subcommand: rebuild the search index with a progress bar."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from memory_bank.cli.common import CliError, open_database
from memory_bank.domain import reindex, vector_jobs
from memory_bank.domain.semantic import from_settings
from memory_bank.search.document import index_version
from memory_bank.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    """Rebuild the postings and statistics of one user or of everyone (or, --vectors, embed
    what has no vector of the configured model)."""
    if args.vectors:
        return _vectors(args, settings)
    db = open_database(settings)
    try:
        total = reindex.count_memories(db, args.user)
        with tqdm(total=total, unit="memory", desc="reindex", disable=args.quiet) as bar:
            done = reindex.rebuild(db, args.user, args.batch, bar.update)
        who = f"user {args.user}" if args.user else "all users"
        print(f"reindexed {done} memories of {who} ({index_version()})")
    finally:
        db.dispose()
    return 0


def _vectors(args: argparse.Namespace, settings: Settings) -> int:
    """Queue every memory without a vector of the configured model, then embed the queue."""
    semantic = from_settings(settings)
    if semantic is None:
        raise CliError("--vectors needs MEMORY_BANK_EMBEDDINGS (local, or openai:<base URL>)")
    db = open_database(settings)
    try:
        owners = [args.user] if args.user else None
        queued = sum(vector_jobs.queue_missing(db, semantic.model, owners))
        total = vector_jobs.pending(db)
        print(f"queued {queued} memories without a {semantic.model} vector; {total} to embed")
        with tqdm(total=total, unit="memory", desc="embed", disable=args.quiet) as bar:
            lease = settings.embeddings_lease_seconds
            while done := vector_jobs.drain_once(db, semantic, args.batch, lease):
                bar.update(done)
        print(f"embedded with {semantic.model}; {vector_jobs.pending(db)} left in the queue")
    finally:
        semantic.close()
        db.dispose()
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
    parser.add_argument(
        "--vectors",
        action="store_true",
        help="embed the memories that have no vector of the configured model (a model change "
        "re-embeds everything); searches keep working meanwhile",
    )
    parser.set_defaults(func=_run)
