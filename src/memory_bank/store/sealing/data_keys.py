"""Owners' data keys in the database, the process's cache of unwrapped ones, and the sealer a
statement uses to seal and open one owner's rows.

A connection from a Database with a keyring (store/database.py) seals every user-text column
it writes; without one nothing is sealed, and start-up (store/sealing/master_key.py) refuses a
database that holds sealed data. Every statement on owner_key filters by user_id, except the
operator's maintenance reads named as such.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from memory_bank.errors import InternalError
from memory_bank.ids import utcnow
from memory_bank.store import database
from memory_bank.store.owners import is_org
from memory_bank.store.postings import Postings
from memory_bank.store.schema import memory, memory_draft, owner_key
from memory_bank.store.sealing import crypto

log = logging.getLogger("memory_bank.crypto")

SEALED = "sealed"
MIXED = "mixed"
# A stored tag (store/tags.py) is this and the folded tag in the clear, or its keyed hash ("#…",
# crypto.HASHED_TERM_PREFIX) when sealed: the first character tells which.
PLAIN_TAG_PREFIX = "="
# Hashed before a tag, so a tag's hash never equals the hash of the same word in the postings
# (no term holds a NUL): a reader cannot tell which tags are also words of the memories.
_TAG_DOMAIN = "\x00tag\x00"


class StoredDataUnreadable(InternalError):
    """A stored value that does not open for its owner, column and row: refused, never guessed."""

    code = "stored_data_unreadable"


def owner_of_user(user_id: str) -> str:
    """The owner name a row's `user_id` binds its ciphertext to: "user:<id>" for a user, the
    org's owner key ("org:<id>", store/owners.py) for an org's memories."""
    return user_id if is_org(user_id) else f"user:{user_id}"


class Sealer:
    """Seals and opens one owner's fields and names their index terms: here, in the clear."""

    encrypted = False

    def seal(self, column: str, row_id: str, text: str) -> str:
        """The stored form of a field's text."""
        return text

    def seal_opt(self, column: str, row_id: str, text: str | None) -> str | None:
        """seal() for an optional field (NULL stays NULL)."""
        return None if text is None else self.seal(column, row_id, text)

    def open(self, column: str, row_id: str, value: str) -> str:
        """A field's text from its stored form; a sealed one is refused (no key here)."""
        if crypto.is_sealed(value):
            # A process without the master key (started before encrypt-existing, say) must not
            # show ciphertext as if it were the memory.
            log.error("a sealed %s of %s, and no master key in this process", column, row_id)
            raise StoredDataUnreadable(
                "A stored memory could not be read; the operator has been told."
            )
        return value

    def open_opt(self, column: str, row_id: str, value: str | None) -> str | None:
        """open() for an optional field."""
        return None if value is None else self.open(column, row_id, value)

    def postings(self, index: Postings) -> Postings:
        """A memory's postings as stored."""
        return index

    def term_forms(self, term: str) -> tuple[str, ...]:
        """The stored forms a query term may have in this owner's postings."""
        return (term,)

    def tag(self, tag: str) -> str:
        """The stored form of a folded tag (store/tags.py)."""
        return PLAIN_TAG_PREFIX + tag

    def tag_forms(self, tag: str) -> tuple[str, ...]:
        """The stored forms a folded tag may have in this owner's tag rows."""
        return (self.tag(tag),)


PLAIN = Sealer()


class OwnerSealer(Sealer):
    """An owner with a data key: new values sealed; in MIXED state old plain values still read."""

    encrypted = True

    def __init__(self, key: crypto.DataKey, user_id: str, state: str) -> None:
        self._key = key
        self._user_id = user_id
        self.state = state

    def seal(self, column: str, row_id: str, text: str) -> str:
        """The field sealed for this owner, column and row."""
        return self._key.seal(column, row_id, text)

    def open(self, column: str, row_id: str, value: str) -> str:
        """The field opened; a plain value only while encrypt-existing is not done (MIXED)."""
        if self.state == MIXED and not crypto.is_sealed(value):
            return value
        try:
            return self._key.open(column, row_id, value)
        except crypto.Unreadable as exc:
            # Names the row, never its content: the operator can find it, a client learns nothing.
            log.error("refused a stored value of user %s: %s", self._user_id, exc)
            raise StoredDataUnreadable(
                "A stored memory could not be read; the operator has been told."
            ) from None

    def postings(self, index: Postings) -> Postings:
        """The postings with each term replaced by its keyed hash."""
        hashed: dict[str, int] = {}
        for term, tf in index.terms.items():
            name = self._key.term(term)
            hashed[name] = hashed.get(name, 0) + tf
        return Postings(hashed, index.length)

    def term_forms(self, term: str) -> tuple[str, ...]:
        """The hashed term; while MIXED also the plain one (each memory has one or the other)."""
        if self.state == MIXED:
            return (term, self._key.term(term))
        return (self._key.term(term),)

    def tag(self, tag: str) -> str:
        """The folded tag's keyed hash (never the tag itself)."""
        return self._key.term(_TAG_DOMAIN + tag)

    def tag_forms(self, tag: str) -> tuple[str, ...]:
        """The hashed tag; while MIXED also the plain one (each memory has one or the other)."""
        if self.state == MIXED:
            return (PLAIN_TAG_PREFIX + tag, self.tag(tag))
        return (self.tag(tag),)


