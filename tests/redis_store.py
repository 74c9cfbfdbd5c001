"""The Redis server that tests count shared rate limits in (importable: conftest is not)."""

from __future__ import annotations

import os

import pytest

REDIS_URL = os.environ.get("MEMORY_BANK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_url() -> str:
    """The test Redis URL; a skip when it does not answer, in CI a failure (.ci/run starts it
    and make test installs the redis extra)."""
    problem = _problem()
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Redis is required in CI but unusable: {problem}")
        pytest.skip(f"Redis unusable: {problem}")
    return REDIS_URL


def forget(url: str, secret: bytes) -> None:
    """Delete what a deployment with this signing secret counted in Redis (its own prefix)."""
    from memory_bank.http.ratelimit import Limiter

    Limiter(1, 1, url, secret).windows.storage.reset()


def _problem() -> str | None:
    """None when Redis answers a PING, else why not."""
    try:
        import redis
    except ImportError:
        return "the redis client is not installed (make install installs the redis extra)"
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    return None
