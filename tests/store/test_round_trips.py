"""Round trips per operation on a plain MariaDB: what each request sends to the database, counted
at the driver, so an added statement shows here before it shows in a latency graph.

The counts are the table "Round trips per operation" in docs/architecture.md. A round trip is
one command the driver sends and waits on (a batch of statements is one); the ping a pooled
connection gets after sitting idle (store/engine.py) is left out, as it depends on the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pymysql.connections
import pytest

from databases import SPIDER_HEAD_URL

pytestmark = [
    pytest.mark.mariadb,
    pytest.mark.parametrize("database_url", ["mariadb"], indirect=True),
]

COM_PING = 0x0E

# Per operation, through the API: the credential check (1), the reads the operation must make
# before it writes, and its writes with their COMMIT as one batch. A read ends with a ROLLBACK
# of its snapshot; a save also reads its similar-memory hints after it committed.
EXPECTED = {
    "save": 5,  # check, the batch with its COMMIT, two hint reads and their ROLLBACK
    "get": 4,  # check, the memory, its contexts, ROLLBACK
    "search": 6,  # check, scoring (2, which read the query terms each hit holds), rows (2), ROLLBACK
    "list": 4,  # check, the page, its contexts, ROLLBACK
    # check, the memory locked, its contexts, then each write on its own (10) and the COMMIT:
    # the PATCH runs on the main pool (domain/writes.edit), which does not batch; on the batch
    # pool it is 4, as a restore's without the revision read.
    "edit": 4,
    "restore": 5,  # check, the memory locked, its contexts, the revision, the batch
    "delete": 4,  # check, old tombstones, the memory locked, the batch
    "confirm": 3,  # check, the draft locked, the batch
}


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The commands PyMySQL sends from now on, pings left out (one entry per round trip)."""
    sent: list[int] = []
    original = pymysql.connections.Connection._execute_command

    def counted(self: Any, command: int, sql: Any) -> Any:
        if command != COM_PING:
            sent.append(command)
        return original(self, command, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", counted)
    yield sent


def _count(sent: list[int], call: Callable[[], Any]) -> int:
    """How many round trips call() makes."""
    sent.clear()
    call()
    return len(sent)


def test_round_trips_per_operation(make_service, round_trips):
    if SPIDER_HEAD_URL:
        pytest.skip("counts a plain server's round trips (tests/scaleout counts the head's)")
    service = make_service(review_required=True)
    writer = service.auth("alice", scopes=("mcp:read", "mcp:write", "memory:review"))
    agent = service.auth("alice", scopes=("mcp:read", "mcp:write"))
    client = service.client

    def save(content: str) -> str:
        r = client.post("/v1/memory", json={"content": content, "tags": ["t"]}, headers=writer)
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    # Warm: each pool has its connections, and the app has read once what it keeps (whether
    # the database is a Spider head, read on the first search or listing).
    first = save("Acme raised prices in March")
    client.get(f"/v1/memory/{first}", headers=agent)
    client.get("/v1/memory/search", params={"q": "acme"}, headers=agent)
    client.get("/v1/memory", headers=agent)
    measured: dict[str, int] = {}
    measured["save"] = _count(round_trips, lambda: save("Globex is cheaper than Acme"))
    target = save("We moved the invoices to Globex")
    measured["get"] = _count(
        round_trips, lambda: client.get(f"/v1/memory/{target}", headers=writer)
    )
    measured["search"] = _count(
        round_trips, lambda: client.get("/v1/memory/search", params={"q": "acme"}, headers=writer)
    )
    measured["list"] = _count(round_trips, lambda: client.get("/v1/memory", headers=writer))

    def edit() -> None:
        r = client.patch(
            f"/v1/memory/{target}", json={"content": "Invoices go to Globex"}, headers=writer
        )
        assert r.status_code == 200, r.text

    measured["edit"] = _count(round_trips, edit)

    def restore() -> None:
        r = client.post(f"/v1/memory/{target}/revisions/1/restore", headers=writer)
        assert r.status_code == 200, r.text

    measured["restore"] = _count(round_trips, restore)

    def delete() -> None:
        r = client.delete(f"/v1/memory/{target}", headers=writer)
        assert r.status_code == 204, r.text

    measured["delete"] = _count(round_trips, delete)
    drafted = client.post("/v1/memory", json={"content": "Ship on Fridays"}, headers=agent)
    assert drafted.status_code == 202, drafted.text
    draft = drafted.json()["draft"]["id"]

    def confirm() -> None:
        r = client.post(f"/v1/memory/drafts/{draft}/confirm", headers=writer)
        assert r.status_code == 201, r.text

    measured["confirm"] = _count(round_trips, confirm)
    assert measured == EXPECTED
