"""Fixtures of the storage tests."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from databases import MARIADB_ADMIN_URL, SPIDER_HEAD_URL
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import migrate


@pytest.fixture
def fresh_mariadb(mariadb_url: str) -> Iterator[sa.Engine]:
    """A migrated MariaDB database of this test's own, its tables first opened while empty."""
    if SPIDER_HEAD_URL:
        pytest.skip("reads the server's own row counters, which a Spider head does not show")
    name = f"mbtest_stale_{secrets.token_hex(4)}"
    admin = sa.create_engine(MARIADB_ADMIN_URL)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    engine = make_engine(
        sa.engine.make_url(MARIADB_ADMIN_URL).set(database=name).render_as_string(False)
    )
    try:
        migrate(engine)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()
