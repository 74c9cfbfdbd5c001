"""How a filtered search reads the passing memories, on both engines: the passing ids when few
(several tags intersected at once), the same best k whichever way the ranking is restricted,
and SQLite's primary-key index under the name the ranking asks for."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from memory_bank.domain import filters
from memory_bank.search import index
from memory_bank.search.document import postings_of
from memory_bank.store import filters as store_filters
from memory_bank.store import memories as store
from memory_bank.store.owners import Owner


def _plant(service: Any, user: str, tagged: list[list[str]]) -> list[str]:
    """One memory per tag list, about harbours, each with a different count of the word; ids."""

    def work(conn: sa.Connection) -> list[str]:
        made = []
        for i, tags in enumerate(tagged):
            text = f"memory {i} " + "harbour " * (1 + i % 5) + f"and ferry {i % 7}"
            if i in (0, 1, 2):
                text += " under a lantern"
            row = store.insert_memory(
                conn, Owner(user, None, "test"), text, tags, [], postings_of(text, tags, [])
            )
            made.append(row.id)
        return made

    return list(service.db.writing(work))


def test_few_intersects_several_tags_and_says_many_past_the_cap(service):
    tagged = [["a", "b"] if i % 4 == 0 else ["a"] if i % 2 else ["b", "c"] for i in range(40)]
    ids = _plant(service, "alice", tagged)
    _plant(service, "bob", [["a", "b"]] * 5)
    both = {mid for mid, tags in zip(ids, tagged, strict=True) if {"a", "b"} <= set(tags)}
    found = filters.parse(["a", "B"])
    with service.db.reading() as conn:
        assert set(store_filters.few(conn, "alice", found, 100) or []) == both
        assert store_filters.few(conn, "alice", found, len(both)) is not None
        assert store_filters.few(conn, "alice", found, len(both) - 1) is None
        assert store_filters.few(conn, "alice", filters.parse(["c", "a"]), 100) == []


@pytest.mark.parametrize(
    ("few", "budget"),
    [(10_000, index.POSTINGS_BUDGET), (0, index.POSTINGS_BUDGET), (0, 5)],
    ids=["by-id", "by-posting", "passing-set"],
)
def test_a_filtered_search_ranks_the_same_best_k_whichever_way(service, monkeypatch, few, budget):
    tagged = [["keep"] if i % 3 == 0 else ["drop"] for i in range(60)]
    ids = _plant(service, "alice", tagged)
    kept = {mid for mid, tags in zip(ids, tagged, strict=True) if tags == ["keep"]}
    only = filters.parse(["keep"])
    query = "lantern harbour ferry"
    with service.db.reading() as conn:
        everything = index.search(conn, "alice", query, 100)
        best = [mid for mid, _ in everything if mid in kept][:7]
        # few=10,000: the passing ids are listed and exactly those are ranked. few=0: postings
        # are checked one by one; with a budget of 5 postings only `lantern` (in 3 memories,
        # one of which passes) is rare, so fewer than k pass and every term is ranked over
        # the passing set.
        monkeypatch.setattr(filters, "FEW", few)
        monkeypatch.setattr(index, "POSTINGS_BUDGET", budget)
        among = filters.restriction(conn, "alice", only)
        hits = index.search(conn, "alice", query, 7, None, among)
    assert len(best) == 7
    assert [mid for mid, _ in hits] == best


def test_sqlite_names_the_postings_primary_key_as_the_ranking_expects(service):
    with service.db.reading() as conn:
        if conn.dialect.name != "sqlite":
            pytest.skip("an SQLite index name")
        keys = [
            r[1] for r in conn.exec_driver_sql("PRAGMA index_list('memory_term')") if r[3] == "pk"
        ]
    assert keys == [index.SQLITE_TERM_KEY]
