"""Organisation memories: who created each memory and draft, and the org audit log."""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0006"
down_revision = "0003_tombstones"
branch_labels = None
depends_on = None

_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}
_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")


def upgrade() -> None:
    """Add created_by to memories and drafts; create the org audit table."""
    # Nullable, so adding them rewrites nothing (rows saved before read it as their user_id).
    op.add_column("memory", sa.Column("created_by", sa.String(128), nullable=True))
    op.add_column("memory_draft", sa.Column("created_by", sa.String(128), nullable=True))
    op.create_table(
        "org_audit",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("org_id", sa.String(128), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("memory_id", sa.String(32), nullable=True),
        sa.Column("draft_id", sa.String(32), nullable=True),
        sa.Column("actor_user_id", sa.String(128), nullable=False),
        sa.Column("actor_key_id", sa.String(32), nullable=False),
        sa.Column("actor_source", sa.String(128), nullable=False),
        sa.Column("at", _TS, nullable=False),
        **_ARGS,
    )
    op.create_index("ix_org_audit_org_id_id", "org_audit", ["org_id", "id"])


def downgrade() -> None:
    """Drop the org audit table and the created_by columns."""
    op.drop_table("org_audit")
    with op.batch_alter_table("memory_draft") as batch:
        batch.drop_column("created_by")
    with op.batch_alter_table("memory") as batch:
        batch.drop_column("created_by")
