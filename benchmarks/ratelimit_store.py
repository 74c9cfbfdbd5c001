"""What the rate limiter costs per authenticated request, counted per process or in Redis.

`python benchmarks/ratelimit_store.py [--redis redis://127.0.0.1:6379/0] [--requests 3000]`

Each request does the limiter's work of one authenticated request with both limits on (the
client's failed-authentication window read before the lookup, then the key's window counted),
over 500 keys, with memory:// and with the Redis URL; it prints p50/p95 in microseconds, and
a Redis PING's for the floor. It deletes what it counted in Redis.
"""

from __future__ import annotations

import argparse
import secrets
import time

from memory_bank.http.ratelimit import Limiter


def percentile(samples: list[float], share: float) -> float:
    """The sample at this share of the sorted samples, in microseconds."""
    return sorted(samples)[int(len(samples) * share)] * 1e6


def main() -> None:
    """Print one line for PING and one per storage."""
    import redis

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    client = redis.Redis.from_url(args.redis)
    pings = []
    for _ in range(args.requests):
        start = time.perf_counter()
        client.ping()
        pings.append(time.perf_counter() - start)
    client.close()
    print(f"redis PING: p50 {percentile(pings, 0.5):.0f} us, p95 {percentile(pings, 0.95):.0f} us")
    for storage in ["memory://", args.redis]:
        # A secret of its own: its own key prefix in Redis, deleted below.
        limiter = Limiter(600, 30, storage, secrets.token_bytes(16))
        samples = []
        for i in range(args.requests):
            key = f"key_{i % 500}"
            start = time.perf_counter()
            limiter.before_lookup("10.0.0.1", "mb_" + key)
            limiter.succeeded(key, "mb_" + key)
            samples.append(time.perf_counter() - start)
        if storage != "memory://":
            limiter.windows.storage.reset()
        p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
        name = storage.split("://")[0]
        print(f"{name}: limiter per request p50 {p50:.0f} us, p95 {p95:.0f} us")


if __name__ == "__main__":
    main()
