"""Tombstones: which memories a user deleted lately (ids and times only), so a repeated delete
answers like the first."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003_tombstones"
down_revision = "0002_review"
branch_labels = None
depends_on = None

_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}
_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")


def upgrade() -> None:
    """Create the tombstone table."""
    op.create_table(
        "memory_tombstone",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("memory_id", sa.String(32), primary_key=True),
        sa.Column("deleted_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index(
        "ix_memory_tombstone_user_deleted", "memory_tombstone", ["user_id", "deleted_at"]
    )


def downgrade() -> None:
    """Drop the tombstone table."""
    op.drop_table("memory_tombstone")
