"""Tombstones: the ids of deleted memories, kept a day so a retried delete answers 204 again.

Every statement filters by user_id, except the operator's sweep named as such.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, select

from memory_bank.store import batch
from memory_bank.store.schema import memory_tombstone


def add_statement(user_id: str, memory_id: str, when: datetime) -> batch.Statement:
    """Remember that the user deleted this memory at this time; batch.run sends it."""
    return batch.Statement(
        "INSERT INTO memory_tombstone (user_id, memory_id, deleted_at) VALUES (%s, %s, %s)",
        (user_id, memory_id, when),
    )


def was_deleted(conn: Connection, user_id: str, memory_id: str) -> bool:
    """Whether the user deleted this memory and its tombstone is still kept."""
    # A locking (shared) read sees the newest committed tombstone: a plain read would use the
    # transaction's snapshot, taken before a concurrent delete of the same memory committed,
    # and the retry that waited for that delete would answer 404 instead of 204 (MariaDB).
    found = conn.execute(
        select(memory_tombstone.c.memory_id)
        .where(memory_tombstone.c.user_id == user_id, memory_tombstone.c.memory_id == memory_id)
        .with_for_update(read=True)
    ).first()
    return found is not None


def purge(conn: Connection, user_id: str, before: datetime) -> int:
    """Forget the user's tombstones older than `before`; returns how many.

    Found with a plain read, then taken one key at a time: a range DELETE would lock the
    index gap it scanned on MySQL/MariaDB, and two concurrent deletes of one user, each then
    inserting its own tombstone into that gap, deadlocked. Each key is locked before it is
    deleted and counted only when it was still there: the count never comes from a DELETE's
    row count (Spider reports 0 for every DELETE).
    """
    old = conn.execute(
        select(memory_tombstone.c.memory_id).where(
            memory_tombstone.c.user_id == user_id, memory_tombstone.c.deleted_at < before
        )
    ).scalars()
    gone = 0
    for memory_id in list(old):
        key = (memory_tombstone.c.user_id == user_id, memory_tombstone.c.memory_id == memory_id)
        held = select(memory_tombstone.c.memory_id).where(*key).with_for_update()
        if conn.execute(held).first() is not None:
            conn.execute(delete(memory_tombstone).where(*key))
            gone += 1
    return gone


def users_before(conn: Connection, before: datetime) -> list[str]:
    """Users with tombstones older than `before`: a cross-user read, for the operator's sweep."""
    rows = conn.execute(
        select(memory_tombstone.c.user_id).where(memory_tombstone.c.deleted_at < before).distinct()
    ).all()
    return [r.user_id for r in rows]
