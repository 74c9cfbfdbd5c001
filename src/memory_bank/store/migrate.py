"""Run Alembic migrations safely, even when several processes start at once."""

from __future__ import annotations

import contextlib
import fcntl
import secrets
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, insert, select, text

from memory_bank.store.schema import service_state

_SCRIPTS = str(Path(__file__).with_name("migrations"))
_LOCK_NAME = "memory_bank_migrate"


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


def migrate(engine: Engine) -> str:
    """Bring the schema to head (a no-op when current) and return the revision."""
    with _exclusive(engine):
        with engine.begin() as conn:
            cfg = _config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        _ensure_secret(engine)
        # Postings made by an older analyzer would silently miss matches: rebuild them here,
        # under the migration lock, so exactly one process does it (see docs/search.md).
        from memory_bank.search.reindex import ensure_current

        ensure_current(engine)
    return head_revision()


def _ensure_secret(engine: Engine) -> None:
    """Create the server's signing secret once; every worker reads the same one."""
    with engine.begin() as conn:
        found = conn.execute(
            select(service_state.c.value).where(service_state.c.name == "signing_secret")
        ).scalar()
        if found is None:
            conn.execute(
                insert(service_state).values(name="signing_secret", value=secrets.token_urlsafe(32))
            )


def signing_secret(engine: Engine) -> bytes:
    """The server's signing secret (for cursors and sign-in links)."""
    with engine.connect() as conn:
        value = conn.execute(
            select(service_state.c.value).where(service_state.c.name == "signing_secret")
        ).scalar_one()
    return str(value).encode()
