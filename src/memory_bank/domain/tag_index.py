"""The tag rows a tag filter reads (store/tags.py), rebuilt from the memories: at start-up for
memories saved before the rows existed, and by `memory-bank reindex`."""

from __future__ import annotations

import logging
from functools import partial

from sqlalchemy import Connection

from memory_bank.store import service_state, tags
from memory_bank.store.database import Database

log = logging.getLogger("memory_bank.search")

STATE_NAME = "tag_index_version"
# What made the rows: bumped when fold() or the stored form changes, so they are rebuilt.
VERSION = "1"
BATCH = 1000


def record_version(conn: Connection) -> None:
    """Record that every memory's tag rows are current."""
    service_state.put(conn, STATE_NAME, VERSION)


def rebuild(db: Database, user_id: str | None = None, batch: int = BATCH) -> int:
    """Rewrite one owner's (or everyone's) tag rows from their memories, a batch per
    transaction; memories done. Rows written by saves meanwhile are the same rows."""
    done = 0
    with db.reading() as conn:
        users = [user_id] if user_id is not None else tags.owners(conn)
    for user in users:
        after = ""
        while ids := db.writing(partial(tags.rebuild_batch, user_id=user, after=after, size=batch)):
            after = ids[-1]
            done += len(ids)
    if user_id is None:
        db.writing(record_version)
    return done


def ensure_current(db: Database) -> bool:
    """Build every memory's tag rows when another version (or none) made them; True when it did.

    Runs under the migration lock at start-up (domain/reindex.prepare), with the keyring, so the
    tags of owners with encryption on are hashed as their saves would.
    """
    with db.reading() as conn:
        found = service_state.get(conn, STATE_NAME)
    if found == VERSION:
        return False
    log.warning("tag filters: indexing the tags of existing memories")
    total = rebuild(db)
    log.warning("tag filters: %d memories indexed", total)
    return True
