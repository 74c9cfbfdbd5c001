"""Initial tables: memory, contexts, per-user search index, API keys, service state."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
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
    """Create the v1 tables."""
    op.create_table(
        "memory",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("org_id", sa.String(128), nullable=True),
        sa.Column("content", _LONG, nullable=False),
        sa.Column("tags", sa.Text, nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_memory_user_id_id", "memory", ["user_id", "id"])
    op.create_table(
        "memory_context",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "memory_id",
            sa.String(32),
            sa.ForeignKey("memory.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("snippet", _LONG, nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=True),
        sa.Column("message_id", sa.String(128), nullable=True),
        sa.Column("origin", sa.String(32), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_memory_context_user_memory", "memory_context", ["user_id", "memory_id"])
    op.create_table(
        "memory_term",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("term", sa.String(64), primary_key=True),
        sa.Column(
            "memory_id",
            sa.String(32),
            sa.ForeignKey("memory.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("tf", sa.Integer, nullable=False),
        sa.Column("doc_len", sa.Integer, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_memory_term_user_memory", "memory_term", ["user_id", "memory_id"])
    op.create_table(
        "memory_user_stats",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("doc_count", sa.BigInteger, nullable=False),
        sa.Column("total_len", sa.BigInteger, nullable=False),
        **_ARGS,
    )
    op.create_table(
        "api_key",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("prefix", sa.String(16), nullable=False, unique=True),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("org_id", sa.String(128), nullable=True),
        sa.Column("scopes", sa.String(255), nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("label", sa.String(128), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=True),
        sa.Column("revoked_at", _TS, nullable=True),
        **_ARGS,
    )
    op.create_index("ix_api_key_user_id", "api_key", ["user_id"])
    op.create_table(
        "service_state",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        **_ARGS,
    )


def downgrade() -> None:
    """Drop the v1 tables."""
    for name in (
        "service_state",
        "api_key",
        "memory_user_stats",
        "memory_term",
        "memory_context",
        "memory",
    ):
        op.drop_table(name)
