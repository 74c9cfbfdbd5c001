"""SQLite's WAL checkpoints from a background thread, off the path of requests."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from sqlalchemy import Engine

log = logging.getLogger("memory_bank.store")

# How often the server copies the write-ahead log back into the database file.
INTERVAL_SECONDS = 0.5

# Past this many WAL pages (4 KiB each) the write that crosses it checkpoints by itself, as
# SQLite does by default at 1000: the safety net when no background thread runs (the CLI, a
# test client without lifespan) or it falls behind. Set on every connection (engine.py).
AUTOCHECKPOINT_PAGES = 4000


def checkpoint(engine: Engine) -> tuple[int, int, int]:
    """One PASSIVE checkpoint: (busy, WAL pages, pages copied); never waits on anyone."""
    raw = engine.raw_connection()
    try:
        # The pool's connections run without implicit transactions (engine.py), as a
        # checkpoint needs; PASSIVE copies what no reader still needs and returns at once.
        cursor = raw.cursor()
        row = cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        cursor.close()
    finally:
        raw.close()
    busy, pages, copied = row
    return int(busy), int(pages), int(copied)


@contextlib.contextmanager
def in_background(engine: Engine, interval: float = INTERVAL_SECONDS) -> Iterator[None]:
    """Checkpoint a SQLite file's WAL every interval seconds while the block runs.

    With SQLite's default, the write that fills the WAL to 1000 pages copies them all into the
    database and syncs it, inside its own request: about one save in a hundred took ten times
    as long (docs/benchmarks.md). Here a thread does that work between requests; the
    sqlite3 module releases the GIL while it runs. Other engines and in-memory databases: no-op.
    """
    database = engine.url.database or ""
    if engine.dialect.name != "sqlite" or database in {"", ":memory:"}:
        yield
        return
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(interval):
            try:
                checkpoint(engine)
            except Exception as exc:  # the next round, or the safety net, tries again
                log.warning("background WAL checkpoint failed: %s", type(exc).__name__)

    thread = threading.Thread(target=run, name="memory-bank-wal-checkpoint", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
