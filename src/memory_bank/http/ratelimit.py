"""Rate limits, counted per process or, with a shared store, across every app host.

Two kinds of limit: one per API key, spent once the key is known (however the client spells
its Authorization header, and once per MCP tool call, not again for the REST call the tool
makes in-process); and one per client address for failed authentications. Once a client has
spent those, a key not seen to work lately is refused with a 429 before any database lookup,
while keys that work keep working (a neighbour behind the same address, a proxy or NAT, is not
locked out by one client with a bad key). Where the counts live is http/limitstore.py's
business: MEMORY_BANK_RATE_LIMIT_STORAGE.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import math
import time

from starlette.types import Scope

from memory_bank import errors
from memory_bank.http import limitstore
from memory_bank.settings import Settings

# Digests of keys that authenticated lately, with when this process last marked them in the
# store; forgotten wholesale past this many.
MAX_WORKING = 10_000
# Seconds a key that worked stays known good in the store without working again; this process
# renews its mark when half of that has passed.
WORKING_SECONDS = 3600

# The key already charged in this request's context: the MCP endpoint charges the tool call,
# and the REST request the executor then makes in-process (same context) is not charged again.
charged: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memory_bank_charged_key", default=None
)


class Limiter:
    """The per-key and per-client limits of one app (0 per minute turns either off)."""

    def __init__(
        self,
        per_minute: int,
        failures_per_minute: int,
        storage: str = "memory://",
        secret: bytes = b"",
    ) -> None:
        self.keys = limitstore.per_minute(per_minute) if per_minute > 0 else None
        self.failures = (
            limitstore.per_minute(failures_per_minute) if failures_per_minute > 0 else None
        )
        self._secret = secret
        # The deployment's counts apart from another's in one Redis: a name from its secret.
        namespace = hashlib.sha256(b"rate limits\0" + secret).hexdigest()[:16]
        self.windows = limitstore.Windows(limitstore.open_storage(storage, namespace))
        self._working: dict[bytes, float] = {}

    @classmethod
    def from_settings(cls, settings: Settings, secret: bytes) -> Limiter:
        """The limiter the settings describe, its shared store asked once (a warning if mute)."""
        limiter = cls(
            settings.rate_limit_per_minute,
            settings.auth_failures_per_minute,
            settings.rate_limit_storage.reveal(),
            secret,
        )
        if limiter.keys is not None or limiter.failures is not None:
            limiter.health()
        return limiter

    def health(self) -> str | None:
        """None when the counts are kept where the setting says, else why not (/readyz)."""
        return self.windows.probe()

    def before_lookup(self, client: str, token: str) -> None:
        """429 when this client spent its failed authentications and the key is not known good."""
        if self.failures is None or not self.windows.full(self.failures, "client", client):
            return
        digest = self._digest(token)
        if digest in self._working or self.windows.marked(_working_key(digest)):
            return
        wait = self.windows.wait(self.failures, "client", client)
        raise _limited("Too many failed authentications from this address", wait)

    def failed(self, client: str, token: str) -> None:
        """Count a refused key against its client."""
        if self.failures is None:
            return
        self.windows.hit(self.failures, "client", client)
        # Revoked or expired since it worked: known good no more, here or anywhere.
        digest = self._digest(token)
        self._working.pop(digest, None)
        self.windows.unmark(_working_key(digest))

    def succeeded(self, key_id: str, token: str) -> None:
        """Remember a key that works and charge the request to it; 429 when it is spent.

        Not charged again when this context already paid for the key (the caller marks that
        with `charged`: a thread cannot set it for the context it was called from).
        """
        if self.failures is not None:
            self._remember(self._digest(token))
        if self.keys is None or charged.get() == key_id:
            return
        if not self.windows.hit(self.keys, "key", key_id):
            wait = self.windows.wait(self.keys, "key", key_id)
            raise _limited("Too many requests for this API key", wait)

    def _remember(self, digest: bytes) -> None:
        """Know a key as good here, and in the store for the other processes and hosts (a
        write only when this process has not marked it within half of WORKING_SECONDS)."""
        now = time.monotonic()
        marked = self._working.get(digest)
        if marked is not None and now - marked < WORKING_SECONDS / 2:
            return
        if len(self._working) >= MAX_WORKING:
            self._working.clear()
        self.windows.mark(_working_key(digest), WORKING_SECONDS)
        self._working[digest] = now

    def _digest(self, token: str) -> bytes:
        """A handle for a presented key: neither the limiter nor its store holds a usable key."""
        return hmac.digest(self._secret, token.encode("utf-8", "replace"), "sha256")


def client_address(scope: Scope) -> str:
    """The client a request came from: the peer, or what a trusted proxy says it is."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _working_key(digest: bytes) -> str:
    """The store's name for the mark of a key that worked."""
    return f"working/{digest.hex()}"


def _limited(what: str, wait: float) -> errors.RateLimited:
    """The 429 problem, with Retry-After in whole seconds."""
    retry = str(max(1, math.ceil(wait)))
    return errors.RateLimited(f"{what}; retry in {retry} s.", headers={"Retry-After": retry})
