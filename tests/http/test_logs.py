"""Access lines and metrics from a real `memory-bank serve` (uvicorn), not only in-process."""

from __future__ import annotations

import json
import re

import httpx

from live_server import start_server, stop_server


def test_a_real_server_logs_each_request_once_by_operation_and_without_its_query(tmp_path):
    # Under uvicorn the ASGI scope carries no "extensions" until someone adds them; the
    # operation Connexion routed to must still reach the access line and the metrics (the
    # in-process test client hides this: its scope always has them).
    server = start_server(
        f"sqlite:///{tmp_path / 'logs.db'}",
        extra_env={"MEMORY_BANK_LOG_LEVEL": "info", "MEMORY_BANK_METRICS_ENABLED": "true"},
    )
    try:
        key = re.search(r"(mb_[A-Za-z0-9_-]{40,})", server.first_output)
        assert key, server.first_output
        auth = {"Authorization": f"Bearer {key.group(1)}"}
        with httpx.Client(base_url=server.base_url, headers=auth, timeout=30) as http:
            assert http.post("/v1/memory", json={"content": "Acme pricing"}).status_code == 201
            found = http.get("/v1/memory/search", params={"q": "zebra-secret-plans"})
            assert found.status_code == 200
            metrics = http.get("/metrics").text
    finally:
        server.process.terminate()
        server.process.wait(timeout=15)
        output = (server.process.stdout.read() or "") if server.process.stdout else ""
        stop_server(server)
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    routes = [(line["method"], line["path"], line["route"]) for line in lines]
    assert ("POST", "/v1/memory", "postMemory") in routes, routes
    assert ("GET", "/v1/memory/search", "getMemorySearch") in routes, routes
    # The search words are the user's content: no log line may carry them (uvicorn's own
    # access line would, with the query string), and each request is logged once.
    assert "zebra-secret-plans" not in output
    assert len([r for r in routes if r[2] == "getMemorySearch"]) == 1
    assert re.search(r'memory_bank_requests_total\{operation="getMemorySearch",', metrics), metrics
