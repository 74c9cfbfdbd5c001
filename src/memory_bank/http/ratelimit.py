"""Rate limits, kept in each worker process.

Two kinds of bucket: one per API key, spent once the key is known (however the client spells
its Authorization header, and once per MCP tool call, not again for the REST call the tool
makes in-process); and one per client address for failed authentications. Once a client has
spent those, a key this process has not seen work lately is refused with a 429 before any
database lookup, while keys that work keep working (a neighbour behind the same address, a
proxy or NAT, is not locked out by one client with a bad key).
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import threading
import time
from collections.abc import Callable

from starlette.types import Scope

from memory_bank import errors

MAX_BUCKETS = 10_000
# Digests of keys that authenticated lately; forgotten wholesale past this many.
MAX_WORKING = 10_000

# The key already charged in this request's context: the MCP endpoint charges the tool call,
# and the REST request the executor then makes in-process (same context) is not charged again.
charged: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memory_bank_charged_key", default=None
)


class TokenBuckets:
    """Buckets of `per_minute` tokens refilled continuously; one per name."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, name: str) -> float:
        """Spend one token; 0 when allowed, else the seconds until one is available."""
        now = self.clock()
        with self._lock:
            tokens = self._tokens(name, now)
            if tokens >= 1.0:
                self._buckets[name] = (tokens - 1.0, now)
                self._trim(now)
                return 0.0
            self._buckets[name] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def wait(self, name: str) -> float:
        """The seconds until a token is available (0 when one is), spending nothing."""
        now = self.clock()
        with self._lock:
            tokens = self._tokens(name, now)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def _tokens(self, name: str, now: float) -> float:
        """The tokens a bucket holds now (a new one is full)."""
        tokens, last = self._buckets.get(name, (self.capacity, now))
        return min(self.capacity, tokens + (now - last) * self.rate)

    def _trim(self, now: float) -> None:
        """Forget buckets that have refilled completely, when there are too many."""
        if len(self._buckets) <= MAX_BUCKETS:
            return
        full = [
            k
            for k, (tokens, last) in self._buckets.items()
            if tokens + (now - last) * self.rate >= self.capacity
        ]
        for k in full:
            del self._buckets[k]


class Limiter:
    """The per-key and per-client limits of one app (0 per minute turns either off)."""

    def __init__(
        self,
        per_minute: int,
        failures_per_minute: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.keys = TokenBuckets(per_minute, clock) if per_minute > 0 else None
        self.failures = (
            TokenBuckets(failures_per_minute, clock) if failures_per_minute > 0 else None
        )
        self._working: set[bytes] = set()

    def before_lookup(self, client: str, token: str) -> None:
        """429 when this client spent its failed authentications and the key is not known good."""
        if self.failures is None:
            return
        wait = self.failures.wait(client)
        if wait > 0 and _digest(token) not in self._working:
            raise _limited("Too many failed authentications from this address", wait)

    def failed(self, client: str, token: str) -> None:
        """Count a refused key against its client."""
        if self.failures is None:
            return
        self.failures.take(client)
        self._working.discard(_digest(token))

    def succeeded(self, key_id: str, token: str) -> None:
        """Remember a key that works and charge the request to it; 429 when it is spent.

        Not charged again when this context already paid for the key (the caller marks that
        with `charged`: a thread cannot set it for the context it was called from).
        """
        if self.failures is not None:
            if len(self._working) >= MAX_WORKING:
                self._working.clear()
            self._working.add(_digest(token))
        if self.keys is None or charged.get() == key_id:
            return
        wait = self.keys.take(key_id)
        if wait > 0:
            raise _limited("Too many requests for this API key", wait)


def client_address(scope: Scope) -> str:
    """The client a request came from: the peer, or what a trusted proxy says it is."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _digest(token: str) -> bytes:
    """A handle for a presented key: the limiter never holds a usable key in memory."""
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


def _limited(what: str, wait: float) -> errors.RateLimited:
    """The 429 problem, with Retry-After in whole seconds."""
    retry = str(max(1, math.ceil(wait)))
    return errors.RateLimited(f"{what}; retry in {retry} s.", headers={"Retry-After": retry})
