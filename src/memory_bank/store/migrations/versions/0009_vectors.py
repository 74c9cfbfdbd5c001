"""Semantic search: each memory's vector, the outbox of memories to embed, and each owner's
vector version."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}
_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")
_TEXT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    """Create memory_vector, embedding_job and vector_version."""
    op.create_table(
        "memory_vector",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column(
            "memory_id",
            sa.String(32),
            sa.ForeignKey("memory.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("model", sa.String(191), nullable=False),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("vector", _TEXT, nullable=False),
        sa.Column("made_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_table(
        "embedding_job",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("memory_id", sa.String(32), nullable=False),
        sa.Column("queued_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_embedding_job_user_memory", "embedding_job", ["user_id", "memory_id"])
    op.create_table(
        "vector_version",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("version", sa.String(32), nullable=False),
        **_ARGS,
    )


def downgrade() -> None:
    """Drop the three tables."""
    op.drop_table("vector_version")
    op.drop_table("embedding_job")
    op.drop_table("memory_vector")
