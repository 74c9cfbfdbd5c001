"""Deletes and edits under concurrency: retries answer as promised, locks reveal nothing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from memory_bank.auth import Principal
from memory_bank.domain import memories
from memory_bank.errors import MemoryNotFound
from memory_bank.ids import new_id
from memory_bank.store.schema import memory


def _principal(user: str) -> Principal:
    return Principal(user, None, ("mcp:read", "mcp:write"), "test-suite", new_id("key"))


def test_simultaneous_deletes_of_ones_own_memory_all_succeed(service):
    headers = service.auth("alice")
    saved = service.client.post("/v1/memory", json={"content": "delete me"}, headers=headers)
    memory_id = saved.json()["memory"]["id"]
    alice = _principal("alice")
    start = threading.Barrier(8)

    def delete() -> str:
        start.wait()
        try:
            memories.remove(service.db, alice, memory_id)
        except MemoryNotFound:
            return "404"
        return "204"

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: delete(), range(8)))
    # The README promises 204 for a retry of one's own delete: the losers of the race too.
    assert answers == ["204"] * 8
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 0


# SQLite has no row locks: a writer waits for any other writer, whatever id it names, so the
# wait says nothing about an id there. The leak was MariaDB's.
@pytest.mark.mariadb
@pytest.mark.parametrize("database_url", ["mariadb"], indirect=True)
def test_another_tenants_edit_of_a_locked_id_answers_like_a_missing_one(service):
    owner = service.auth("alice")
    other = service.auth("mallory")
    saved = service.client.post("/v1/memory", json={"content": "held"}, headers=owner)
    memory_id = saved.json()["memory"]["id"]
    missing = new_id("mem")
    holder = service.engine.connect()
    holder.begin()
    # The owner's edit in progress: its row locked until it commits.
    holder.execute(sa.select(memory.c.id).where(memory.c.id == memory_id).with_for_update()).first()
    try:
        answers: dict[str, object] = {}

        def attempt() -> None:
            for name, mid in (("held", memory_id), ("missing", missing)):
                url = f"/v1/memory/{mid}"
                patched = service.client.patch(url, json={"content": "x"}, headers=other)
                deleted = service.client.delete(url, headers=other)
                answers[name] = [(r.status_code, r.json()["detail"]) for r in (patched, deleted)]

        worker = threading.Thread(target=attempt)
        worker.start()
        # Answered while the lock is still held (it would otherwise wait for the lock).
        worker.join(timeout=20)
        assert not worker.is_alive(), "the other tenant's request waited for the owner's lock"
    finally:
        holder.rollback()
        holder.close()
    assert answers["held"] == answers["missing"]
    assert [status for status, _ in answers["held"]] == [404, 404]
