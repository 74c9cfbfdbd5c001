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
from sqlalchemy.engine import make_url

from memory_bank.store import service_state, shards
from memory_bank.store.engine import make_engine
from memory_bank.store.schema import owner_tables

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

    On a Spider head (store/shards.py) each backend is migrated, then the head's own tables,
    then the Spider definitions of this head and of every other head written on it are rebuilt
    from a backend's, all under the head's lock; a head already current needs no backend.
    then(engine) runs afterwards under the same lock, so exactly one of several processes
    starting at once does it (domain/reindex.py rebuilds a stale search index there).
    """
    with _exclusive(engine):
        found = _backends(engine)
        if found:
            _migrate_sharded(engine, found)
        else:
            with engine.begin() as conn:
                _upgrade(conn)
        with engine.begin() as conn:
            service_state.put_once(conn, _SECRET, secrets.token_urlsafe(32))
        if then is not None:
            then(engine)
    return head_revision()


def _upgrade(conn: Connection, skip: set[str] | None = None) -> None:
    """Run the migrations up to head on this connection; statements that change a table in
    skip are not sent (shards.only_changes)."""
    cfg = _config()
    cfg.attributes["connection"] = conn
    restore = shards.only_changes(conn, skip) if skip else None
    try:
        command.upgrade(cfg, "head")
    finally:
        if restore is not None:
            restore()


def _backends(engine: Engine) -> list[shards.Backend]:
    """The backends of a Spider head; [] for a single server."""
    if engine.dialect.name == "sqlite":
        return []
    with engine.connect() as conn:
        return shards.backends(conn)


def _owner_names() -> set[str]:
    return {t.name for t in owner_tables()}


def _migrate_sharded(head: Engine, found: list[shards.Backend]) -> None:
    """Each backend's owner tables, then the head's tables, then every head's definitions
    (the other heads' own tables are replicated from this one's)."""
    target = head_revision()
    with head.connect() as conn:
        built = service_state.get(conn, shards.DEFINITIONS_STATE)
        if current_revision(conn) == target and built == target:
            return
    engines = [make_engine(b.url, 1) for b in found]
    try:
        _upgrade_backends(engines)
        with head.begin() as conn:
            _upgrade(conn, _owner_names())
        with head.connect() as conn, engines[0].connect() as first:
            shards.rebuild_head(conn, first, found)
            others = _other_heads(head, shards.heads(conn))
        for url in others:
            _on_head(url, lambda conn: _rebuild_there(conn, engines[0], found))
        # Last: a run stopped before this point is finished by the next one.
        with head.begin() as conn:
            service_state.put(conn, shards.DEFINITIONS_STATE, target)
    finally:
        for backend in engines:
            backend.dispose()


def _upgrade_backends(engines: list[Engine]) -> None:
    """Every backend's owner tables migrated, one after another (Alembic's context is global
    to the process, so migrations cannot run on threads side by side)."""
    for backend in engines:
        with backend.begin() as conn:
            _upgrade(conn, shards.head_tables())


def _create_databases(urls: list[str]) -> None:
    """The partitions' databases, where they are not there yet (as docs/deployment.md makes
    a database: utf8mb4, utf8mb4_bin)."""
    for url in urls:
        parsed = make_url(url)
        server = make_engine(parsed.set(database="").render_as_string(hide_password=False), 1)
        try:
            with server.begin() as conn:
                conn.exec_driver_sql(
                    f"CREATE DATABASE IF NOT EXISTS `{parsed.database}` "
                    "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
        finally:
            server.dispose()


def _own_url(head: Engine) -> str:
    """The head's URL as it is written for the others (without the charset make_engine adds)."""
    return head.url.difference_update_query(["charset"]).render_as_string(hide_password=False)


def _other_heads(head: Engine, urls: list[str]) -> list[str]:
    """The heads written on this one, but this one."""
    own = _own_url(head)
    return [url for url in urls if url != own]


def _on_head(url: str, work: Callable[[Connection], object]) -> None:
    """Run work on another head, on a connection of its own."""
    engine = make_engine(url, 1)
    try:
        with engine.connect() as conn:
            work(conn)
    finally:
        engine.dispose()


def _rebuild_there(conn: Connection, first: Engine, found: list[shards.Backend]) -> None:
    """Another head's Spider definitions, from the first backend's tables."""
    with first.connect() as backend:
        shards.rebuild_head(conn, backend, found)