@dataclass
class Keyring:
    """A master key and a bounded cache of the data keys it unwrapped, shared by a process."""

    master: crypto.MasterKey
    cache_size: int = 1000

    def __post_init__(self) -> None:
        self._cache: OrderedDict[tuple[str, str], crypto.DataKey] = OrderedDict()
        self._lock = threading.Lock()

    def data_key(self, user_id: str, wrapped: str) -> crypto.DataKey:
        """The owner's unwrapped data key, from the cache when this wrapped form was seen."""
        cache_key = (user_id, wrapped)
        with self._lock:
            found = self._cache.get(cache_key)
            if found is not None:
                self._cache.move_to_end(cache_key)
                return found
        owner = owner_of_user(user_id)
        key = crypto.DataKey(owner, crypto.unwrap(self.master, owner, wrapped))
        if self.cache_size > 0:
            with self._lock:
                self._cache[cache_key] = key
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return key

    def forget(self, user_id: str) -> None:
        """Drop the owner's cached key (erase)."""
        with self._lock:
            for cache_key in [k for k in self._cache if k[0] == user_id]:
                del self._cache[cache_key]


def keyring_of(conn: Connection) -> Keyring | None:
    """The keyring of the Database that gave out this connection, if encryption is on."""
    db = database.of(conn)
    return db.keyring if db is not None else None


def sealer(conn: Connection, user_id: str, *, create: bool = False) -> Sealer:
    """How this user's rows are stored; create=True (writes) makes their data key if needed."""
    keyring = keyring_of(conn)
    if keyring is None:
        return PLAIN
    # A write holds its key's row shared until it commits, so decrypt-existing cannot destroy
    # the key between this read and the commit of what it seals (lock() below).
    found = _stored(conn, user_id, shared=create)
    if found is None:
        if not create:
            # Nothing of theirs was ever sealed: whatever they have is plain.
            return PLAIN
        found = _create(conn, keyring, user_id)
    wrapped, master_id, state = found
    if master_id != keyring.master.fingerprint:
        log.error("the data key of user %s is wrapped by master key %s", user_id, master_id)
        raise StoredDataUnreadable("A stored memory could not be read; the operator has been told.")
    try:
        key = keyring.data_key(user_id, wrapped)
    except crypto.KeyProblem as exc:
        log.error("%s", exc)
        raise StoredDataUnreadable(
            "A stored memory could not be read; the operator has been told."
        ) from None
    return OwnerSealer(key, user_id, state)


def _stored(conn: Connection, user_id: str, *, shared: bool = False) -> tuple[str, str, str] | None:
    """The user's wrapped key, its master key's id and their state, if they have a key
    (shared=True: the row locked shared until the transaction ends, MySQL/MariaDB)."""
    row = conn.execute(_SELECT_KEY_SHARED if shared else _SELECT_KEY, {"user_id": user_id}).first()
    return None if row is None else (row.wrapped, row.master_id, row.state)


_SELECT_KEY = select(owner_key.c.wrapped, owner_key.c.master_id, owner_key.c.state).where(
    owner_key.c.user_id == bindparam("user_id")
)
_SELECT_KEY_SHARED = _SELECT_KEY.with_for_update(read=True)


def lock(conn: Connection, user_id: str) -> bool:
    """Lock the user's key row for this transaction, waiting for every write still sealing
    with it; False when they have no key."""
    found = conn.execute(
        select(owner_key.c.user_id).where(owner_key.c.user_id == user_id).with_for_update()
    ).first()
    return found is not None


def _create(conn: Connection, keyring: Keyring, user_id: str) -> tuple[str, str, str]:
    """Make the user's data key: MIXED when they already have plain rows, else SEALED."""
    has_rows = any(
        conn.execute(select(table.c.id).where(table.c.user_id == user_id).limit(1)).first()
        for table in (memory, memory_draft)
    )
    state = MIXED if has_rows else SEALED
    wrapped = crypto.wrap(keyring.master, owner_of_user(user_id), crypto.new_data_key())
    try:
        conn.execute(
            insert(owner_key).values(
                user_id=user_id,
                wrapped=wrapped,
                master_id=keyring.master.fingerprint,
                state=state,
                created_at=utcnow(),
            )
        )
    except IntegrityError:
        # A concurrent first save of the same user made it first: use theirs.
        found = _stored(conn, user_id, shared=True)
        if found is None:
            raise
        return found
    return wrapped, keyring.master.fingerprint, state


def set_state(conn: Connection, user_id: str, state: str) -> None:
    """Record that the user's rows are now all sealed (or mixed again)."""
    conn.execute(update(owner_key).where(owner_key.c.user_id == user_id).values(state=state))


def destroy(conn: Connection, user_id: str) -> bool:
    """Delete the user's data key (crypto-shredding); True when there was one."""
    keyring = keyring_of(conn)
    if keyring is not None:
        keyring.forget(user_id)
    done = conn.execute(delete(owner_key).where(owner_key.c.user_id == user_id))
    return bool(done.rowcount)


def rewrap(conn: Connection, user_id: str, old: crypto.MasterKey, new: crypto.MasterKey) -> bool:
    """Re-wrap the user's data key from the old master key to the new; False if already done."""
    found = _stored(conn, user_id)
    if found is None or found[1] == new.fingerprint:
        return False
    owner = owner_of_user(user_id)
    data_key = crypto.unwrap(old, owner, found[0])
    conn.execute(
        update(owner_key)
        .where(owner_key.c.user_id == user_id)
        .values(wrapped=crypto.wrap(new, owner, data_key), master_id=new.fingerprint)
    )
    return True


def owners(conn: Connection, master_id: str | None = None) -> list[str]:
    """Users with a data key (not under master_id, when given): the operator's maintenance."""
    stmt = select(owner_key.c.user_id)
    if master_id is not None:
        stmt = stmt.where(owner_key.c.master_id != master_id)
    return sorted(conn.execute(stmt).scalars())
