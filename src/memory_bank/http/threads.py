"""How many request handlers run at once: no more than the database pool can serve."""

from __future__ import annotations

import anyio.to_thread


def handler_threads(pool_size: int) -> int:
    """Threads for handlers, for a pool of pool_size connections plus as many overflow.

    One connection is left for the credential check, which runs on the event loop: were every
    pooled connection held by a handler, that check would block the loop until one came back.
    (On MySQL/MariaDB the check has a pool of its own, store.engine.make_auth_engine; the spare
    connection matters on SQLite, and the cap is kept the same on both.)
    """
    return max(1, 2 * pool_size - 1)


def limit_handler_threads(pool_size: int) -> None:
    """Size the running event loop's thread pool for handlers (call from inside the loop).

    Connexion runs each synchronous handler in AnyIO's default thread pool, 40 threads. With
    fewer connections than that, a burst would have handlers wait on the pool and time out as
    503s; capped here, the extra requests wait for a thread instead, as they did for the 10
    threads of the WSGI bridge this app used to run behind.
    """
    anyio.to_thread.current_default_thread_limiter().total_tokens = handler_threads(pool_size)
