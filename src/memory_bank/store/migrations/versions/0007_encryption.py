"""Encryption at rest: the owners' wrapped data keys, and citation columns wide enough to hold
a sealed citation."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}
_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")
_CITATION = ("conversation_id", "message_id")


def upgrade() -> None:
    """Create owner_key; widen the citation columns (SQLite ignores VARCHAR lengths)."""
    op.create_table(
        "owner_key",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("wrapped", sa.String(255), nullable=False),
        sa.Column("master_id", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_owner_key_master_id", "owner_key", ["master_id"])
    if op.get_bind().dialect.name != "sqlite":
        for name in _CITATION:
            op.alter_column(
                "memory_context",
                name,
                existing_type=sa.String(128),
                type_=sa.String(768),
                existing_nullable=True,
            )


def downgrade() -> None:
    """Drop owner_key (citations keep their width: narrowing could cut sealed values)."""
    op.drop_table("owner_key")
