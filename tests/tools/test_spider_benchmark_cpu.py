"""benchmarks/spider.py's CPU accounting: a thread that ends during a batch still counts."""

from __future__ import annotations

import os
import threading
import time

import spider  # a benchmark module (benchmarks/ is on pytest's path)


def _burn(seconds: float) -> None:
    """Keep a core busy for this long."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_cpu_of_a_thread_that_ended_meanwhile_is_counted() -> None:
    pid = os.getpid()
    before = spider._cpu_seconds(pid)
    worker = threading.Thread(target=_burn, args=(0.3,))
    worker.start()
    worker.join()
    # Summed over the threads alive now, the ended thread's 0.3 s would be missing.
    assert spider._cpu_seconds(pid) - before >= 0.2


def test_waits_are_per_thread_and_never_negative() -> None:
    waits = spider._waits(os.getpid())
    assert waits and all(w >= 0 for w in waits.values())
    assert all(key.startswith(f"{os.getpid()}/") for key in waits)
