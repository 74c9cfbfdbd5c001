"""Emptying a migrated test database, for fixtures that share the session's MariaDB database
(importable: conftest is not)."""

from __future__ import annotations

import sqlalchemy as sa


def wipe(url: str) -> None:
    """Empty every table of a migrated database (children first)."""
    from memory_bank.store.schema import metadata

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        names = set(sa.inspect(conn).get_table_names())
        for table in reversed(metadata.sorted_tables):
            if table.name in names:
                conn.execute(table.delete())
        for name in sorted(
            names - {t.name for t in metadata.tables.values()} - {"alembic_version"}
        ):
            conn.execute(sa.text(f"DELETE FROM `{name}`"))
    engine.dispose()
