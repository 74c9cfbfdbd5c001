"""One app's database: its pools, and what a write through them does (seal, queue vectors).

Made once per app (or CLI command) from the settings and handed to whatever needs the
database, as flaskr's get_db hands out the request's connection. Every connection it gives
out carries it, so a statement deep in store/ learns how to seal and whether to queue an
embedding from the connection its caller passed, not from a table kept by the module.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.pool import QueuePool

from memory_bank.store import batch, shards
from memory_bank.store.engine import is_sqlite, make_auth_engine, make_engine, reading, writing

if TYPE_CHECKING:
    from memory_bank.store.sealing.data_keys import Keyring

T = TypeVar("T")

# The execution option under which a connection carries the Database that gave it out.
_OPTION = "memory_bank_database"


class Database:
    """The engine, the pools made from it, and the write policy: sealing and vector queueing."""

    def __init__(
        self, engine: Engine, *, keyring: Keyring | None = None, queue_vectors: bool = False
    ) -> None:
        # Sealing is on exactly when a keyring is given (store/sealing/data_keys.py).
        self.keyring = keyring
        # Whether a save queues an embedding job in its transaction (semantic search on); set
        # once at start, after the model is chosen.
        self.queue_vectors = queue_vectors
        self._base = engine
        # The same pool, with every connection from it carrying this object.
        self.engine = engine.execution_options(**{_OPTION: self})
        self._saves: Engine | None = None
        self._auth: Engine | None = None
        # The pools to close on dispose(): the engine given, and any opened here.
        self._pools = [engine]
        self._lock = threading.Lock()
        self._backends: list[shards.Backend] | None = None

    @property
    def saves(self) -> Engine:
        """The pool whose connections send a save's writes as one batch (store/batch.py).

        On MySQL/MariaDB with a batching driver a pool of its own, the only one opened with
        MULTI_STATEMENTS, made on first use with the main pool's size; the main pool elsewhere.
        """
        if is_sqlite(self._base) or self._base.dialect.driver not in batch.DRIVERS:
            return self.engine
        with self._lock:
            if self._saves is None:
                pool = self._base.pool
                size = pool.size() if isinstance(pool, QueuePool) else 5
                url = self._base.url.render_as_string(hide_password=False)
                made = make_engine(url, size, multi_statements=True)
                self._pools.append(made)
                self._saves = made.execution_options(**{_OPTION: self})
            return self._saves

    @property
    def auth(self) -> Engine:
        """The pool for the credential check on every request (store.engine.make_auth_engine)."""
        with self._lock:
            if self._auth is None:
                made = make_auth_engine(self._base)
                if made is not self._base:
                    self._pools.append(made)
                self._auth = self.engine if made is self._base else made
            return self._auth

    @property
    def backends(self) -> list[shards.Backend]:
        """The backends behind a Spider head (store/shards.py); [] for a single server. Read
        from the head once (only `shards init` changes them)."""
        if self._backends is None:
            if is_sqlite(self._base):
                self._backends = []
            else:
                with reading(self._base) as conn:
                    self._backends = shards.backends(conn)
        return self._backends

    def unreachable(self) -> list[str]:
        """The names of the backends that do not answer through the head (none: [])."""
        if not self.backends:
            return []
        with reading(self._base) as conn:
            return shards.unreachable(conn, self.backends)

    def reading(self) -> contextlib.AbstractContextManager[Connection]:
        """A connection for reads; database outages become 503."""
        return reading(self.engine)

    def writing(
        self, work: Callable[[Connection], T], attempts: int = 3, *, batched: bool = False
    ) -> T:
        """Run work(conn) in one write transaction, retrying deadlocks; outages become 503.

        batched=True runs it on the save pool (saves), where a save's writes and its COMMIT go
        in one round trip; only the transactions that write a memory ask for it.
        """
        return writing(self.saves if batched else self.engine, work, attempts)

    def dispose(self) -> None:
        """Close every pool this object opened."""
        for engine in self._pools:
            engine.dispose()


def of(conn: Connection) -> Database | None:
    """The Database that gave out this connection; None for one opened on a bare engine
    (migrations, maintenance and tests that inspect rows), which seals and queues nothing."""
    found = conn.get_execution_options().get(_OPTION)
    return found if isinstance(found, Database) else None
