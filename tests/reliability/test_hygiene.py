"""Keys never logged, structured request logs with ids, CORS only when configured, metrics."""

from __future__ import annotations

import json
import logging
import re

import pytest

from memory_bank.http.logs import ACCESS_LOGGER


class _Capture(logging.Handler):
    """Every record any logger emits, formatted with its arguments and traceback."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += logging.Formatter().formatException(record.exc_info)
        self.lines.append(text)


@pytest.fixture
def captured():
    """Capture all logging at DEBUG, the access log included (it does not propagate)."""
    handler = _Capture()
    root, access = logging.getLogger(), logging.getLogger(ACCESS_LOGGER)
    old_level = root.level
    root.addHandler(handler)
    access.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    access.removeHandler(handler)
    root.setLevel(old_level)


def test_keys_never_reach_the_logs(make_service, captured):
    service = make_service(log_level="debug")
    secret = service.key("alice")
    good = {"Authorization": f"Bearer {secret}"}
    wrong = {"Authorization": f"Bearer {secret[:-4]}AAAA"}
    service.client.post("/v1/memory", json={"content": "logged?"}, headers=good)
    service.client.get("/v1/memory/search?q=logged", headers=good)
    service.client.get("/v1/memory/mem_nothing", headers=good)
    service.client.get("/v1/memory", headers=wrong)
    service.client.post("/v1/memory", content=b"{not json", headers=good)
    service.client.get("/v1/memory", headers={"Authorization": secret})  # no scheme
    assert captured.lines, "nothing was logged at all"
    body = secret.removeprefix("mb_")
    for line in captured.lines:
        assert body[:16] not in line, line
        assert body[-16:] not in line, line


def test_access_lines_are_json_with_request_id_and_no_key(make_service, captured):
    service = make_service()
    headers = service.auth("alice")
    r = service.client.post("/v1/memory", json={"content": "x"}, headers=headers)
    rid = r.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", rid)
    lines = [json.loads(line) for line in captured.lines if line.startswith("{")]
    mine = [line for line in lines if line["request_id"] == rid]
    assert len(mine) == 1
    line = mine[0]
    assert line["method"] == "POST" and line["route"] == "postMemory" and line["status"] == 201
    assert line["duration_ms"] >= 0
    assert line["key_id"].startswith("key_")
    assert "alice" not in json.dumps(line)  # the user id appears only as a hash
    assert re.fullmatch(r"[0-9a-f]{16}", line["user"])


def test_request_id_is_echoed_when_sane_and_replaced_when_not(service):
    r = service.client.get("/healthz", headers={"X-Request-Id": "trace-1234abcd"})
    assert r.headers["x-request-id"] == "trace-1234abcd"
    for bad in ["short", "a" * 65, 'x"y\\nforged line', "has space 12345"]:
        r = service.client.get("/healthz", headers={"X-Request-Id": bad})
        assert r.headers["x-request-id"] != bad
        assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])
    # Errors get one too.
    r = service.client.get("/v1/memory")
    assert r.status_code == 401 and r.headers["x-request-id"]


def test_cors_is_off_by_default(service):
    r = service.client.options(
        "/v1/memory",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in r.headers
    r = service.client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_cors_allows_only_configured_origins(make_service):
    service = make_service(cors_origins="https://app.example, https://other.example/")
    preflight = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    r = service.client.options("/v1/memory", headers=preflight)
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in r.headers["access-control-allow-methods"]
    assert "authorization" in r.headers["access-control-allow-headers"].lower()
    r = service.client.options(
        "/v1/memory", headers={**preflight, "Origin": "https://evil.example"}
    )
    assert r.status_code == 400
    assert "access-control-allow-origin" not in r.headers
    headers = {**service.auth("alice"), "Origin": "https://other.example"}
    r = service.client.get("/v1/memory", headers=headers)
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "https://other.example"
    assert "x-request-id" in r.headers["access-control-expose-headers"].lower()
    r = service.client.get("/v1/memory", headers={**headers, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_metrics_are_off_by_default(service):
    assert service.client.get("/metrics").status_code == 404


def test_metrics_count_requests_latency_and_errors_by_operation(make_service):
    service = make_service(metrics_enabled=True)
    headers = service.auth("alice")
    service.client.post("/v1/memory", json={"content": "m"}, headers=headers)
    service.client.get("/v1/memory/mem_00000000000000000000000000", headers=headers)
    service.client.get("/v1/memory")
    r = service.client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = r.text
    assert re.search(
        r'memory_bank_requests_total\{operation="postMemory",method="POST",status="201",worker="\d+"\} 1',
        text,
    )
    assert re.search(
        r'memory_bank_request_errors_total\{operation="getMemoryById",status_class="4xx",worker="\d+"\} 1',
        text,
    )
    assert re.search(
        r'memory_bank_request_duration_seconds_count\{operation="postMemory",worker="\d+"\} 1', text
    )
    assert re.search(
        r'memory_bank_request_duration_seconds_bucket\{operation="postMemory",worker="\d+",le="\+Inf"\} 1',
        text,
    )
    assert "# TYPE memory_bank_request_duration_seconds histogram" in text
