"""The master key's lifecycle: read from the settings, checked against the database at
start-up, and recorded, so a wrong or missing key stops the process instead of failing every
request. It wraps each owner's data key (store/sealing/data_keys.py)."""

from __future__ import annotations

from sqlalchemy import Connection, Engine, delete, func, select

from memory_bank.settings import Settings
from memory_bank.store import service_state
from memory_bank.store.engine import reading
from memory_bank.store.schema import owner_key
from memory_bank.store.schema import service_state as state_table
from memory_bank.store.sealing import crypto
from memory_bank.store.sealing.data_keys import Keyring, owner_of_user

# service_state: the fingerprint of the master key this database was last opened with.
MASTER_ID_STATE = "master_key_id"


def load_master(settings: Settings) -> crypto.MasterKey | None:
    """The configured master key (the file first), None when encryption is off."""
    if settings.master_key_file:
        return crypto.read_master_key_file(settings.master_key_file)
    if settings.master_key:
        return crypto.parse_master_key(settings.master_key.reveal())
    return None


def open_keyring(engine: Engine, settings: Settings) -> Keyring | None:
    """Check the configured master key against the database; the keyring to seal with.

    KeyProblem, with a message for the operator, when the key is wrong, damaged or missing
    while the database holds encrypted data: the process must not start.
    """
    master = load_master(settings)
    check_master(engine, master)
    if master is None:
        return None
    with engine.begin() as conn:
        if service_state.get(conn, MASTER_ID_STATE) != master.fingerprint:
            record_master(conn, master)
    return Keyring(master, settings.key_cache_size)


def check_master(engine: Engine, master: crypto.MasterKey | None) -> None:
    """Refuse (KeyProblem) a master key, or its absence, that this database's keys disagree with.

    Run once at start-up, before anything is served: a wrong or missing key stops the process
    with a message instead of failing every request.
    """
    with reading(engine) as conn:
        by_master: dict[str, int] = dict(
            conn.execute(
                select(owner_key.c.master_id, func.count()).group_by(owner_key.c.master_id)
            ).all()
        )
        recorded = service_state.get(conn, MASTER_ID_STATE)
        sample = None
        if master is not None and by_master.get(master.fingerprint):
            sample = conn.execute(
                select(owner_key.c.user_id, owner_key.c.wrapped)
                .where(owner_key.c.master_id == master.fingerprint)
                .limit(1)
            ).first()
    held = sum(by_master.values())
    if master is None:
        if held or recorded:
            raise crypto.KeyProblem(
                f"this database holds encrypted memories ({held} data key(s), master key "
                f"{recorded or next(iter(by_master))}); set MEMORY_BANK_MASTER_KEY_FILE "
                "(or MEMORY_BANK_MASTER_KEY) to its master key"
            )
        return
    others = {mid: n for mid, n in by_master.items() if mid != master.fingerprint}
    if others:
        if by_master.get(master.fingerprint):
            raise crypto.KeyProblem(
                f"{sum(others.values())} data key(s) are still wrapped by another master key: "
                "finish `memory-bank crypto rotate-master` before starting"
            )
        raise crypto.KeyProblem(
            f"wrong master key: this database's data keys were wrapped by master key "
            f"{', '.join(sorted(others))}, the configured one is {master.fingerprint}"
        )
    if recorded and recorded != master.fingerprint and not held:
        raise crypto.KeyProblem(
            f"wrong master key: this database was encrypted with master key {recorded}, "
            f"the configured one is {master.fingerprint}"
        )
    if sample is not None:
        crypto.unwrap(master, owner_of_user(sample.user_id), sample.wrapped)


def record_master(conn: Connection, master: crypto.MasterKey | None) -> None:
    """Remember which master key this database is encrypted with (None: it no longer is)."""
    if master is None:
        conn.execute(delete(state_table).where(state_table.c.name == MASTER_ID_STATE))
        return
    service_state.put(conn, MASTER_ID_STATE, master.fingerprint)
