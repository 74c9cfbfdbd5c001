"""Embedding jobs claimed with a lease, and set aside with a reason instead of blocking."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0012"
down_revision = "0009"
branch_labels = None
depends_on = None

_TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")


def upgrade() -> None:
    """Add embedding_job.claimed_by, claimed_until and set_aside, and the scan's index."""
    # Nullable: queued jobs read as unclaimed and not set aside, without being rewritten.
    op.add_column("embedding_job", sa.Column("claimed_by", sa.String(32), nullable=True))
    op.add_column("embedding_job", sa.Column("claimed_until", _TS, nullable=True))
    op.add_column("embedding_job", sa.Column("set_aside", sa.String(32), nullable=True))
    op.create_index("ix_embedding_job_set_aside", "embedding_job", ["set_aside", "id"])


def downgrade() -> None:
    """Drop the index and the three columns (set-aside jobs become plain queued ones)."""
    op.drop_index("ix_embedding_job_set_aside", table_name="embedding_job")
    with op.batch_alter_table("embedding_job") as batch:
        batch.drop_column("set_aside")
        batch.drop_column("claimed_until")
        batch.drop_column("claimed_by")
