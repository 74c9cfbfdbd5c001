"""A score means the same in a corpus of 2 and of 2,000 memories: for the held-out questions of
the second paraphrase set, each mode's best memory for the question scores within 0.05 of what
it scores when it is one of just two memories (the packaged MiniLM), for at least 20 questions.

The scores read nothing of the owner's other memories (search/calibration.py): the cosine, read
against the query's level among the fixed background sentences shipped with the package
(search/background.py), and the share of the query's terms a memory holds. BM25's idf and length
normalisation and the query's coverage, which do depend on the other memories, only rank."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_bank.app import state_of
from memory_bank.domain import vector_jobs

REPO = Path(__file__).resolve().parents[2]
MODEL = "local:all-MiniLM-L6-v2"
CORPUS = 2000
PAIRS = 20
TOLERANCE = 0.05

pytestmark = pytest.mark.eval


def texts() -> tuple[list[str], list[str]]:
    """The held-out questions of paraphrase set b, and a corpus of CORPUS memories: the set's
    memories and distractors, then the first paraphrase set's memories, then requests people
    wrote to agents (tests/mcp's phrasing sets) as everyday filler."""
    data = json.loads((REPO / "benchmarks" / "data" / "paraphrase_b.json").read_text())
    questions = [p["question"] for p in data["pairs"] if p["split"] == "holdout"]
    corpus = [p["memory"] for p in data["pairs"]] + [d["content"] for d in data["distractors"]]
    corpus += [
        m for m, _ in json.loads((REPO / "benchmarks" / "data" / "paraphrase.json").read_text())
    ]
    filler: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            filler.append(node.replace("…", "").strip())
        elif isinstance(node, list):
            for each in node:
                walk(each)
        elif isinstance(node, dict):
            for each in node.values():
                walk(each)

    for path in sorted((REPO / "tests" / "mcp").glob("phrasings*.json")):
        walk(json.loads(path.read_text()))
    seen = set(corpus)
    for text in filler:
        if len(corpus) == CORPUS:
            break
        if len(text) > 12 and text not in seen:
            seen.add(text)
            corpus.append(text)
    assert len(corpus) == CORPUS
    return questions, corpus


@pytest.fixture
def minilm(make_service: Callable[..., Any]) -> Any:
    return make_service(embeddings=MODEL, embeddings_worker=False)


def save_all(service: Any, headers: dict[str, str], corpus: list[str]) -> dict[str, str]:
    """Save every text; memory id -> text."""
    ids = {}
    for text in corpus:
        r = service.client.post("/v1/memory", json={"content": text}, headers=headers)
        assert r.status_code == 201, r.text
        ids[r.json()["memory"]["id"]] = text
    state = state_of(service.app)
    while vector_jobs.drain_once(service.db, state.semantic):
        pass
    return ids


def best(service: Any, headers: dict[str, str], q: str, mode: str) -> tuple[str, float] | None:
    r = service.client.get(
        "/v1/memory/search",
        params={"q": q, "mode": mode, "min_score": 0, "limit": 1},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    found = r.json()["results"]
    return (found[0]["content"], found[0]["score"]) if found else None


def test_a_memory_scores_alike_among_2_and_among_2000_in_every_mode(minilm):
    questions, corpus = texts()
    big = minilm.auth("big")
    save_all(minilm, big, corpus)
    # Each question's best memory in each mode, and a user of their own holding just that
    # memory and one other (the next text of the corpus).
    tops: dict[str, dict[str, tuple[str, float]]] = {}
    smalls: dict[str, dict[str, str]] = {}
    for mode in ("lexical", "semantic", "hybrid"):
        tops[mode] = {}
        for question in questions:
            top = best(minilm, big, question, mode)
            if top is not None:
                tops[mode][question] = top
    pairs = {(q, top[0]) for found in tops.values() for q, top in found.items()}
    for n, (question, content) in enumerate(sorted(pairs)):
        other = corpus[(corpus.index(content) + 1) % len(corpus)]
        small = minilm.auth(f"small{n}")
        save_all(minilm, small, [content, other])
        smalls.setdefault(question, {})[content] = small
    for mode, found in tops.items():
        compared = []
        for question, (content, score) in found.items():
            alone = best(minilm, smalls[question][content], question, mode)
            if alone is not None and alone[0] == content:
                compared.append((question, score, alone[1]))
        assert len(compared) >= PAIRS, (mode, compared)
        apart = [(q, a, b) for q, a, b in compared if abs(a - b) > TOLERANCE]
        assert not apart, (mode, apart)