def _make_head(conn: Connection, first: Engine, found: list[shards.Backend]) -> None:
    """A head's Spider servers and tables over the backends (none of its own owner rows)."""
    _clear_local_owner_tables(conn)
    shards.create_servers(conn, found)
    _rebuild_there(conn, first, found)


class ShardsError(RuntimeError):
    """`shards init` cannot do what it was asked (the message says why)."""


def init_shards(
    head: Engine,
    urls: list[str],
    other_heads: list[str] | None = None,
    partitions: int | None = None,
) -> list[shards.Backend]:
    """Make the head a Spider head over these backend servers (`memory-bank shards init`):
    `partitions` backends (by default shards.partition_count: one per server for an odd number
    of servers, each a database of its own dealt out in turn otherwise), every backend migrated
    with the owner tables, the head's own tables migrated, one Spider table per owner table on
    the head (a partition per backend), and the backends written on the head. Each of
    other_heads (heads that replicate this one's own tables) gets the same Spider servers and
    tables, and every head is written on the head, for `migrate`.

    Run again with the same URLs it finishes or repeats the work (keeping the partitions it
    made); other URLs or partitions are refused (moving owners between backends is not
    supported). Heads are only ever added.
    """
    if head.dialect.name == "sqlite" or not urls:
        raise ShardsError("shards init needs a MariaDB head with Spider and at least one backend")
    with head.connect() as conn:
        status = conn.execute(
            text(
                "SELECT plugin_status FROM information_schema.plugins WHERE plugin_name = 'SPIDER'"
            )
        ).scalar()
    if status != "ACTIVE":
        raise ShardsError("the head has no active Spider engine (plugin-load-add = ha_spider.so)")
    with _exclusive(head):
        existing = _backends(head)
        count = partitions or (len(existing) if existing else shards.partition_count(len(urls)))
        if count < len(urls):
            raise ShardsError(f"{count} partition(s) cannot cover {len(urls)} backend servers")
        wanted = shards.partition_urls(list(urls), count)
        if existing and [b.url for b in existing] != wanted:
            raise ShardsError(
                f"the head already spreads owners over {len(existing)} backend(s) "
                f"({', '.join(b.name for b in existing)}); changing them would move owners "
                "between backends, which is not supported"
            )
        if wanted != list(urls):
            _create_databases(wanted)
        found = shards.name_backends(head.url.database or "", wanted)
        engines = [make_engine(url, 1) for url in wanted]
        try:
            _upgrade_backends(engines)
            with head.connect() as conn:
                _make_head(conn, engines[0], found)
                known = shards.heads(conn)
            others = list(other_heads or [])
            for url in others:
                _on_head(url, lambda conn: _make_head(conn, engines[0], found))
            with head.begin() as conn:
                _upgrade(conn, _owner_names())
            with head.connect() as conn:
                found = shards.find_probes(conn, found)
            with head.begin() as conn:
                shards.record(conn, found)
                if others or known:
                    own = _own_url(head)
                    every = [*known, *(u for u in [own, *others] if u not in known)]
                    shards.record_heads(conn, every)
                service_state.put(conn, shards.DEFINITIONS_STATE, head_revision())
                service_state.put_once(conn, _SECRET, secrets.token_urlsafe(32))
        finally:
            for backend in engines:
                backend.dispose()
    return found


def _clear_local_owner_tables(conn: Connection) -> None:
    """Drop owner tables the head holds itself (a `migrate` or `serve` before init made them),
    refusing any that has rows: converting a populated server is an export and import."""
    engines = shards.table_engines(conn)
    for name in sorted(_owner_names()):
        kind = engines.get(name)
        if kind is None or kind.upper() == "SPIDER":
            continue
        if conn.exec_driver_sql(f"SELECT 1 FROM `{name}` LIMIT 1").first() is not None:
            raise ShardsError(
                f"the head's own {name} table has rows: shards init starts from an empty head "
                "(move existing owners with memory-bank users export/import)"
            )
        conn.exec_driver_sql(f"DROP TABLE `{name}`")


def signing_secret(engine: Engine) -> bytes:
    """The server's signing secret (for cursors and sign-in links); every worker reads one."""
    with engine.connect() as conn:
        value = service_state.get(conn, _SECRET)
    if value is None:
        raise RuntimeError("the database has no signing secret: run memory-bank migrate")
    return value.encode()
