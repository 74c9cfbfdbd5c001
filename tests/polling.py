"""Waiting for something another thread or process does: one loop for the whole suite."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(
    check: Callable[[], T],
    *,
    timeout: float = 60.0,
    every: float = 0.05,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T | None:
    """check()'s first truthy value, asked every `every` seconds; when `timeout` seconds pass
    first, its last value (None if it last raised one of `ignoring`, counted as not yet).

    The timeout bounds a wait for something that normally comes at once: it is no measurement,
    and a slow machine only waits longer."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found: T | None = check()
        except ignoring:
            found = None
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(every)


def wait_for(
    check: Callable[[], T],
    what: str,
    *,
    timeout: float = 60.0,
    every: float = 0.05,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """check()'s first truthy value; the test fails, saying what it waited for, when `timeout`
    seconds pass first."""
    found = poll(check, timeout=timeout, every=every, ignoring=ignoring)
    assert found, f"waited {timeout:g} s for {what}"
    return found
