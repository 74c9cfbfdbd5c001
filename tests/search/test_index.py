"""What a ranking reads of each hit besides its score: the share of the query's terms and their
weight, read by the scoring statements, equal to what a statement of their own reads, on every
path the ranking takes and on both engines."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from memory_bank.domain import filters
from memory_bank.search import index
from memory_bank.search.document import postings_of
from memory_bank.store import memory_writes
from memory_bank.store.owners import Owner

QUERIES = [
    ("harbour ferry lantern", 7),
    ("lantern lantern gull", 5),
    ("ferry 3 harbour tide nothing", 12),
    ("tide", 40),
    ("unwritten words only", 5),
]


def _plant(service: Any, user: str) -> None:
    """Sixty memories about harbours with overlapping words, every third tagged keep."""

    def work(conn: sa.Connection) -> None:
        for i in range(60):
            text = f"memory {i} " + "harbour " * (1 + i % 5) + f"and ferry {i % 7}"
            if i % 11 == 0:
                text += " under a lantern by the gull"
            if i % 4 == 0:
                text += " at high tide"
            tags = ["keep"] if i % 3 == 0 else ["drop"]
            row = postings_of(text, tags, [])
            memory_writes.insert_memory(conn, Owner(user, None, "test"), text, tags, [], row)

    service.db.writing(work)


def _by_statement(conn: sa.Connection, ranking: index.Ranking, ids: list[str]) -> Any:
    """shares() and coverage() as a statement of their own reads them."""
    alone = replace(ranking, held={}, whole=False)
    return index.shares(conn, "alice", alone, ids), index.coverage(conn, "alice", alone)


@pytest.mark.parametrize(
    ("few", "budget", "in_order", "filtered"),
    [
        (0, index.POSTINGS_BUDGET, False, False),
        (0, 6, False, False),
        (10_000, index.POSTINGS_BUDGET, False, True),
        (0, index.POSTINGS_BUDGET, False, True),
        (0, 6, False, True),
        (0, index.POSTINGS_BUDGET, True, True),
        (0, 6, True, True),
    ],
    ids=["plain", "common", "by-id", "by-posting", "passing-set", "score-order", "order-common"],
)
def test_what_the_scoring_reads_of_each_hit_is_what_a_statement_reads(
    service, monkeypatch, few, budget, in_order, filtered
):
    _plant(service, "alice")
    monkeypatch.setattr(filters, "FEW", few)
    monkeypatch.setattr(index, "POSTINGS_BUDGET", budget)
    monkeypatch.setattr(filters, "_broad", lambda *_: True)
    with service.db.reading() as conn:
        among = filters.restriction(conn, "alice", filters.parse(["keep"])) if filtered else None
        if among is not None and not in_order:
            among = replace(among, on=None)
        held_some = 0
        for (query, limit), weighted in [(q, w) for q in QUERIES for w in (False, True)]:
            ranking = index.rank(conn, "alice", query, limit, None, among, weighted=weighted)
            ids = [mid for mid, _ in ranking.hits]
            # Memories the ranking did not return too (a hybrid answer holds such): looked up
            # unless the ranking read every memory holding a query term.
            everyone = [mid for mid, _ in index.search(conn, "alice", "memory", 60)]
            asked = ids + [mid for mid in everyone if mid not in ids][:10]
            shares, covered = _by_statement(conn, ranking, asked)
            assert index.shares(conn, "alice", ranking, asked) == pytest.approx(shares), query
            assert index.coverage(conn, "alice", ranking) == pytest.approx(covered), query
            held_some += sum(1 for mid in ids if shares[mid] > 0)
    assert held_some > 10  # the queries do hit memories that hold their terms


def test_a_ranked_search_reads_the_shares_without_a_statement_of_its_own(service):
    _plant(service, "alice")
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    with service.db.reading() as conn:
        ranking = index.rank(conn, "alice", "harbour lantern", 10, weighted=True)
        sa.event.listen(conn, "before_cursor_execute", count)
        try:
            shares = index.shares(conn, "alice", ranking, [mid for mid, _ in ranking.hits])
            index.coverage(conn, "alice", ranking)
        finally:
            sa.event.remove(conn, "before_cursor_execute", count)
    assert seen == []
    assert max(shares.values()) == 1.0 and min(shares.values()) == 0.5
