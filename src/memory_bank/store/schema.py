"""The tables, as SQLAlchemy Core metadata (migrations create them; queries use them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql

metadata = MetaData()

# Binary collation on MySQL/MariaDB: ids, user ids and index terms compare byte for byte, as on
# SQLite, so "MEM_..." is not "mem_..." and one user's id can never alias another's.
TABLE_ARGS: dict[str, Any] = {
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
    "mysql_engine": "InnoDB",
}

Timestamp = DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")
LongText = Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
CITATION_WIDTH = 768
# A stored tag: "=" and a tag of up to 64 characters case-folded (which can triple its length).
TAG_WIDTH = 200
# User text, sealed with its owner's data key when encryption is on, bound to the row's `id`
# (store/sealing/sealed.py reads these marks: every conversion and count follows them). A new column
# that holds anything a user stored carries one.
SEALED: dict[str, Any] = {"sealed": "id"}
# An owner table: its rows belong to the owner in `user_id` (a user, or an org's owner key,
# store/owners.py), which leads its primary key and every unique key, and no foreign key ties
# it to another table. With several database servers (docs/scale-out.md) each owner's rows of
# every such table live on one of them; the other tables (keys, service state) stay on the head.
OWNER: dict[str, Any] = {"owner": "user_id"}


def owner_tables() -> list[Table]:
    """The owner tables, as sharded across database servers."""
    return [t for t in metadata.sorted_tables if t.info.get("owner")]


memory = Table(
    "memory",
    metadata,
    Column("id", String(32), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("org_id", String(128), nullable=True),
    Column("content", LongText, nullable=False, info=SEALED),
    Column("tags", Text, nullable=False, info=SEALED),
    Column("source", String(128), nullable=False),
    Column("scope", String(16), nullable=False),
    Column("created_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    # The user who saved it (an org memory's user_id is its org's owner key, store/owners.py).
    Column("created_by", String(128), nullable=True),
    # 1 on save, +1 per edit or restore (the ETag; If-Match compares it).
    Column("revision", Integer, nullable=False, server_default="1"),
    PrimaryKeyConstraint("user_id", "id"),
    # A memory id is unique whoever owns it; the operator's import looks ids up across owners.
    Index("ix_memory_id", "id"),
    # Listing order (newest first) and the filters of list and search (docs/search.md,
    # "Filters"): each leads with the owner, so a filter reads one owner's range of one index.
    Index("ix_memory_user_created", "user_id", "created_at", "id"),
    Index("ix_memory_user_updated", "user_id", "updated_at", "id"),
    Index("ix_memory_user_source", "user_id", "source", "created_at", "id"),
    info=OWNER,
    **TABLE_ARGS,
)

memory_context = Table(
    "memory_context",
    metadata,
    Column("id", String(32), nullable=False),
    # Deleted with its memory, in the memory's transaction (store/memories.py).
    Column("memory_id", String(32), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("position", Integer, nullable=False),
    Column("snippet", LongText, nullable=False, info=SEALED),
    # Wide enough for a sealed citation (128 characters, up to 512 bytes, sealed and in base64).
    Column("conversation_id", String(CITATION_WIDTH), nullable=True, info=SEALED),
    Column("message_id", String(CITATION_WIDTH), nullable=True, info=SEALED),
    Column("origin", String(32), nullable=True),
    Column("created_at", Timestamp, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    Index("ix_memory_context_user_memory", "user_id", "memory_id"),
    Index("ix_memory_context_id", "id"),
    info=OWNER,
    **TABLE_ARGS,
)

# Per-user inverted index: one row per (user, term, memory); BM25 is computed from these rows,
# so a search reads only the searching user's postings for the query's terms.
memory_term = Table(
    "memory_term",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("term", String(64), primary_key=True),
    Column("memory_id", String(32), primary_key=True),
    Column("tf", Integer, nullable=False),
    Column("doc_len", Integer, nullable=False),
    Index("ix_memory_term_user_memory", "user_id", "memory_id"),
    info=OWNER,
    **TABLE_ARGS,
)

# Per-user corpus statistics for BM25 (document count and total length), kept in the same
# transaction as the postings so no statistic is ever shared across users.
memory_user_stats = Table(
    "memory_user_stats",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("doc_count", BigInteger, nullable=False),
    Column("total_len", BigInteger, nullable=False),
    info=OWNER,
    **TABLE_ARGS,
)

# Each memory's tags, one row per tag, case-folded (store/tags.py): what a tag filter reads instead
# of every memory. The stored form is "=" and the folded tag, or with encryption on its keyed hash
# ("#…", docs/security.md). created_at is the memory's, so one tag's rows walk newest first.
memory_tag = Table(
    "memory_tag",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("tag", String(TAG_WIDTH), primary_key=True),
    Column("created_at", Timestamp, primary_key=True),
    Column("memory_id", String(32), primary_key=True),
    Index("ix_memory_tag_user_memory", "user_id", "memory_id", "tag"),
    info=OWNER,
    **TABLE_ARGS,
)

# Memories a user deleted lately: ids and times only, never content. A repeated delete of the
# user's own memory then answers 204 again (the operation is idempotent), while an id that was
# never theirs stays a 404. Kept for a day (domain/memories.py), then purged.
memory_tombstone = Table(
    "memory_tombstone",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("memory_id", String(32), primary_key=True),
    Column("deleted_at", Timestamp, nullable=False),
    Index("ix_memory_tombstone_user_deleted", "user_id", "deleted_at"),
    info=OWNER,
    **TABLE_ARGS,
)

api_key = Table(
    "api_key",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("prefix", String(16), nullable=False, unique=True),
    Column("secret_hash", String(64), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("org_id", String(128), nullable=True),
    Column("scopes", String(255), nullable=False),
    Column("source", String(128), nullable=False),
    Column("label", String(128), nullable=True),
    Column("created_at", Timestamp, nullable=False),
    Column("expires_at", Timestamp, nullable=True),
    Column("revoked_at", Timestamp, nullable=True),
    Index("ix_api_key_user_id", "user_id"),
    **TABLE_ARGS,
)

# Small server-wide values that every worker must agree on (e.g. the signing secret).
service_state = Table(
    "service_state",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Text, nullable=False),
    **TABLE_ARGS,
)

# Saves waiting for a person (review). Kept apart from `memory` so no search or list of
# memories can ever return one; contexts travel as JSON until the draft is confirmed.
memory_draft = Table(
    "memory_draft",
    metadata,
    Column("id", String(32), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("org_id", String(128), nullable=True),
    Column("content", LongText, nullable=False, info=SEALED),
    Column("tags", Text, nullable=False, info=SEALED),
    Column("contexts", LongText, nullable=False, info=SEALED),
    Column("source", String(128), nullable=False),
    Column("created_by_key", String(32), nullable=False),
    Column("created_at", Timestamp, nullable=False),
    Column("expires_at", Timestamp, nullable=False),
    Column("created_by", String(128), nullable=True),
    # An edit's draft: the memory it changes and the revision it was made against (else NULL).
    Column("memory_id", String(32), nullable=True),
    Column("base_revision", Integer, nullable=True),
    PrimaryKeyConstraint("user_id", "id"),
    Index("ix_memory_draft_expires_at", "expires_at"),
    info=OWNER,
    **TABLE_ARGS,
)

# A memory's states once it has been edited: every revision, the current one included
# (append-only; a restore adds a copy). A memory never edited has no rows here: its one
# revision is the memory itself. Content, tags and contexts are sealed like the memory's.
memory_revision = Table(
    "memory_revision",
    metadata,
    Column("id", String(32), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("memory_id", String(32), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("content", LongText, nullable=False, info=SEALED),
    Column("tags", Text, nullable=False, info=SEALED),
    Column("contexts", LongText, nullable=False, info=SEALED),
    Column("source", String(128), nullable=False),
    Column("edited_at", Timestamp, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    UniqueConstraint("user_id", "memory_id", "revision", name="uq_memory_revision_user_memory_rev"),
    info=OWNER,
    **TABLE_ARGS,
)

# Who did what to a draft, and when; kept after the draft (and its content) is gone.
review_audit = Table(
    "review_audit",
    metadata,
    Column("id", String(32), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("draft_id", String(32), nullable=False),
    Column("action", String(32), nullable=False),
    Column("actor_key_id", String(32), nullable=True),
    Column("actor_source", String(128), nullable=True),
    Column("memory_id", String(32), nullable=True),
    Column("at", Timestamp, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    Index("ix_review_audit_user_draft", "user_id", "draft_id"),
    info=OWNER,
    **TABLE_ARGS,
)

# Per-user switches: opt in to review, and the operator's per-user kill switch.
user_settings = Table(
    "user_settings",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("review_required", Boolean, nullable=False, default=False),
    Column("memory_disabled", Boolean, nullable=False, default=False),
    Column("updated_at", Timestamp, nullable=False),
    **TABLE_ARGS,
)

# One-time panel sign-in codes already exchanged (the codes themselves are signed, not stored).
panel_signin_used = Table(
    "panel_signin_used",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("nonce", String(64), primary_key=True),
    Column("expires_at", Timestamp, nullable=False),
    **TABLE_ARGS,
)

# Every write to an organisation's memories and drafts: who, when, which memory. Owned by the
# org's owner key (`org:<id>`, in user_id), so an org write and its audit row share one owner;
# kept after the memory is gone, never with content.
org_audit = Table(
    "org_audit",
    metadata,
    Column("id", String(32), nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("org_id", String(128), nullable=False),
    Column("action", String(32), nullable=False),
    Column("memory_id", String(32), nullable=True),
    Column("draft_id", String(32), nullable=True),
    Column("actor_user_id", String(128), nullable=False),
    Column("actor_key_id", String(32), nullable=False),
    Column("actor_source", String(128), nullable=False),
    Column("at", Timestamp, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    info=OWNER,
    **TABLE_ARGS,
)

# Each owner's data key, wrapped by the master key (store/sealing/crypto.py); never stored in
# the clear.
# `master_id` names the master key that wrapped it (rotation); `state` is "sealed" (every row of
# the owner is encrypted) or "mixed" (encrypt-existing has not finished with the owner's rows).
owner_key = Table(
    "owner_key",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("wrapped", String(255), nullable=False),
    Column("master_id", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("created_at", Timestamp, nullable=False),
    Index("ix_owner_key_master_id", "master_id"),
    **TABLE_ARGS,
)

# Each memory's embedding, per owner, with the model that made it and its dimension. The vector
# is float32 bytes in base64, sealed with the owner's key when encryption is on
# (docs/security.md rule 2); search loads an owner's vectors into a matrix (search/dense.py).
memory_vector = Table(
    "memory_vector",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("memory_id", String(32), primary_key=True),
    Column("model", String(191), nullable=False),
    Column("dim", Integer, nullable=False),
    Column("vector", LongText, nullable=False, info={"sealed": "memory_id"}),
    Column("made_at", Timestamp, nullable=False),
    info=OWNER,
    **TABLE_ARGS,
)

# The outbox of memories waiting for an embedding: a save writes a row in its own transaction,
# the worker of each `serve` process embeds a batch and deletes the rows it did in the same
# transaction as the vectors, so a killed worker loses nothing. The database numbers the jobs:
# on MariaDB the primary key is (user_id, id), with an index on the id that AUTO_INCREMENT needs;
# SQLite's numbering needs the id alone as its key, so there the table keeps that (migration
# 0013; a SQLite file is never sharded).
embedding_job = Table(
    "embedding_job",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), nullable=False, autoincrement=True),
    Column("user_id", String(128), nullable=False),
    Column("memory_id", String(32), nullable=False),
    Column("queued_at", Timestamp, nullable=False),
    # A worker's claim: its token and the end of its lease. Another worker takes the job only
    # once the lease is over (its claimer crashed), so no two processes embed the same job.
    Column("claimed_by", String(32), nullable=True),
    Column("claimed_until", Timestamp, nullable=True),
    # Why the job was set aside (its owner's data key or its text does not open): never
    # claimed again until `memory-bank reindex --vectors` gives it another try.
    Column("set_aside", String(32), nullable=True),
    PrimaryKeyConstraint("user_id", "id"),
    Index("ix_embedding_job_user_memory", "user_id", "memory_id"),
    Index("ix_embedding_job_id", "id"),
    # The worker's scan (set_aside IS NULL, by id) and the set-aside count skip set-aside rows
    # through this index instead of reading past them.
    Index("ix_embedding_job_set_aside", "set_aside", "id"),
    info=OWNER,
    **TABLE_ARGS,
)

# A random token per owner, replaced whenever the owner's vectors change: a worker's cached
# matrix is used only while its token matches. Random, so a token never comes back (an erased
# owner's cache can never be taken for a new owner's of the same id).
vector_version = Table(
    "vector_version",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("version", String(32), nullable=False),
    info=OWNER,
    **TABLE_ARGS,
)
