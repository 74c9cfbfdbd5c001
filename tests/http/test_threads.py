"""Handler threads are capped to what the database pool can serve."""

from __future__ import annotations

import anyio.to_thread
from starlette.testclient import TestClient

from memory_bank.app import create_app, state_of
from memory_bank.http.threads import handler_threads


def test_threads_leave_one_connection_for_the_credential_check():
    assert handler_threads(10) == 19
    assert handler_threads(1) == 1


def test_the_running_app_caps_its_handler_threads_to_the_pool(settings):
    app = create_app(settings.replace(db_pool_size=3))
    try:
        with TestClient(app) as client:
            assert client.portal is not None
            tokens = client.portal.call(
                lambda: anyio.to_thread.current_default_thread_limiter().total_tokens
            )
            # The pool: 3 connections plus 3 overflow; AnyIO's own default would be 40.
            assert tokens == 5
            assert client.get("/healthz").status_code == 200
    finally:
        state_of(app).engine.dispose()
