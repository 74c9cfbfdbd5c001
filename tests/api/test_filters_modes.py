"""Filters in every search mode (lexical, semantic, hybrid), plain and encrypted at rest, on both
engines, with the packaged local model: the best k that pass, never fewer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory_bank.app import state_of
from memory_bank.domain import vector_jobs
from memory_bank.ids import iso, utcnow
from memory_bank.store.sealing import crypto

from .filter_bank import plant

NOW = utcnow().replace(microsecond=0)
DAY = timedelta(days=1)
# (content, tags, days ago, source): pets and travel, over a month, from two integrations.
MEMORIES = [
    ("Our dog Biscuit needs his vaccination in March", ["pets", "health"], 30, "phone"),
    ("The cat only eats the salmon flavoured food", ["pets"], 25, "ci"),
    ("Book the vet for the hamster's teeth", ["Pets", "health"], 20, "phone"),
    ("Biscuit the dog hates thunderstorms", ["pets"], 15, "ci"),
    ("The goldfish tank filter must be cleaned monthly", ["pets", "home"], 10, "phone"),
    ("Flights to Lisbon leave at 7am on Friday", ["travel"], 9, "phone"),
    ("Hotel in Porto is booked for three nights", ["travel"], 8, "ci"),
    ("Pack the rain jacket for the Scotland trip", ["travel"], 7, "phone"),
    ("The parrot learned to say hello", ["pets"], 5, "ci"),
    ("Walk the dog before the morning standup", ["pets", "routine"], 2, "phone"),
    ("Passport renewal takes six weeks", ["travel", "admin"], 1, "ci"),
    ("The rabbit hutch needs new straw", ["pets", "home"], 0, "phone"),
]
# Words of some memories (lexical) and a meaning (semantic): every mode has candidates.
QUERY = "looking after our animals: the dog, the cat, the vet, the hotel, a jacket"


@pytest.fixture(params=["plain", "encrypted"])
def semantic(request: pytest.FixtureRequest, make_service: Any) -> Any:
    """A service with the local model (plain or encrypted at rest) holding MEMORIES, embedded."""
    extra = (
        {"master_key": crypto.encode_master_key(crypto.new_master_key())}
        if request.param == "encrypted"
        else {}
    )
    service = make_service(embeddings="local", embeddings_worker=False, **extra)
    service.ids = [
        plant(service, content, tags, created=NOW - days * DAY, source=source)
        for content, tags, days, source in MEMORIES
    ]
    drain(service)
    return service


def drain(service: Any) -> None:
    """Embed everything queued, as a serve process's worker would."""
    state = state_of(service.app)
    while vector_jobs.drain_once(service.db, state.semantic):
        pass


def search(service: Any, headers: dict[str, str], mode: str, **params: Any) -> list[dict[str, Any]]:
    """GET /v1/memory/search in one mode, asserting that mode answered."""
    r = service.client.get(
        "/v1/memory/search",
        params={"q": QUERY, "mode": mode, "min_score": 0, **params},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    assert r.json()["mode"] == mode
    return list(r.json()["results"])


FILTERS = [
    ({"tag": "PETS", "created_after": iso(NOW - 12 * DAY)}, {4, 8, 9, 11}),
    ({"tag": ["pets", "health"]}, {0, 2}),
    ({"source": "ci", "created_before": iso(NOW - 4 * DAY)}, {1, 3, 6, 8}),
    ({"tag": "travel", "source": "phone"}, {5, 7}),
]


@pytest.mark.parametrize(("params", "passing"), FILTERS)
@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_every_mode_returns_the_best_k_that_pass(semantic, mode, params, passing):
    headers = semantic.auth("alice")
    want = {semantic.ids[i] for i in passing}
    everything = search(semantic, headers, mode, limit=50)
    k = 2
    got = search(semantic, headers, mode, limit=k, **params)
    assert {m["id"] for m in got} <= want
    if mode == "lexical":
        # Only memories holding a query word can match lexically: the best k of those, in BM25's
        # order. A score is capped at the one ranked above it (search/calibration.descending),
        # so with fewer ranked above it may only be higher.
        best = [m for m in everything if m["id"] in want][:k]
        assert [m["id"] for m in got] == [m["id"] for m in best]
        assert all(g["score"] >= b["score"] for g, b in zip(got, best, strict=True))
        assert got  # each case has a passing memory with a query word
        return
    # By meaning every memory with a vector is a candidate: k results, because k pass.
    assert len(got) == k
    if mode == "semantic":
        # A cosine does not depend on what else is ranked: the unfiltered order, filtered.
        best = [(m["id"], m["score"]) for m in everything if m["id"] in want][:k]
        assert [(m["id"], m["score"]) for m in got] == best
    all_passing = search(semantic, headers, mode, limit=50, **params)
    assert {m["id"] for m in all_passing} == want


def test_dense_filters_follow_edits(semantic):
    headers = semantic.auth("alice")
    parrot = semantic.ids[8]
    patched = semantic.client.patch(
        f"/v1/memory/{parrot}",
        json={"tags": ["travel"]},
        headers={**headers, "Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    # Until it is embedded again the edited memory has no vector: semantic mode cannot find
    # it, and the filter sees its new tag and update time once it does.
    assert parrot not in {m["id"] for m in search(semantic, headers, "semantic", tag="pets")}
    drain(semantic)
    since = {"updated_after": iso(NOW + timedelta(milliseconds=1))}
    assert parrot in {m["id"] for m in search(semantic, headers, "semantic", tag="travel")}
    assert parrot not in {m["id"] for m in search(semantic, headers, "semantic", tag="pets")}
    assert [m["id"] for m in search(semantic, headers, "semantic", **since)] == [parrot]
    assert [m["id"] for m in search(semantic, headers, "hybrid", **since)] == [parrot]
