"""Assertions shared by the contract tests: the problem shape and "nothing changed"."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from memory_bank.store.schema import api_key, memory, memory_context, memory_term, memory_user_stats

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}
TABLES = (memory, memory_context, memory_term, memory_user_stats, api_key)


def assert_problem(
    response: Any, status: int, code: str, field: str | None = None
) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status, code and (if given) field."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc: dict[str, Any] = response.json()
    assert set(doc) >= PROBLEM_KEYS, doc
    assert doc["status"] == status
    assert doc["code"] == code
    assert doc["type"].endswith("/" + code)
    assert isinstance(doc["title"], str) and doc["title"]
    assert isinstance(doc["detail"], str) and doc["detail"]
    if field is not None:
        assert doc.get("field") == field, doc
    # Nothing internal leaks: no tracebacks, no SQL.
    text = response.text.lower()
    for leak in ("traceback", "select ", "insert into", "sqlalchemy", "pymysql"):
        assert leak not in text, doc
    return doc


def row_counts(engine: sa.Engine) -> dict[str, int]:
    """Rows per table, to prove a rejected request changed nothing."""
    with engine.connect() as conn:
        return {
            t.name: int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())
            for t in TABLES
        }


class LogCapture(logging.Handler):
    """Every record any logger emits, as the operator would read it (traceback included)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += logging.Formatter().formatException(record.exc_info)
        self.lines.append(text)

    def assert_never_shows(self, *secrets: str) -> None:
        """None of these strings reached a log line."""
        for line in self.lines:
            for secret in secrets:
                assert secret not in line, f"{secret!r} reached the log: {line[:300]}"


@contextlib.contextmanager
def captured_logs() -> Iterator[LogCapture]:
    """Capture all logging at DEBUG, the access log included (it does not propagate)."""
    from memory_bank.http.logs import ACCESS_LOGGER

    handler = LogCapture()
    root, access = logging.getLogger(), logging.getLogger(ACCESS_LOGGER)
    old_level = root.level
    root.addHandler(handler)
    access.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        access.removeHandler(handler)
        root.setLevel(old_level)
