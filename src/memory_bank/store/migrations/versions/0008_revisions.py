"""Edits: a revision number on memories, their revision history, and drafts of edits."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}
_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")
_LONG = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    """Add memory.revision and the edit columns of drafts; create memory_revision."""
    # A server default, so existing rows read as revision 1 without being rewritten.
    op.add_column("memory", sa.Column("revision", sa.Integer, nullable=False, server_default="1"))
    op.add_column("memory_draft", sa.Column("memory_id", sa.String(32), nullable=True))
    op.add_column("memory_draft", sa.Column("base_revision", sa.Integer, nullable=True))
    op.create_table(
        "memory_revision",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("memory_id", sa.String(32), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("content", _LONG, nullable=False),
        sa.Column("tags", sa.Text, nullable=False),
        sa.Column("contexts", _LONG, nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("edited_at", _TS, nullable=False),
        sa.UniqueConstraint(
            "user_id", "memory_id", "revision", name="uq_memory_revision_user_memory_rev"
        ),
        **_ARGS,
    )


def downgrade() -> None:
    """Drop memory_revision and the new columns."""
    op.drop_table("memory_revision")
    with op.batch_alter_table("memory_draft") as batch:
        batch.drop_column("base_revision")
        batch.drop_column("memory_id")
    with op.batch_alter_table("memory") as batch:
        batch.drop_column("revision")
