"""Where rate limits count: each process alone with memory://, together in Redis; and a Redis
that stops answering fails no request (each process counts alone until it answers again)."""

from __future__ import annotations

import logging
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from types import SimpleNamespace

import limits.storage.memory
import pytest

from live_server import free_port
from memory_bank.errors import RateLimited
from memory_bank.http import limitstore
from memory_bank.http.ratelimit import Limiter
from polling import poll
from redis_store import forget, redis_url


def _admitted(limiter: Limiter, key: str = "key_1") -> bool:
    """One request of an authenticated key: True when allowed, False when a 429."""
    try:
        limiter.succeeded(key, "mb_" + key)
    except RateLimited:
        return False
    return True


@pytest.fixture
def shared() -> Iterator[tuple[str, bytes]]:
    """The test Redis and a deployment secret of this test's own (its own key prefix)."""
    url, secret = redis_url(), secrets.token_bytes(32)
    yield url, secret
    forget(url, secret)


def test_with_memory_each_limiter_counts_alone():
    one, two = Limiter(3, 0), Limiter(3, 0)
    assert [_admitted(one) for _ in range(3)] == [True] * 3
    assert _admitted(two)  # another process: its own count
    assert not _admitted(one)
    assert one.health() is None


def test_in_redis_two_limiters_share_one_count(shared):
    url, secret = shared
    one, two = Limiter(3, 0, url, secret), Limiter(3, 0, url, secret)
    assert [_admitted(one), _admitted(two), _admitted(one)] == [True] * 3
    with pytest.raises(RateLimited) as refused:
        two.succeeded("key_1", "mb_key_1")
    assert 1 <= int(refused.value.headers["Retry-After"]) <= 60
    assert not _admitted(one)
    # Another key has its own count; another deployment (secret) on the same Redis too.
    assert _admitted(two, "key_2")
    other = Limiter(3, 0, url, secrets.token_bytes(32))
    try:
        assert _admitted(other)
    finally:
        other.windows.storage.reset()
    assert one.health() is None and two.health() is None


def test_in_redis_failed_authentications_and_known_good_keys_are_shared(shared):
    url, secret = shared
    one, two = Limiter(0, 2, url, secret), Limiter(0, 2, url, secret)
    one.succeeded("key_good", "mb_good")  # worked on one host
    one.failed("10.0.0.1", "mb_bad")
    two.failed("10.0.0.1", "mb_bad")
    # The client spent its failures across both: a key never seen to work is refused...
    with pytest.raises(RateLimited):
        one.before_lookup("10.0.0.1", "mb_other")
    with pytest.raises(RateLimited):
        two.before_lookup("10.0.0.1", "mb_other")
    # ...and the key that worked on the first host is looked up on the second as usual.
    two.before_lookup("10.0.0.1", "mb_good")
    # Refused later (revoked) on the second: its mark in Redis is gone, so a third process
    # refuses it before any lookup; the first, which saw it work itself, looks it up once
    # more and forgets it when it is refused there too.
    two.failed("10.0.0.1", "mb_good")
    three = Limiter(0, 2, url, secret)
    with pytest.raises(RateLimited):
        three.before_lookup("10.0.0.1", "mb_good")
    one.before_lookup("10.0.0.1", "mb_good")
    one.failed("10.0.0.1", "mb_good")
    with pytest.raises(RateLimited):
        one.before_lookup("10.0.0.1", "mb_good")


