"""Review: drafts, their audit trail, per-user settings and used panel sign-in codes."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0002_review"
down_revision = "0001"
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
    """Create the review tables."""
    op.create_table(
        "memory_draft",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("org_id", sa.String(128), nullable=True),
        sa.Column("content", _LONG, nullable=False),
        sa.Column("tags", sa.Text, nullable=False),
        sa.Column("contexts", _LONG, nullable=False),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("created_by_key", sa.String(32), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_memory_draft_user_id_id", "memory_draft", ["user_id", "id"])
    op.create_index("ix_memory_draft_expires_at", "memory_draft", ["expires_at"])
    op.create_table(
        "review_audit",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("draft_id", sa.String(32), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("actor_key_id", sa.String(32), nullable=True),
        sa.Column("actor_source", sa.String(128), nullable=True),
        sa.Column("memory_id", sa.String(32), nullable=True),
        sa.Column("at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_review_audit_user_draft", "review_audit", ["user_id", "draft_id"])
    op.create_table(
        "user_settings",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("review_required", sa.Boolean, nullable=False),
        sa.Column("memory_disabled", sa.Boolean, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_table(
        "panel_signin_used",
        sa.Column("user_id", sa.String(128), primary_key=True),
        sa.Column("nonce", sa.String(64), primary_key=True),
        sa.Column("expires_at", _TS, nullable=False),
        **_ARGS,
    )


def downgrade() -> None:
    """Drop the review tables."""
    for name in ("panel_signin_used", "user_settings", "review_audit", "memory_draft"):
        op.drop_table(name)
