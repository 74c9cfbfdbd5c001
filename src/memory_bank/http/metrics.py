"""Prometheus metrics at /metrics: requests, latencies and errors by operation (per process)."""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from anyio import to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank.http.scope import expect_operation_id, operation_id

METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# A gauge read at scrape time: name -> (help line, value).
Gauges = Callable[[], dict[str, tuple[str, float]]]
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Registry:
    """Counters and a latency histogram, keyed by operation; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = defaultdict(int)
        self.errors: dict[tuple[str, str], int] = defaultdict(int)
        self.buckets: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
        self.sums: dict[str, float] = defaultdict(float)

    def observe(self, operation: str, method: str, status: int, seconds: float) -> None:
        """Record one finished request."""
        with self._lock:
            self.requests[(operation, method, str(status))] += 1
            if status >= 400:
                self.errors[(operation, f"{status // 100}xx")] += 1
            self.buckets[operation][bisect.bisect_left(BUCKETS, seconds)] += 1
            self.sums[operation] += seconds

    def render(self) -> str:
        """The Prometheus text exposition of everything recorded."""
        pid = str(os.getpid())
        out = [
            "# HELP memory_bank_requests_total Requests handled, by operation, method and status.",
            "# TYPE memory_bank_requests_total counter",
        ]
        with self._lock:
            for (op, method, status), n in sorted(self.requests.items()):
                labels = _labels(operation=op, method=method, status=status, worker=pid)
                out.append(f"memory_bank_requests_total{labels} {n}")
            out += [
                "# HELP memory_bank_request_errors_total Responses with a 4xx or 5xx status.",
                "# TYPE memory_bank_request_errors_total counter",
            ]
            for (op, klass), n in sorted(self.errors.items()):
                labels = _labels(operation=op, status_class=klass, worker=pid)
                out.append(f"memory_bank_request_errors_total{labels} {n}")
            out += [
                "# HELP memory_bank_request_duration_seconds Time to answer, by operation.",
                "# TYPE memory_bank_request_duration_seconds histogram",
            ]
            for op, counts in sorted(self.buckets.items()):
                running = 0
                for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                    running += n
                    le = "+Inf" if bound == float("inf") else repr(bound)
                    labels = _labels(operation=op, worker=pid, le=le)
                    out.append(f"memory_bank_request_duration_seconds_bucket{labels} {running}")
                base = _labels(operation=op, worker=pid)
                out.append(f"memory_bank_request_duration_seconds_sum{base} {self.sums[op]:.6f}")
                out.append(f"memory_bank_request_duration_seconds_count{base} {running}")
        return "\n".join(out) + "\n"


def _render_gauges(gauges: dict[str, tuple[str, float]]) -> str:
    """Gauges in the Prometheus text exposition."""
    out = []
    for name, (text, value) in sorted(gauges.items()):
        out += [f"# HELP {name} {text}", f"# TYPE {name} gauge", f"{name} {value:g}"]
    return "".join(line + "\n" for line in out)


def _labels(**values: str) -> str:
    """A Prometheus label set with escaped values."""
    parts = []
    for name, value in values.items():
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        parts.append(f'{name}="{escaped}"')
    return "{" + ",".join(parts) + "}"


class MetricsMiddleware:
    """Time every request and serve the registry at GET /metrics."""

    def __init__(self, app: ASGIApp, gauges: Gauges | None = None) -> None:
        self.app = app
        self.registry = Registry()
        self.gauges = gauges

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") == METRICS_PATH and scope.get("method") in {"GET", "HEAD"}:
            await self._serve(send)
            return
        expect_operation_id(scope)
        started = time.perf_counter()
        status = 500

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            elapsed = time.perf_counter() - started
            self.registry.observe(operation_id(scope), str(scope.get("method")), status, elapsed)

    async def _serve(self, send: Send) -> None:
        """Answer a scrape."""
        text = self.registry.render()
        if self.gauges is not None:
            # Read at scrape time, off the event loop (a gauge may ask the database).
            text += _render_gauges(await to_thread.run_sync(self.gauges))
        body = text.encode()
        headers = [(b"content-type", CONTENT_TYPE.encode()), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
