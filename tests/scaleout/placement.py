"""Where a Spider head places an owner's rows."""

from __future__ import annotations

import sqlalchemy as sa

from memory_bank.store.engine import make_engine


def partition_of(head_url: str, owner: str) -> int:
    """The backend (0-based) the head places an owner's rows on."""
    engine = make_engine(head_url, 1)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET SESSION spider_disable_group_by_handler = ON")
            row = (
                conn.execute(
                    sa.text("EXPLAIN PARTITIONS SELECT 1 FROM memory WHERE user_id = :o"),
                    {"o": owner},
                )
                .mappings()
                .one()
            )
    finally:
        engine.dispose()
    return int(str(row["partitions"]).removeprefix("p"))
