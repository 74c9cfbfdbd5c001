"""SQLite's WAL is copied into the database file by a background thread, not by requests."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from starlette.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.search.document import postings_of
from memory_bank.settings import Settings
from memory_bank.store import checkpoint, memory_writes
from memory_bank.store import memories as store
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import migrate
from memory_bank.store.owners import Owner
from polling import poll

OWNER = Owner("alice", None, "test")
THREAD = "memory-bank-wal-checkpoint"


def _save_some(engine, n: int) -> None:
    """Save n memories with a context each (a few WAL pages every time)."""
    for i in range(n):
        ctx = [store.NewContext(f"snippet {i} about acme", "c1", f"m{i}", None)]
        entry = postings_of(f"memo {i}", [], [ctx[0].snippet])
        writing(
            engine,
            lambda c, i=i, ctx=ctx, e=entry: memory_writes.insert_memory(
                c, OWNER, f"memo {i}", [], ctx, e
            ),
        )


def test_writes_leave_the_wal_to_the_background_thread(tmp_path: Path):
    path = tmp_path / "wal.db"
    engine = make_engine(f"sqlite:///{path}", pool_size=2)
    migrate(engine)
    checkpoint.checkpoint(engine)
    before = path.stat().st_size
    _save_some(engine, 150)  # well under AUTOCHECKPOINT_PAGES: no write copies the WAL back
    time.sleep(0.3)
    assert path.stat().st_size == before
    with checkpoint.in_background(engine, interval=0.05):
        assert poll(lambda: path.stat().st_size > before, timeout=10, every=0.02)
    busy, pages, copied = checkpoint.checkpoint(engine)
    engine.dispose()
    assert busy == 0 and pages == copied  # nothing was left behind


def test_the_server_checkpoints_for_as_long_as_it_serves(tmp_path: Path):
    app = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'app.db'}",
            allowed_hosts="testserver",
            embeddings="off",  # no model: semantic search has nothing to do with the WAL
        )
    )
    others = set(threading.enumerate())  # other tests' apps may still be serving
    with TestClient(app):
        ours = [t for t in threading.enumerate() if t.name == THREAD and t not in others]
        assert len(ours) == 1
    assert poll(lambda: not ours[0].is_alive(), timeout=10, every=0.02)


def test_no_thread_for_mariadb(mariadb_url: str):
    engine = make_engine(mariadb_url, pool_size=1)
    with checkpoint.in_background(engine, interval=0.01):
        time.sleep(0.05)
        assert all(t.name != THREAD for t in threading.enumerate())
    engine.dispose()
