"""The index statistics an edit, a restore and a delete adjust in their batch (no read first)
stay what the postings say, and an edit's first revision is stored once."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from memory_bank.store.schema import memory_revision, memory_term, memory_user_stats

pytestmark = pytest.mark.parametrize("database_url", ["sqlite", "mariadb"], indirect=True)


def _stats(engine: sa.Engine, user: str) -> tuple[int, int]:
    """The user's stored statistics."""
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(memory_user_stats.c.doc_count, memory_user_stats.c.total_len).where(
                memory_user_stats.c.user_id == user
            )
        ).one()
    return int(row[0]), int(row[1])


def _recounted(engine: sa.Engine, user: str) -> tuple[int, int]:
    """The statistics the user's postings give: memories, and the sum of their lengths."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(memory_term.c.memory_id, sa.func.max(memory_term.c.doc_len))
            .where(memory_term.c.user_id == user)
            .group_by(memory_term.c.memory_id)
        ).all()
    return len(rows), sum(int(r[1]) for r in rows)


def test_edits_restores_and_deletes_keep_the_statistics_and_revisions_right(service):
    headers = service.auth("alice")
    client = service.client

    def save(content: str) -> str:
        r = client.post("/v1/memory", json={"content": content}, headers=headers)
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    kept = save("Acme raised prices in March")
    edited = save("Globex is cheaper")
    gone = save("We moved the invoices to Globex last spring")
    for content in ("Globex is much cheaper than Acme for invoices", "Globex"):
        r = client.patch(f"/v1/memory/{edited}", json={"content": content}, headers=headers)
        assert r.status_code == 200, r.text
        assert _stats(service.engine, "alice") == _recounted(service.engine, "alice")
    r = client.post(f"/v1/memory/{edited}/revisions/2/restore", headers=headers)
    assert r.status_code == 200 and r.json()["memory"]["revision"] == 4, r.text
    assert client.delete(f"/v1/memory/{gone}", headers=headers).status_code == 204
    assert _stats(service.engine, "alice") == _recounted(service.engine, "alice")
    assert _stats(service.engine, "alice")[0] == 2
    with service.engine.connect() as conn:
        numbers = conn.execute(
            sa.select(memory_revision.c.revision)
            .where(memory_revision.c.memory_id == edited)
            .order_by(memory_revision.c.revision)
        ).scalars()
        assert list(numbers) == [1, 2, 3, 4]
        assert not conn.execute(
            sa.select(memory_revision.c.id).where(memory_revision.c.memory_id.in_([kept, gone]))
        ).first()
