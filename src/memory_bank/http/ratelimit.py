"""Per-credential rate limit: a token bucket per presented key, kept in each worker process."""

from __future__ import annotations

import hashlib
import math
import threading
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from memory_bank import errors
from memory_bank.http.scope import header

# Probes and metrics stay reachable however busy a credential is.
EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
MAX_BUCKETS = 10_000


class TokenBuckets:
    """Buckets of `per_minute` tokens refilled continuously; one per credential."""

    def __init__(self, per_minute: int, clock: object = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Spend one token; 0 when allowed, else the seconds until one is available."""
        now = self.clock()  # type: ignore[operator]
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                self._trim(now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

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


def credential_key(scope: Scope) -> str | None:
    """A stable, non-reversible handle for the credential a request presents, if any."""
    value = header(scope, b"authorization")
    if not value:
        return None
    # Only a hash is kept in memory, so the limiter never holds a usable key.
    return hashlib.sha256(value.strip().encode("utf-8", "replace")).hexdigest()[:32]


class RateLimitMiddleware:
    """Answer 429 rate_limited (with Retry-After) when a credential spends its minute."""

    def __init__(self, app: ASGIApp, per_minute: int) -> None:
        self.app = app
        self.buckets = TokenBuckets(per_minute) if per_minute > 0 else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if (
            self.buckets is None
            or scope["type"] != "http"
            or scope.get("method") == "OPTIONS"
            or scope.get("path") in EXEMPT_PATHS
        ):
            await self.app(scope, receive, send)
            return
        key = credential_key(scope)
        wait = self.buckets.take(key) if key else 0.0
        if wait > 0:
            retry = str(max(1, math.ceil(wait)))
            await errors.send(
                send,
                errors.RateLimited(
                    f"Too many requests for this credential; retry in {retry} s.",
                    headers={"Retry-After": retry},
                ),
            )
            return
        await self.app(scope, receive, send)
