"""Emptying a migrated test database, for fixtures that share the session's MariaDB database
(importable: conftest is not)."""

from __future__ import annotations

import os

import sqlalchemy as sa

# The MariaDB server the "mariadb" runs use (a database of their own on it).
MARIADB_ADMIN_URL = os.environ.get(
    "MEMORY_BANK_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
)
# A Spider head made by `memory-bank shards init` (make test-spider sets it): the "mariadb" runs
# then go through it instead of a database of their own on MEMORY_BANK_TEST_MARIADB_URL.
SPIDER_HEAD_URL = os.environ.get("MEMORY_BANK_TEST_SPIDER_HEAD_URL")


def wipe(url: str) -> None:
    """Empty every table of a migrated database (children first); a Spider head keeps what
    `shards init` wrote of its backends."""
    from memory_bank.store.schema import metadata, service_state

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        names = set(sa.inspect(conn).get_table_names())
        for table in reversed(metadata.sorted_tables):
            if table is service_state and table.name in names:
                conn.execute(table.delete().where(~table.c.name.startswith("shards")))
            elif table.name in names:
                conn.execute(table.delete())
        for name in sorted(
            names - {t.name for t in metadata.tables.values()} - {"alembic_version"}
        ):
            conn.execute(sa.text(f"DELETE FROM `{name}`"))
    engine.dispose()
