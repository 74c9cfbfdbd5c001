"""Migrations: idempotent, and safe when several processes start on a fresh database at once."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import current_revision, head_revision, is_current, migrate
from memory_bank.store.schema import metadata, service_state


@pytest.fixture(params=["sqlite", "mariadb"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database that has never been migrated: a new SQLite file or a new MariaDB database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    session_url = sa.engine.make_url(request.getfixturevalue("mariadb_url"))
    name = f"mbmig_{os.getpid()}_{secrets.token_hex(4)}"
    admin = sa.create_engine(session_url)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    yield session_url.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
    admin.dispose()


def _schema(engine: sa.Engine) -> dict[str, object]:
    """Tables, columns and indexes as the database reports them."""
    inspector = sa.inspect(engine)
    return {
        name: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(name)],
            sorted((i["name"], tuple(i["column_names"])) for i in inspector.get_indexes(name)),
            sorted(str(fk["referred_table"]) for fk in inspector.get_foreign_keys(name)),
        )
        for name in sorted(inspector.get_table_names())
    }


def _secrets(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                sa.select(service_state.c.value).where(service_state.c.name == "signing_secret")
            ).scalars()
        )


def test_migrate_creates_every_table_and_is_current(fresh_url):
    engine = make_engine(fresh_url)
    try:
        with engine.connect() as conn:
            assert current_revision(conn) is None
        assert migrate(engine) == head_revision()
        assert is_current(engine)
        tables = set(sa.inspect(engine).get_table_names())
        assert {t.name for t in metadata.sorted_tables} | {"alembic_version"} <= tables
    finally:
        engine.dispose()


def test_migrating_twice_is_a_no_op(fresh_url):
    engine = make_engine(fresh_url)
    try:
        migrate(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO memory_user_stats VALUES ('u', 3, 30)"))
        schema, secret = _schema(engine), _secrets(engine)
        migrate(engine)
        assert _schema(engine) == schema
        assert _secrets(engine) == secret and len(secret) == 1
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT doc_count FROM memory_user_stats")).scalar() == 3
            versions = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
        assert [v[0] for v in versions] == [head_revision()]
    finally:
        engine.dispose()


def test_mariadb_tables_are_utf8mb4_innodb(mariadb_url):
    engine = make_engine(mariadb_url)
    try:
        migrate(engine)
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT table_name, engine, table_collation FROM information_schema.tables "
                    "WHERE table_schema = DATABASE()"
                )
            ).all()
        for name, eng, collation in rows:
            assert eng == "InnoDB", name
            assert collation.startswith("utf8mb4"), name
    finally:
        engine.dispose()


def test_two_processes_migrating_a_fresh_database_at_once_both_succeed(fresh_url):
    env = {**os.environ, "MEMORY_BANK_DATABASE_URL": fresh_url}
    command = [sys.executable, "-m", "memory_bank.cli", "migrate"]
    procs = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "up to date" in out
    engine = make_engine(fresh_url)
    try:
        assert is_current(engine)
        assert len(_secrets(engine)) == 1
        with engine.connect() as conn:
            versions = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
        assert [v[0] for v in versions] == [head_revision()]
    finally:
        engine.dispose()


def test_orgs_migration_keeps_existing_memories_and_downgrades(fresh_url):
    from alembic import command

    from memory_bank.auth import Principal
    from memory_bank.domain import memories
    from memory_bank.store.migrate import _config

    engine = make_engine(fresh_url)

    def to(revision: str, down: bool = False) -> None:
        with engine.begin() as conn:
            cfg = _config()
            cfg.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(cfg, revision)

    to("0003_tombstones")
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO memory (id, user_id, org_id, content, tags, source, scope, "
                "created_at, updated_at) VALUES ('mem_01M90000000000000000000000', 'alice', "
                "'acme', 'saved before orgs', '[]', 'api', 'user', :t, :t)"
            ),
            {"t": "2026-12-01 00:00:00"},
        )
    migrate(engine)
    alice = Principal("alice", "acme", ("mcp:read",), "api", "key_x")
    got = memories.fetch(Database(engine), alice, "mem_01M90000000000000000000000")
    # A memory saved before orgs stays personal, and shows no creator.
    assert got["scope"] == "user" and "created_by" not in got
    assert "org_audit" in sa.inspect(engine).get_table_names()
    to("0003_tombstones", down=True)
    inspector = sa.inspect(engine)
    assert "org_audit" not in inspector.get_table_names()
    assert "created_by" not in {c["name"] for c in inspector.get_columns("memory")}
    migrate(engine)
    assert is_current(engine)
    engine.dispose()


def _upgrade(engine: sa.Engine, target: str) -> None:
    from alembic import command

    from memory_bank.store.migrate import _config

    with engine.begin() as conn:
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, target)


def test_shardable_migration_keys_owner_tables_by_owner_keeps_rows_and_runs_again(fresh_url):
    engine = make_engine(fresh_url)
    t = "2026-12-01 00:00:00"
    try:
        _upgrade(engine, "0009")
        with engine.begin() as conn:
            for sql in (
                "INSERT INTO memory (id, user_id, content, tags, source, scope, created_at, "
                "updated_at) VALUES ('mem_1', 'alice', 'kept', '[]', 'api', 'user', :t, :t)",
                "INSERT INTO memory_context (id, memory_id, user_id, position, snippet, "
                "created_at) VALUES ('mctx_1', 'mem_1', 'alice', 0, 'snip', :t)",
                "INSERT INTO memory_term VALUES ('alice', 'kept', 'mem_1', 1, 1)",
                "INSERT INTO memory_vector VALUES ('alice', 'mem_1', 'm', 2, 'AAAA', :t)",
                "INSERT INTO embedding_job (user_id, memory_id, queued_at) "
                "VALUES ('alice', 'mem_1', :t)",
                "INSERT INTO org_audit (id, org_id, action, actor_user_id, actor_key_id, "
                "actor_source, at) VALUES ('oau_1', 'acme', 'created', 'alice', 'k', 'api', :t)",
            ):
                conn.execute(sa.text(sql), {"t": t})
        migrate(engine)
        inspector = sa.inspect(engine)
        owner_tables = [t for t in metadata.sorted_tables if t.info.get("owner")]
        for table in owner_tables:
            pk = inspector.get_pk_constraint(table.name)["constrained_columns"]
            if not (table.name == "embedding_job" and engine.dialect.name == "sqlite"):
                assert pk[0] == "user_id", table.name
                assert pk == [c.name for c in table.primary_key.columns], table.name
            assert inspector.get_foreign_keys(table.name) == [], table.name
            for unique in inspector.get_unique_constraints(table.name):
                assert unique["column_names"][0] == "user_id", table.name
        with engine.connect() as conn:
            audit = conn.execute(sa.text("SELECT user_id, org_id FROM org_audit")).all()
            kept = conn.execute(sa.text("SELECT COUNT(*) FROM memory_context")).scalar()
            jobs = conn.execute(sa.text("SELECT user_id, memory_id FROM embedding_job")).all()
        assert [tuple(a) for a in audit] == [("org:acme", "acme")]
        assert kept == 1 and [tuple(j) for j in jobs] == [("alice", "mem_1")]
        # 0013 again over a converted database (as after a run that stopped half-way): nothing
        # fails and nothing changes.
        schema = _schema(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '0012'"))
        _upgrade(engine, "0013")
        with engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE alembic_version SET version_num = :v"), {"v": head_revision()}
            )
        assert _schema(engine) == schema and is_current(engine)
    finally:
        engine.dispose()
