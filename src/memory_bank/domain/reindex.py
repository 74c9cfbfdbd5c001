"""Rebuild the per-user search index from the stored memories, and keep it at this analyzer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from sqlalchemy import Connection, Engine

from memory_bank.domain import tag_index
from memory_bank.search.document import index_version, postings_of
from memory_bank.store import documents, postings, service_state
from memory_bank.store.database import Database
from memory_bank.store.migrate import migrate
from memory_bank.store.sealing import data_keys

log = logging.getLogger("memory_bank.search")

STATE_NAME = "search_index_version"
BATCH = 500


def prepare(engine: Engine, database: Callable[[Engine], Database] = Database) -> Database:
    """Migrate the schema, make the Database, then rebuild the index if an older analyzer made
    it; the Database.

    Postings made by an older analyzer would silently miss matches, so they are rebuilt under
    the migration lock, by exactly one of the processes starting (see docs/search.md).
    database(engine) checks the master key first (store/master_key.open_keyring) and makes the
    Database with it, so a rebuild reads sealed rows and writes hashed terms.
    """
    made: list[Database] = []

    def then(ready: Engine) -> None:
        made.append(database(ready))
        ensure_current(made[0])
        tag_index.ensure_current(made[0])

    migrate(engine, then=then)
    return made[0]


def stored_version(db: Database) -> str | None:
    """The index version recorded in the database (None when never recorded)."""
    with db.reading() as conn:
        return service_state.get(conn, STATE_NAME)


def record_version(conn: Connection) -> None:
    """Record that every posting was made by this code's analyzer."""
    service_state.put(conn, STATE_NAME, index_version())


def count_memories(db: Database, user_id: str | None = None) -> int:
    """How many memories a rebuild will read."""
    with db.reading() as conn:
        return documents.count(conn, user_id) if user_id is not None else documents.count_all(conn)


def _users(db: Database) -> list[str]:
    """Every user that has memories or index statistics."""
    with db.reading() as conn:
        return sorted(set(documents.owners(conn)) | set(postings.owners(conn)))


def _reindex_batch(conn: Connection, user_id: str, after: str, size: int) -> list[str]:
    """Re-analyse the user's next batch of memories (by id) and replace their postings."""
    docs = documents.documents(conn, user_id, after, size)
    if docs:
        seal = data_keys.sealer(conn, user_id)
        entries = {d.id: seal.postings(postings_of(d.content, d.tags, d.snippets)) for d in docs}
        postings.replace(conn, user_id, entries)
    return [d.id for d in docs]


def _recount(conn: Connection, user_id: str) -> None:
    """Set a user's statistics from their memories and postings."""
    postings.recount(conn, user_id, documents.count(conn, user_id))


def rebuild(
    db: Database,
    user_id: str | None = None,
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Rebuild one user's (or everyone's) postings and statistics; returns memories indexed.

    Each batch is one transaction and replaces whole memories' postings, so searches running
    meanwhile see every memory indexed exactly once (by the old or the new analyzer).
    """
    done = 0
    for user in [user_id] if user_id is not None else _users(db):
        after = ""
        while True:
            ids = db.writing(partial(_reindex_batch, user_id=user, after=after, size=batch))
            if not ids:
                break
            after = ids[-1]
            done += len(ids)
            if progress is not None:
                progress(len(ids))
        # Postings of memories deleted meanwhile are removed by their delete; recount at the end.
        db.writing(partial(_recount, user_id=user))
        tag_index.rebuild(db, user)
    if user_id is None:
        db.writing(record_version)
        db.writing(tag_index.record_version)
    return done


def ensure_current(db: Database) -> bool:
    """Rebuild the whole index when it was made by another analyzer; True when it rebuilt."""
    found = stored_version(db)
    if found == index_version():
        return False
    if count_memories(db) == 0:
        db.writing(record_version)
        return False
    log.warning(
        "search index was built by %s, this code uses %s: rebuilding it now",
        found or "an older version",
        index_version(),
    )
    total = rebuild(db)
    log.warning("search index rebuilt: %d memories", total)
    return True
