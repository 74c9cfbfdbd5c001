"""Run Alembic migrations safely, even when several processes start at once."""

from __future__ import annotations

import contextlib
import fcntl
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

from memory_bank.store import service_state

_SCRIPTS = str(Path(__file__).with_name("migrations"))
_LOCK_NAME = "memory_bank_migrate"
_SECRET = "signing_secret"


def _config() -> Config:
    """An Alembic config pointing at the packaged migration scripts."""
    cfg = Config()
    cfg.set_main_option("script_location", _SCRIPTS)
    return cfg


def head_revision() -> str:
    """The newest migration revision this code ships."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    """The revision the database is at (None when never migrated)."""
    return MigrationContext.configure(conn).get_current_revision()


def is_current(engine: Engine) -> bool:
    """Whether the database schema is at this code's head revision."""
    with engine.connect() as conn:
        return current_revision(conn) == head_revision()


@contextlib.contextmanager
def _exclusive(engine: Engine) -> Iterator[None]:
    """Hold a lock that only one migrating process can have at a time."""
    if engine.dialect.name == "sqlite":
        database = engine.url.database or ""
        if not database or database == ":memory:":
            yield
            return
        lock_path = Path(database).expanduser().resolve().with_suffix(".db.migrate.lock")
        with open(lock_path, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    with engine.connect() as conn:
        got = conn.execute(text("SELECT GET_LOCK(:n, 120)"), {"n": _LOCK_NAME}).scalar()
        if got != 1:
            raise RuntimeError("timed out waiting for another process's migration")
        try:
            yield
        finally:
            conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": _LOCK_NAME})


def migrate(engine: Engine, then: Callable[[Engine], object] | None = None) -> str:
    """Bring the schema to head (a no-op when current) and return the revision.

    then(engine) runs afterwards under the same lock, so exactly one of several processes
    starting at once does it (domain/reindex.py rebuilds a stale search index there).
    """
    with _exclusive(engine):
        with engine.begin() as conn:
            cfg = _config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        with engine.begin() as conn:
            service_state.put_once(conn, _SECRET, secrets.token_urlsafe(32))
        if then is not None:
            then(engine)
    return head_revision()


def signing_secret(engine: Engine) -> bytes:
    """The server's signing secret (for cursors and sign-in links); every worker reads one."""
    with engine.connect() as conn:
        value = service_state.get(conn, _SECRET)
    if value is None:
        raise RuntimeError("the database has no signing secret: run memory-bank migrate")
    return value.encode()
