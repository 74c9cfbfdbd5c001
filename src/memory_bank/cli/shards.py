"""`memory-bank shards`: spread the owners over several MariaDB backends behind a Spider head
(docs/scale-out.md)."""

from __future__ import annotations

import argparse

from sqlalchemy.exc import DBAPIError

from memory_bank.cli.common import EXIT_DATABASE, CliError, safe_url
from memory_bank.settings import Settings
from memory_bank.store import shards
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import ShardsError, init_shards


def init(args: argparse.Namespace, settings: Settings) -> int:
    """Make MEMORY_BANK_DATABASE_URL a Spider head over the --shard backends."""
    head = make_engine(settings.database_url.reveal(), pool_size=2)
    try:
        found = init_shards(head, list(args.shard), list(args.head or []), args.partitions)
    except ShardsError as exc:
        raise CliError(str(exc)) from None
    except DBAPIError as exc:
        raise CliError(
            f"shards init failed: {type(exc.orig).__name__}: {str(exc.orig).splitlines()[0][:200]}",
            EXIT_DATABASE,
        ) from None
    finally:
        head.dispose()
    servers = len(args.shard)
    spread = f"{servers} backend server(s)"
    if len(found) != servers:
        spread += f" in {len(found)} partitions, each a database of its own"
    print(f"head at {safe_url(settings.database_url)} spreads owners over {spread}:")
    for backend in found:
        print(f"  {backend.name}  {safe_url(backend.url)}")
    for url in args.head or []:
        print(f"and the head at {safe_url(url)} serves them too")
    head = make_engine(settings.database_url.reveal(), pool_size=1)
    try:
        with head.connect() as conn:
            for problem in shards.head_problems(conn):
                print(f"note: {problem}")
    finally:
        head.dispose()
    if len(found) % 2 == 0:
        print(
            "note: an even number of partitions spreads some kinds of ids unevenly "
            "(docs/scale-out.md): leave --partitions to its default"
        )
    return 0


def status(_args: argparse.Namespace, settings: Settings) -> int:
    """List the backends and whether each answers through the head; 1 when one does not."""
    head = make_engine(settings.database_url.reveal(), pool_size=1)
    try:
        with head.connect() as conn:
            found = shards.backends(conn)
            down = set(shards.unreachable(conn, found))
            heads = shards.heads(conn)
    finally:
        head.dispose()
    if not found:
        print("a single server: no backends")
        return 0
    for backend in found:
        state = "unreachable" if backend.name in down else "ok"
        print(f"{backend.name}  {state:11}  {safe_url(backend.url)}")
    silent = [url for url in heads if not _answers(url)]
    for k, url in enumerate(heads):
        state = "unreachable" if url in silent else "ok"
        print(f"head{k}  {state:11}  {safe_url(url)}")
    return 1 if down or silent else 0


def _answers(url: str) -> bool:
    """Whether the server at url answers a query."""
    engine = make_engine(url, pool_size=1)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        return True
    except DBAPIError:
        return False
    finally:
        engine.dispose()


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `shards init` and `shards status`."""
    parser = sub.add_parser("shards", help="spread owners over MariaDB backends (Spider)")
    actions = parser.add_subparsers(dest="shards_command", required=True, metavar="ACTION")
    made = actions.add_parser(
        "init", help="make the database a Spider head over these backends (run once)"
    )
    made.add_argument(
        "--shard",
        action="append",
        required=True,
        metavar="URL",
        help="a backend's URL (mysql+pymysql://user:pass@host:port/db); repeat, in order",
    )
    made.add_argument(
        "--partitions",
        type=int,
        metavar="P",
        help="how many partitions to deal out to the backend servers (default: one per server "
        "for an odd number of them, else 8n+1, each a database <database>_p<k>)",
    )
    made.add_argument(
        "--head",
        action="append",
        metavar="URL",
        help="another head over the same backends, which replicates this head's own tables "
        "(docs/scale-out.md); repeat for each",
    )
    made.set_defaults(func=init)
    actions.add_parser("status", help="the backends and whether each answers").set_defaults(
        func=status
    )
