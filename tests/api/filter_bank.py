"""Shared by the filter tests: memories planted at chosen times, and the ids a listing or a
search answers."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memory_bank.ids import utcnow
from memory_bank.search.document import postings_of
from memory_bank.store import memory_writes
from memory_bank.store.owners import Owner

NOW = utcnow().replace(microsecond=0)
DAY = timedelta(days=1)


def plant(
    service: Any,
    content: str,
    tags: list[str] | None = None,
    *,
    user: str = "alice",
    source: str = "test-suite",
    created: datetime = NOW,
    updated: datetime | None = None,
) -> str:
    """Store a memory at a chosen time, through the storage layer a save uses (sealed when the
    service seals); its id."""
    tags = tags or []
    row = service.db.writing(
        lambda conn: memory_writes.insert_memory(
            conn,
            Owner(user, None, source),
            content,
            tags,
            [],
            postings_of(content, tags, []),
            created_at=created,
            updated_at=updated or created,
        )
    )
    return str(row.id)


def listed(service: Any, headers: dict[str, str], **params: Any) -> list[str]:
    """Ids of the first page of GET /v1/memory (limit 100) with these parameters."""
    r = service.client.get("/v1/memory", params={"limit": 100, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return [m["id"] for m in r.json()["memories"]]


def found(service: Any, headers: dict[str, str], q: str, **params: Any) -> list[str]:
    """Ids of GET /v1/memory/search (limit 50 unless given) with these parameters."""
    r = service.client.get(
        "/v1/memory/search", params={"q": q, "limit": 50, **params}, headers=headers
    )
    assert r.status_code == 200, r.text
    return [m["id"] for m in r.json()["results"]]
