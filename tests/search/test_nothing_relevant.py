"""Nothing when nothing is relevant: a question with no relevant memory answers [] in every mode,
on both engines, with the packaged MiniLM; min_score=0 gives the ranking's top-k; scores are
relevance estimates in [0, 1], best first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory_bank.app import state_of
from memory_bank.domain import vector_jobs

MODEL = "local:all-MiniLM-L6-v2"
MODES = ("lexical", "semantic", "hybrid")
LEO = "Leo has football practice every Saturday"
BOILER = "The boiler service is due in November"


@pytest.fixture
def minilm(make_service: Callable[..., Any]) -> Any:
    """A service with the packaged MiniLM and no background worker (tests drain by hand)."""
    return make_service(embeddings=MODEL, embeddings_worker=False)


def drain(service: Any) -> None:
    """Embed everything queued, as a serve process's worker would."""
    state = state_of(service.app)
    while vector_jobs.drain_once(service.db, state.semantic):
        pass


def save(service: Any, headers: dict[str, str], content: str) -> str:
    r = service.client.post("/v1/memory", json={"content": content}, headers=headers)
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


def search(service: Any, headers: dict[str, str], q: str, **params: Any) -> dict[str, Any]:
    r = service.client.get("/v1/memory/search", params={"q": q, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def two_memories(service: Any) -> tuple[dict[str, str], list[str]]:
    alice = service.auth("alice")
    ids = [save(service, alice, LEO), save(service, alice, BOILER)]
    drain(service)
    return alice, ids


@pytest.mark.parametrize("query", ["quantum chromodynamics lattice", "the of and"])
def test_a_query_with_nothing_relevant_answers_nothing_in_every_mode(minilm, query):
    alice, _ = two_memories(minilm)
    for mode in MODES:
        found = search(minilm, alice, query, mode=mode)
        assert found["mode"] == mode
        assert found["results"] == [], mode


def test_a_word_an_edit_removed_finds_nothing_in_every_mode(minilm):
    alice = minilm.auth("alice")
    mid = save(minilm, alice, "Zorblax is the name of my neighbour's cat")
    save(minilm, alice, BOILER)
    drain(minilm)
    assert [m["id"] for m in search(minilm, alice, "Zorblax", mode="lexical")["results"]] == [mid]
    r = minilm.client.patch(
        f"/v1/memory/{mid}",
        json={"content": "Quillfeather is the name of my neighbour's cat"},
        headers=alice,
    )
    assert r.status_code == 200, r.text
    drain(minilm)
    for mode in MODES:
        assert search(minilm, alice, "Zorblax", mode=mode)["results"] == [], mode


def test_a_relevant_question_is_still_answered(minilm):
    alice, (leo, _) = two_memories(minilm)
    question = "What sport does my son do at the weekend?"
    found = search(minilm, alice, question, mode="hybrid")
    assert [m["id"] for m in found["results"]][:1] == [leo]
    # By meaning alone this paraphrase (no shared word, "my son" for "Leo") scores 0.29 with
    # MiniLM against the floor 0.3: the floor may leave out so weak a match; it ranks first.
    found = search(minilm, alice, question, mode="semantic", min_score=0)
    assert [m["id"] for m in found["results"]][:1] == [leo]
    assert [m["id"] for m in search(minilm, alice, "football practice")["results"]] == [leo]


def test_min_score_zero_answers_the_rankings_top_k_with_scores_in_zero_to_one(minilm):
    alice, ids = two_memories(minilm)
    for mode in ("semantic", "hybrid"):
        found = search(minilm, alice, "quantum chromodynamics lattice", mode=mode, min_score=0)
        assert sorted(m["id"] for m in found["results"]) == sorted(ids), mode
        scores = [m["score"] for m in found["results"]]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert len(search(minilm, alice, "boiler", mode=mode, min_score=0, limit=1)["results"]) == 1


def test_min_score_raises_and_lowers_the_floor(minilm):
    alice, (leo, _) = two_memories(minilm)
    question = "What sport does my son do at the weekend?"
    score = search(minilm, alice, question, min_score=0)["results"][0]["score"]
    assert [m["id"] for m in search(minilm, alice, question, min_score=score)["results"]] == [leo]
    assert search(minilm, alice, question, min_score=min(score + 0.01, 1.0))["results"] == []


@pytest.mark.parametrize("bad", ["-0.1", "1.5", "high"])
def test_a_min_score_outside_zero_to_one_is_a_400_problem(service, bad):
    alice = service.auth("alice")
    r = service.client.get("/v1/memory/search", params={"q": "x", "min_score": bad}, headers=alice)
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/problem+json")
