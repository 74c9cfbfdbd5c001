"""Shardable: the owner column leads every owner table's primary key, no foreign keys between
owner tables, and the org audit log keyed by the org's owner key (docs/scale-out.md).

Idempotent: each table is checked before it is changed, so a run that stopped half-way (MariaDB
commits every DDL statement) finishes on the next one, and a table already in shape is left.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# table -> (primary key, indexes dropped, indexes added (name -> columns)). An index that the
# new primary key leads with is dropped; a lookup by id alone (the operator's import) keeps one.
_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    # The memory's children first: their foreign keys hold its primary key in place (MariaDB),
    # and dropping it while they stand would cascade into them (SQLite's copy drops the table).
    "memory_context": (("user_id", "id"), (), {"ix_memory_context_id": ("id",)}),
    "memory_term": (("user_id", "term", "memory_id"), (), {}),
    "memory_vector": (("user_id", "memory_id"), (), {}),
    "memory": (("user_id", "id"), ("ix_memory_user_id_id",), {"ix_memory_id": ("id",)}),
    "memory_draft": (("user_id", "id"), ("ix_memory_draft_user_id_id",), {}),
    "memory_revision": (("user_id", "id"), (), {}),
    "review_audit": (("user_id", "id"), (), {}),
    "org_audit": (("user_id", "id"), ("ix_org_audit_org_id_id",), {}),
    # MariaDB only: SQLite's autoincrement needs the id alone as its key (never sharded there).
    "embedding_job": (("user_id", "id"), (), {"ix_embedding_job_id": ("id",)}),
}
# What the downgrade puts back.
_OLD_PK = {name: ("id",) for name in _SHAPES} | {
    "memory_term": ("user_id", "term", "memory_id"),
    "memory_vector": ("user_id", "memory_id"),
}


def upgrade() -> None:
    """Key org_audit by owner; reshape every owner table."""
    _org_audit_owner()
    for table, (pk, dropped, added) in _SHAPES.items():
        _reshape(table, pk, dropped, added)


def downgrade() -> None:
    """Primary keys on the id again (the foreign keys are not restored: no code relied on
    them), the old indexes back, org_audit without its owner column."""
    for table, (_pk, dropped, added) in _SHAPES.items():
        old = {name: _OLD_INDEXES[name] for name in dropped if name in _OLD_INDEXES}
        _reshape(table, _OLD_PK[table], tuple(added), old)
    if "user_id" in _columns("org_audit"):
        with op.batch_alter_table("org_audit") as batch:
            batch.drop_column("user_id")


_OLD_INDEXES: dict[str, tuple[str, ...]] = {
    "ix_memory_user_id_id": ("user_id", "id"),
    "ix_memory_draft_user_id_id": ("user_id", "id"),
    "ix_org_audit_org_id_id": ("org_id", "id"),
}


def _sqlite() -> bool:
    return bool(op.get_bind().dialect.name == "sqlite")


def _columns(table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}


def _org_audit_owner() -> None:
    """org_audit.user_id: the org's owner key (`org:<id>`), so an org's writes and their audit
    rows share one owner, and so one shard."""
    if "user_id" not in _columns("org_audit"):
        op.add_column("org_audit", sa.Column("user_id", sa.String(128), nullable=True))
    prefixed = sa.literal("org:") + sa.column("org_id", sa.String)
    table = sa.table("org_audit", sa.column("user_id", sa.String), sa.column("org_id", sa.String))
    op.execute(table.update().where(table.c.user_id.is_(None)).values(user_id=prefixed))
    # The primary key (below) makes it NOT NULL on MariaDB; SQLite's copy declares it so.


def _reshape(
    table: str,
    pk: Sequence[str],
    dropped: Sequence[str],
    added: dict[str, tuple[str, ...]],
) -> None:
    """Give the table this primary key, no foreign keys, and these indexes dropped and added;
    nothing when it has them already."""
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    if table not in inspector.get_table_names():
        return
    current = tuple(inspector.get_pk_constraint(table)["constrained_columns"])
    foreign = inspector.get_foreign_keys(table)
    indexes = {i["name"]: tuple(i["column_names"]) for i in inspector.get_indexes(table)}
    drop = [name for name in dropped if name in indexes]
    add = {name: cols for name, cols in added.items() if name not in indexes}
    if _sqlite():
        if table == "embedding_job":
            return
        if current != tuple(pk) or foreign or drop or add:
            _rebuild_sqlite(table, pk, drop, add)
        return
    for fk in foreign:
        op.execute(f"ALTER TABLE `{table}` DROP FOREIGN KEY `{fk['name']}`")
        # InnoDB made an index for the foreign key when none led with its column: it only
        # slowed writes down once the key is gone.
        implied = fk["constrained_columns"][0]
        if indexes.get(implied) == tuple(fk["constrained_columns"]):
            op.execute(f"ALTER TABLE `{table}` DROP INDEX `{implied}`")
    changes = [f"DROP INDEX `{name}`" for name in drop]
    if current != tuple(pk):
        changes += ["DROP PRIMARY KEY", f"ADD PRIMARY KEY ({', '.join(pk)})"]
    # Added with the key change: an AUTO_INCREMENT column must lead some index at all times.
    changes += [f"ADD INDEX `{name}` ({', '.join(cols)})" for name, cols in add.items()]
    if changes:
        op.execute(f"ALTER TABLE `{table}` {', '.join(changes)}")


def _rebuild_sqlite(
    table: str, pk: Sequence[str], drop: Sequence[str], add: dict[str, tuple[str, ...]]
) -> None:
    """SQLite cannot alter a primary key or drop a foreign key: copy the table into its new
    shape (alembic's batch mode), from its reflected definition."""
    reflected = sa.Table(table, sa.MetaData(), autoload_with=op.get_bind())
    shape = sa.MetaData()
    columns = []
    for col in reflected.columns:
        copy = sa.Column(
            col.name,
            col.type,
            nullable=False if col.name in pk else col.nullable,
            server_default=col.server_default,
        )
        columns.append(copy)
    keep = [
        sa.Index(i.name, *[c.name for c in i.columns], unique=bool(i.unique))
        for i in reflected.indexes
        if i.name not in drop
    ]
    new = [sa.Index(name, *cols) for name, cols in add.items()]
    target = sa.Table(table, shape, *columns, sa.PrimaryKeyConstraint(*pk), *keep, *new)
    unique = [
        sa.UniqueConstraint(*[c.name for c in u.columns], name=u.name)
        for u in reflected.constraints
        if isinstance(u, sa.UniqueConstraint)
    ]
    for constraint in unique:
        target.append_constraint(constraint)
    with op.batch_alter_table(table, copy_from=target, recreate="always"):
        pass
