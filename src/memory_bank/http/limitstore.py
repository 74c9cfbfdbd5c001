"""Where the rate limits count: in this process, or in Redis, shared by every app host.

Counts are moving windows (at most N hits in any 60 seconds) kept by the `limits` library. A
shared store that stops answering never fails a request: this process counts on its own (as
with memory://) until the store answers again, says so once per outage in the log, and
/readyz names it. So that it still holds each key to its limit then, the process keeps its own
hits of the last window beside the shared count at all times, and a hit passes only when both
have room: an outage starts from what this process had counted, not from nothing, and the
hits made during one still count here when the store, which never saw them, answers again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from limits import RateLimitItem, RateLimitItemPerMinute
from limits.errors import ConfigurationError, StorageError
from limits.storage import MemoryStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

log = logging.getLogger(__name__)

T = TypeVar("T")

# The URLs of a Redis server (TCP, TLS, a Unix socket) that limits' RedisStorage takes.
REDIS_SCHEMES = frozenset({"redis", "rediss", "redis+unix"})
# Seconds one Redis command (or connecting) may take: the store is near the app hosts, and a
# request never waits longer than this on a store that went away.
TIMEOUT_SECONDS = 0.5
# Seconds between tries of a store that failed; meanwhile no request waits on it at all.
RETRY_SECONDS = 5.0
# Windows this process keeps before it drops those whose hits are all older than the window:
# memory:// keeps an emptied window's name for good, and client addresses are unbounded.
OWN_WINDOWS = 10_000


def per_minute(amount: int) -> RateLimitItem:
    """The limit of `amount` hits in any 60 seconds."""
    return RateLimitItemPerMinute(amount)


def open_storage(uri: str, namespace: str) -> Storage:
    """The storage a URL names (memory:// or a Redis URL); a ValueError naming the setting
    for anything else, or when the redis client is not installed."""
    scheme = urlsplit(uri).scheme
    if scheme == "memory":
        return MemoryStorage()
    if scheme not in REDIS_SCHEMES:
        raise ValueError(
            "MEMORY_BANK_RATE_LIMIT_STORAGE must be memory:// or a redis://, rediss:// or "
            f"redis+unix:// URL, not a {scheme or 'plain'!s} one"
        )
    try:
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        raise ValueError(
            "MEMORY_BANK_RATE_LIMIT_STORAGE names Redis, but the redis client is not "
            "installed: pip install '.[redis]' in a clone"
        ) from None
    options: dict[str, Any] = {
        "socket_timeout": TIMEOUT_SECONDS,
        "socket_connect_timeout": TIMEOUT_SECONDS,
        # redis-py retries a failed command three times with backoff of up to seconds by
        # default; here a failure goes to this process's own count at once instead.
        "retry": Retry(NoBackoff(), 0),
    }
    try:
        storage = storage_from_string(
            uri,
            # One deployment's counts apart from another's on the same Redis.
            key_prefix=f"memory-bank:{namespace}",
            wrap_exceptions=True,
            **options,
        )
    except ConfigurationError as exc:
        raise ValueError(f"MEMORY_BANK_RATE_LIMIT_STORAGE: {exc}") from None
    # The schemes above name synchronous storages only (async+redis:// would not).
    return cast(Storage, storage)


class Windows:
    """Moving windows and marks in one storage, with this process's own standing in for a
    shared one while it does not answer."""

    def __init__(self, storage: Storage) -> None:
        self.shared = not isinstance(storage, MemoryStorage)
        self.storage = storage
        self.limiter = MovingWindowRateLimiter(storage)
        # This process's own hits of each window's last 60 seconds (older ones expire, and
        # _prune drops the windows they leave empty): the count itself with memory://, kept
        # beside the shared count otherwise. Its marks stand in for the shared store's only
        # while that does not answer.
        local = MemoryStorage() if self.shared else storage
        self._local = (local, MovingWindowRateLimiter(local) if self.shared else self.limiter)
        self._lock = threading.Lock()
        self._prune_at = OWN_WINDOWS
        self._pruning = threading.Lock()
        # When the current outage of the shared store began (None: it answers), and when to
        # try it again.
        self.down_since: float | None = None
        self._retry_at = 0.0

    def hit(self, item: RateLimitItem, *name: str) -> bool:
        """Count one hit; False (nothing counted) when the window is full.

        With a shared store, a hit also needs room among this process's own hits: it is
        counted there as well, so an outage begins from them, not from an empty window.
        """
        own = self._local[1]
        self._prune()
        if not self.shared:
            return own.hit(item, *name)
        if not own.test(item, *name):
            return False
        answer = self._ask(lambda storage, limiter: limiter.hit(item, *name))
        if answer is not None and not answer[0]:
            return False
        # Refused only when another thread of this process took the last room meanwhile: one
        # hit too many in the shared count then, never one too many here.
        return own.hit(item, *name)

    def full(self, item: RateLimitItem, *name: str) -> bool:
        """Whether one more hit would be refused, counting nothing."""
        if not self._local[1].test(item, *name):
            return True
        answer = self._ask(lambda storage, limiter: limiter.test(item, *name))
        return answer is not None and not answer[0]

    def wait(self, item: RateLimitItem, *name: str) -> float:
        """Seconds until the window has room again (0 when it has)."""
        every = [self._local[1].get_window_stats(item, *name)]
        answer = self._ask(lambda storage, limiter: limiter.get_window_stats(item, *name))
        if answer is not None:
            every.append(answer[0])
        now = time.time()
        return max((max(0.0, s.reset_time - now) for s in every if s.remaining <= 0), default=0.0)

    def mark(self, key: str, seconds: int) -> None:
        """Set a mark that lasts `seconds` from now."""

        def work(storage: Storage, limiter: MovingWindowRateLimiter) -> None:
            # Cleared first: an increment sets the expiry only when it creates the key.
            storage.clear(key)
            storage.incr(key, seconds)

        self._run(work)

    def marked(self, key: str) -> bool:
        """Whether a mark is set."""
        return bool(self._run(lambda storage, limiter: storage.get(key)))

    def unmark(self, key: str) -> None:
        """Clear a mark."""
        self._run(lambda storage, limiter: storage.clear(key))

    def probe(self) -> str | None:
        """None when the counts are where the setting says, else why not (for /readyz).

        Asks the shared store (a ping) unless it failed within the last RETRY_SECONDS.
        """
        if not self.shared:
            return None
        if self.down_since is None or time.monotonic() >= self._retry_at:
            if self.storage.check():
                self._recovered()
            else:
                self._failed(RuntimeError("no answer to PING"))
        since = self.down_since
        if since is None:
            return None
        return (
            f"rate limits counted per process: the shared store has not answered for "
            f"{time.monotonic() - since:.0f} s"
        )

    def _prune(self) -> None:
        """Drop this process's windows whose hits have all expired, once there are more than
        OWN_WINDOWS (and then when their number doubled): what it keeps is its hits of the last
        window, however many keys and addresses it ever saw."""
        local = self._local[0]
        if not isinstance(local, MemoryStorage) or len(local.events) <= self._prune_at:
            return
        # One thread prunes; the others go on counting meanwhile.
        if not self._pruning.acquire(blocking=False):
            return
        try:
            now = time.time()
            for key in list(local.events):
                # Under the window's lock: a hit on it may be between creating and filling it.
                with local.locks[key]:
                    events = local.events.get(key)
                    # Newest first: when the newest hit expired, all did.
                    if not events or events[0].expiry <= now:
                        local.events.pop(key, None)
                        local.locks.pop(key, None)
            self._prune_at = max(OWN_WINDOWS, 2 * len(local.events))
        finally:
            self._pruning.release()

    def _run(self, work: Callable[[Storage, MovingWindowRateLimiter], T]) -> T:
        """Do work on the shared store, or on this process's own while that does not answer."""
        answer = self._ask(work)
        return answer[0] if answer is not None else work(*self._local)

    def _ask(self, work: Callable[[Storage, MovingWindowRateLimiter], T]) -> tuple[T] | None:
        """The shared store's answer to work, or None: no shared store, or it does not answer
        (not asked again within RETRY_SECONDS of a failure)."""
        if not self.shared or (self.down_since is not None and time.monotonic() < self._retry_at):
            return None
        try:
            result = work(self.storage, self.limiter)
        except StorageError as exc:
            self._failed(exc.storage_error)
            return None
        if self.down_since is not None:
            self._recovered()
        return (result,)

    def _failed(self, error: Exception) -> None:
        """Start (or go on with) an outage: logged once, retried after RETRY_SECONDS."""
        with self._lock:
            now = time.monotonic()
            self._retry_at = now + RETRY_SECONDS
            if self.down_since is not None:
                return
            self.down_since = now
        # Never the URL: it may hold the store's password.
        log.warning(
            "rate limit store unreachable (%s: %s); counting per process until it answers",
            type(error).__name__,
            error,
        )

    def _recovered(self) -> None:
        """End an outage; the hits made meanwhile stay in this process's own count only."""
        with self._lock:
            since, self.down_since = self.down_since, None
        if since is not None:
            log.warning(
                "rate limit store answers again after %.0f s; counting there again",
                time.monotonic() - since,
            )
