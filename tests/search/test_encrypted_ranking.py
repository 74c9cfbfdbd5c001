"""Keyed-hash postings rank exactly as plain ones: same memories, same order, same scores."""

from __future__ import annotations

import random

import pytest

from memory_bank.search import index
from memory_bank.store.sealing import crypto

_TEXT = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu paris "
    "meeting budget vendor acme price decision trip planning coffee tea"
)
WORDS = _TEXT.split()
QUERIES = [
    "alpha bravo",
    "paris trip planning",
    "vendor price decision acme",
    "coffee",
    "tea with the budget meeting",
    "zulu yankee xray whiskey victor uniform",
    "nothing matches this",
    "golf hotel india golf",
]


def corpus() -> list[dict[str, object]]:
    """A small fixed set of memories with overlapping words, tags and snippets."""
    rng = random.Random(18)
    docs = []
    for _ in range(80):
        words = rng.choices(WORDS, k=rng.randint(3, 14))
        doc: dict[str, object] = {"content": " ".join(words), "tags": rng.sample(WORDS, 2)}
        if rng.random() < 0.5:
            doc["contexts"] = [{"snippet": " ".join(rng.choices(WORDS, k=6))}]
        docs.append(doc)
    return docs


@pytest.mark.parametrize("budget", [index.POSTINGS_BUDGET, 12])
def test_ranking_is_identical_with_and_without_encryption(make_service, monkeypatch, budget):
    # budget 12 sends the commoner terms down the candidates-only path (index.search).
    monkeypatch.setattr(index, "POSTINGS_BUDGET", budget)
    plain = make_service()
    plain_headers = plain.auth("plain-user")
    docs = corpus()
    for doc in docs:
        assert plain.client.post("/v1/memory", json=doc, headers=plain_headers).status_code == 201
    # The same database, now with encryption on: a new user's rows and postings are sealed.
    sealed = make_service(master_key=crypto.encode_master_key(crypto.new_master_key()))
    sealed_headers = sealed.auth("sealed-user")
    for doc in docs:
        assert sealed.client.post("/v1/memory", json=doc, headers=sealed_headers).status_code == 201
    found = 0
    for query in QUERIES:
        got = {}
        for name, headers in (("plain", plain_headers), ("sealed", sealed_headers)):
            r = sealed.client.get(
                "/v1/memory/search", params={"q": query, "limit": 50}, headers=headers
            )
            assert r.status_code == 200
            got[name] = [(m["content"], m["tags"], m["score"]) for m in r.json()["results"]]
        assert got["plain"] == got["sealed"], query
        found += len(got["sealed"])
    assert found > 50  # the queries do find things
