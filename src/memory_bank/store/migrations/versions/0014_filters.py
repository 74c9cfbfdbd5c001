"""Filters on list and search: each memory's tags in a table of their own, and the indexes that
let a time or source filter read one owner's range instead of every memory."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}
_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")


def upgrade() -> None:
    """Create memory_tag and the memory indexes on creation time, update time and source.

    No foreign key and the owner first in every key, as on a sharded layout. Existing memories'
    tag rows are written at start-up (domain/tag_index.py), where the keyring is at hand to hash
    the tags of owners with encryption on.
    """
    op.create_table(
        "memory_tag",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("tag", sa.String(200), primary_key=True),
        sa.Column("created_at", _TS, primary_key=True),
        sa.Column("memory_id", sa.String(32), primary_key=True),
        **_ARGS,
    )
    op.create_index("ix_memory_tag_user_memory", "memory_tag", ["user_id", "memory_id", "tag"])
    op.create_index("ix_memory_user_created", "memory", ["user_id", "created_at", "id"])
    op.create_index("ix_memory_user_updated", "memory", ["user_id", "updated_at", "id"])
    op.create_index("ix_memory_user_source", "memory", ["user_id", "source", "created_at", "id"])


def downgrade() -> None:
    """Drop the indexes and memory_tag."""
    op.drop_index("ix_memory_user_source", "memory")
    op.drop_index("ix_memory_user_updated", "memory")
    op.drop_index("ix_memory_user_created", "memory")
    op.drop_table("memory_tag")
