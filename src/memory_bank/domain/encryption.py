"""Key operations over a whole deployment: seal what is plain, open what is sealed, re-wrap
every data key under a new master key. Each step is its own transaction and every run resumes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from sqlalchemy import Connection

from memory_bank.search.document import postings_of
from memory_bank.store.database import Database
from memory_bank.store.sealing import crypto, data_keys, master_key, seal_existing
from memory_bank.store.sealing.sealed import SealedTable

log = logging.getLogger("memory_bank.crypto")
BATCH = 200
Progress = Callable[[int], None]


def total_rows(db: Database) -> int:
    """Rows of every sealed table to look at (for a progress bar)."""
    with db.reading() as conn:
        return seal_existing.count_rows(conn)


def _begin(conn: Connection, user_id: str, *, to_sealed: bool) -> bool:
    """Mark the owner MIXED (making their key when sealing); False when nothing is to do."""
    if to_sealed:
        seal = data_keys.sealer(conn, user_id, create=True)
        done = getattr(seal, "state", None) == data_keys.SEALED
        if done and seal_existing.left_to_convert(conn, user_id, to_sealed=True) == 0:
            return False
    data_keys.set_state(conn, user_id, data_keys.MIXED)
    return True


def _batch(
    conn: Connection,
    user_id: str,
    spec: SealedTable,
    after: str,
    size: int,
    *,
    to_sealed: bool,
) -> tuple[list[str], int]:
    """One batch of the owner's rows of one sealed table, converted."""
    seal = data_keys.sealer(conn, user_id)
    return seal_existing.convert_batch(
        conn, spec, user_id, seal, after, size, to_sealed=to_sealed, index_of=postings_of
    )


def _finish(conn: Connection, user_id: str, *, to_sealed: bool) -> bool:
    """Seal the owner's state (or destroy their key) once no row is left; False if some are.

    The key's row is locked first: a save that seals with it holds it shared until its commit
    (data_keys.sealer), so the count below sees every row sealed with the key, and a key is
    destroyed only when nothing sealed with it remains.
    """
    if not data_keys.lock(conn, user_id):
        # No key (any more): nothing is left to open; a seal must start again.
        return not to_sealed
    if seal_existing.left_to_convert(conn, user_id, to_sealed=to_sealed):
        return False
    if to_sealed:
        data_keys.set_state(conn, user_id, data_keys.SEALED)
    else:
        data_keys.destroy(conn, user_id)
    return True


def _convert_owner(
    db: Database,
    user_id: str,
    *,
    to_sealed: bool,
    batch: int,
    pause: float,
    progress: Progress | None,
) -> None:
    """Every sealed table of one owner, batch by batch, each batch its own transaction."""
    for spec in seal_existing.tables():
        after = ""
        while True:
            ids, _changed = db.writing(
                partial(
                    _batch,
                    user_id=user_id,
                    spec=spec,
                    after=after,
                    size=batch,
                    to_sealed=to_sealed,
                ),
            )
            if not ids:
                break
            after = ids[-1]
            if progress is not None:
                progress(len(ids))
            if pause:
                # Leaves the database to the live service between batches.
                time.sleep(pause)


def convert(
    db: Database,
    *,
    to_sealed: bool,
    batch: int = BATCH,
    pause: float = 0.0,
    progress: Progress | None = None,
) -> list[str]:
    """Seal every plain row (to_sealed) or open every sealed one, owner by owner and table by
    table (store/sealing/sealed.py), in batches of one transaction; returns the owners whose rows
    could not all be converted (their keys are kept)."""
    if db.keyring is None:
        raise crypto.KeyProblem("a master key is needed (MEMORY_BANK_MASTER_KEY_FILE)")
    with db.reading() as conn:
        users = seal_existing.users_with_rows(conn) if to_sealed else data_keys.owners(conn)
    unfinished = []
    for user_id in users:
        if not db.writing(partial(_begin, user_id=user_id, to_sealed=to_sealed)):
            continue
        _convert_owner(
            db, user_id, to_sealed=to_sealed, batch=batch, pause=pause, progress=progress
        )
        if not db.writing(partial(_finish, user_id=user_id, to_sealed=to_sealed)):
            log.warning("user %s still has rows to convert: run again", user_id)
            unfinished.append(user_id)
    if not to_sealed and not unfinished:
        with db.engine.begin() as conn:
            if not data_keys.owners(conn):
                master_key.record_master(conn, None)
    return unfinished


def compact(db: Database) -> bool:
    """Rewrite a SQLite file so the pages a conversion freed keep no old text; False when it
    could not (another process holds the file) or the engine is not SQLite."""
    return seal_existing.compact(db.engine)


def rotate_master(
    db: Database,
    old: crypto.MasterKey,
    new: crypto.MasterKey,
    progress: Progress | None = None,
) -> int:
    """Re-wrap every data key not yet under the new master key, one owner per transaction;
    memory rows are untouched. Returns how many were re-wrapped."""
    with db.reading() as conn:
        todo = data_keys.owners(conn, master_id=new.fingerprint)
    done = 0
    for user_id in todo:
        if db.writing(partial(data_keys.rewrap, user_id=user_id, old=old, new=new)):
            done += 1
        if progress is not None:
            progress(1)
    with db.engine.begin() as conn:
        master_key.record_master(conn, new)
    return done


def pending_rotation(db: Database, new: crypto.MasterKey) -> int:
    """How many data keys are not yet wrapped by the new master key."""
    with db.reading() as conn:
        return len(data_keys.owners(conn, master_id=new.fingerprint))