def test_an_unreachable_redis_fails_no_request(caplog):
    # Nothing listens on this port: every command fails to connect.
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    caplog.set_level(logging.WARNING, logger=limitstore.__name__)
    limiter = Limiter(3, 2, url, b"s")
    # Each process counts alone meanwhile: the limit still holds within it.
    assert [_admitted(limiter) for _ in range(4)] == [True, True, True, False]
    limiter.failed("10.0.0.1", "mb_bad")
    limiter.failed("10.0.0.1", "mb_bad")
    with pytest.raises(RateLimited):
        limiter.before_lookup("10.0.0.1", "mb_other")
    health = limiter.health()
    assert health is not None and "per process" in health
    warnings = [r for r in caplog.records if "unreachable" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert "hunter2" not in caplog.text  # the URL's password is never logged


def _redis_server(port: int) -> subprocess.Popen[bytes]:
    """A throw-away redis-server on this port (nothing kept on disk), answering PING."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        redis_url()  # fails in CI, skips elsewhere, when the test Redis is missing too
        pytest.skip("redis-server is not installed")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_connect_timeout=1)
    try:
        if poll(client.ping, timeout=10, every=0.1, ignoring=(redis.ConnectionError,)):
            return process
    finally:
        client.close()
    process.kill()
    raise RuntimeError("redis-server did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a redis-server started by _redis_server."""
    process.terminate()
    process.wait(timeout=10)


def test_counting_moves_back_to_redis_when_it_answers_again(monkeypatch, caplog):
    monkeypatch.setattr(limitstore, "RETRY_SECONDS", 0.0)  # try Redis on every call
    caplog.set_level(logging.WARNING, logger=limitstore.__name__)
    port = free_port()
    server = _redis_server(port)
    url = f"redis://127.0.0.1:{port}/0"
    one, two = Limiter(4, 0, url, b"s"), Limiter(4, 0, url, b"s")
    try:
        assert [_admitted(one), _admitted(two)] == [True, True]  # two of four, shared
        _stop(server)
        # Redis gone: each counts alone, from the hits it had counted there itself (what the
        # other processes counted is out of reach).
        assert [_admitted(one) for _ in range(4)] == [True] * 3 + [False]
        assert one.health() is not None
        server = _redis_server(port)  # back, empty (it keeps nothing on disk)
        assert one.health() is None
        # Redis forgot the outage's hits; the process did not: its window is still full.
        assert not _admitted(one)
        # The other process counts in Redis again, within its own four (one made before).
        assert [_admitted(two) for _ in range(4)] == [True] * 3 + [False]
        # A process that started since sees what Redis counted meanwhile: three of four.
        three = Limiter(4, 0, url, b"s")
        assert [_admitted(three), _admitted(three)] == [True, False]
    finally:
        _stop(server)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("unreachable" in m for m in messages) == 1, messages
    assert sum("answers again" in m for m in messages) == 1, messages


@pytest.mark.parametrize("outage", ["stopped", "frozen"])
def test_an_outage_holds_a_process_to_the_limit_with_what_it_counted_before(outage):
    """However Redis stops answering (gone: refused connections; frozen: no answer within the
    timeout), a process passes at most the limit in the window, counting its hits before."""
    limit = 5
    port = free_port()
    server = _redis_server(port)
    limiter = Limiter(limit, 2, f"redis://127.0.0.1:{port}/0", b"s")
    try:
        before = [_admitted(limiter) for _ in range(3)]
        limiter.failed("10.0.0.1", "mb_bad")
        assert before == [True] * 3 and limiter.health() is None  # counted in Redis
        if outage == "stopped":
            _stop(server)
        else:
            server.send_signal(signal.SIGSTOP)
        during = [_admitted(limiter) for _ in range(2 * limit)]
        assert limiter.health() is not None
        # The window's requests, before and during the outage: the limit, never more.
        assert sum(before) + sum(during) == limit, during
        assert during == [True] * (limit - 3) + [False] * (limit + 3)
        assert _admitted(limiter, "key_2")  # another key has its own count
        # The client's failed authentications too: one in Redis, one now, and it is spent.
        limiter.failed("10.0.0.1", "mb_bad")
        with pytest.raises(RateLimited):
            limiter.before_lookup("10.0.0.1", "mb_other")
    finally:
        if outage == "frozen":
            server.send_signal(signal.SIGCONT)
        if server.poll() is None:
            _stop(server)


@pytest.mark.parametrize("where", ["memory", "redis"])
def test_a_process_keeps_the_hits_of_the_last_window_not_every_key_it_saw(monkeypatch, where):
    # A clock of the test's own, for the limiter and the memory it counts in.
    now = [1_000_000.0]
    clock = SimpleNamespace(time=lambda: now[0], monotonic=time.monotonic)
    monkeypatch.setattr(limits.storage.memory, "time", clock)
    monkeypatch.setattr(limitstore, "time", clock)
    monkeypatch.setattr(limitstore, "OWN_WINDOWS", 50)
    secret = secrets.token_bytes(32)
    limiter = Limiter(2, 0, redis_url() if where == "redis" else "memory://", secret)
    try:
        own = limiter.windows._local[0]
        assert isinstance(own, limits.storage.memory.MemoryStorage)
        assert [_admitted(limiter, "key_0") for _ in range(3)] == [True, True, False]
        assert all(_admitted(limiter, f"key_{i}") for i in range(1, 200))
        # Every window is within its minute: each is kept, and key_0 is still spent.
        assert len(own.events) == 200
        assert not _admitted(limiter, "key_0")
        now[0] += 61
        if where == "redis":
            forget(redis_url(), secret)  # Redis's windows expire on its own clock
        # A minute on, the windows whose hits all expired are dropped while new ones come (at
        # the latest when their number doubled): what is kept is the last window's.
        assert all(_admitted(limiter, f"new_{i}") for i in range(200))
        kept = {name.split("/")[2] for name in own.events}
        assert kept <= {f"new_{i}" for i in range(200)}, sorted(kept - {"new_0"})[:5]
        assert [_admitted(limiter, "key_0") for _ in range(3)] == [True, True, False]
    finally:
        if where == "redis":
            forget(redis_url(), secret)
