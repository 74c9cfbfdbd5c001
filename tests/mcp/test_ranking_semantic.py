"""search_capabilities with an embedding model: English phrases ranked by meaning too; every
other phrase, and every phrase without a (working) model, exactly as the words rank it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import pytest

from memory_bank.mcp import capabilities, language, manifest, ranking
from memory_bank.mcp.executor import Executor
from memory_bank.mcp.server import dispatch, semantic_embedder
from polling import wait_for
from tool_scripts import gen_mcp

HERE = Path(__file__).parent
# Rank-1 with all-MiniLM-L6-v2 on the held-out halves, measured at the end of issue 31's
# second pass: phrasings_d.json (written before the blend) 49/55, English 22/25 (48/55 when the
# blend was added); phrasings_c.json 61/67, English 29/34 (that half had been looked at
# before). Each floor is one miss below.
# phrasings_e.json (written before issue 31's third pass, measured once at its end): 59/69,
# English 26/30.
# phrasings_i.json (measured once, after the third pass, never tuned on): 53/55, English 23/25;
# 52/55 by issue 43's second slice, 51/55 after its third added 49 spec examples (one phrasing
# below the figure before it, as the one-phrasing rule allows; the floor follows).
MINILM_FLOORS = {
    "phrasings_i.json": {"all": 51 / 55, "en": 22 / 25},
    "phrasings_e.json": {"all": 58 / 69, "en": 25 / 30},
    "phrasings_d.json": {"all": 48 / 55, "en": 21 / 25},
    "phrasings_c.json": {"all": 60 / 67, "en": 28 / 34},
}


def _shown(found: ranking.Answer) -> dict[str, Any]:
    """An answer as tests/mcp/lexical_ranking.json records it."""
    return {
        "ranked": [[c.name, s] for c, s in found.ranked],
        "declined": found.declined.name if found.declined else None,
        "kept": found.kept,
    }


def _lexical() -> dict[str, Any]:
    """Every phrasing of the sets and its lexical answer (top 5) before the blend existed."""
    data = json.loads((HERE / "lexical_ranking.json").read_text(encoding="utf-8"))
    return dict(data["answers"])


class Hashed:
    """A stand-in model: each word a fixed random direction, a text the sum (no meaning)."""

    model = "hashed"

    def __init__(self) -> None:
        self.texts: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.append(texts)
        rows = []
        for text in texts:
            row = np.zeros(64, dtype=np.float32)
            for word in text.lower().split():
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
                row += np.random.default_rng(seed).standard_normal(64).astype(np.float32)
            rows.append(row / (np.linalg.norm(row) or 1.0))
        return np.stack(rows)


class Failing:
    """A model whose every call fails, as a provider that is down does."""

    model = "failing"

    def embed(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("the embedding server is down")


@pytest.mark.eval
def test_without_a_model_the_ranking_is_the_lexical_one_unchanged():
    # Every phrasing of every set (about 2,000): an evaluation's worth of ranking. The fast tier
    # keeps a seventh of them (the failing model's test below).
    tools = manifest.load()
    answers = _lexical()
    assert len(answers) > 900
    changed = [p for p, want in answers.items() if _shown(ranking.answer(tools, p, 5)) != want]
    assert changed == []


def test_a_failing_model_leaves_the_lexical_ranking():
    tools = manifest.load()
    sample = list(_lexical().items())[::7]
    for phrase, want in sample:
        assert _shown(ranking.answer(tools, phrase, 5, Failing())) == want, phrase


def test_other_languages_are_ranked_by_their_words_alone():
    tools = manifest.load()
    model = Hashed()
    data = json.loads((HERE / "phrasings_d.json").read_text(encoding="utf-8"))
    others = [e["text"] for e in data["phrasings"] if e["lang"] != "en" and "mem_" not in e["text"]]
    lexical = _lexical()
    for phrase in others:
        assert not language.is_english(phrase), phrase
        assert _shown(ranking.answer(tools, phrase, 5, model)) == lexical[phrase], phrase
    # The model was never asked about them (at most about the capabilities' own texts).
    assert all(len(batch) > 1 for batch in model.texts)


def test_english_phrases_are_ranked_by_meaning_too():
    tools = manifest.load()
    model = Hashed()
    phrase = "please hang on to my badge number"
    assert language.is_english(phrase)
    blended = ranking.answer(tools, phrase, 19, model)
    lexical = ranking.answer(tools, phrase, 19)
    assert [len(b) for b in model.texts if phrase in b] == [1]
    assert blended.ranked != lexical.ranked
    # The model reorders what the words found: it adds and removes nothing.
    assert {c.name for c, _ in blended.ranked} == {c.name for c, _ in lexical.ranked}
    # The capabilities' texts were embedded once, for this manifest and model.
    ranking.answer(tools, "list my memories", 3, model)
    assert sum(len(b) > 1 for b in model.texts) == 1
    assert ranking.prepared(tools, model)


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("save this please", True),
        ("open mem_01JG4K2M3N4P5Q6R7S8T9V0W1X", True),
        ("Merk dir, dass ich Vegetarier bin", False),
        ("Oublie ça", False),
        ("Restaure l'ancienne version", False),
        ("¿Qué sabes de mí?", False),
        ("No, es a las tres", False),
        ("no, it's the 19th", True),
    ],
)
def test_the_language_is_read_from_grammar_words_and_letters(text, english):
    assert language.is_english(text) is english


def ranking_manifest() -> Path:
    """The shipped manifest's file."""
    return Path(manifest.__file__).with_name("manifest.json")


class Semantic:
    """What the server reads of the app's semantic search: whether ready, and its model."""

    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.provider = Hashed()


def test_the_server_ranks_by_meaning_only_once_the_model_and_its_vectors_are_ready():
    # A manifest of its own, so no other test has embedded its capabilities yet.
    tools = manifest.parse(json.loads(ranking_manifest().read_text(encoding="utf-8")))
    assert semantic_embedder(None, tools)() is None
    assert semantic_embedder(Semantic(ready=False), tools)() is None
    semantic = Semantic(ready=True)
    current = semantic_embedder(semantic, tools)
    # The first search starts embedding the capabilities and does not wait for it.
    assert current() is None
    wait_for(
        lambda: ranking.prepared(tools, semantic.provider), "the capabilities' vectors", timeout=30
    )
    assert current() is semantic.provider


def test_search_capabilities_passes_the_model_to_the_ranking():
    tools = manifest.load()
    model = Hashed()
    executor = Executor(httpx.AsyncClient(base_url="http://127.0.0.1:9"), lambda: None)
    query = {"query": "what's the name of my dentist?", "limit": 3}

    async def search(embedder: Any) -> Any:
        return await dispatch(tools, executor, capabilities.SEARCH, query, None, embedder)

    with_model = anyio.run(search, model)
    assert not with_model.is_error
    assert any(query["query"] in batch for batch in model.texts)
    without = anyio.run(search, None)
    expected = capabilities.search_results(tools, tools, query["query"], 3)
    assert without.structured_content == expected


def _small_model() -> Any:
    """The small local model semantic search's tests use (all-MiniLM-L6-v2)."""
    from memory_bank.models import local_model

    return local_model.load("all-MiniLM-L6-v2")


@pytest.mark.eval
@pytest.mark.parametrize(
    "name", ["phrasings_i.json", "phrasings_e.json", "phrasings_d.json", "phrasings_c.json"]
)
def test_rank_1_on_the_held_out_halves_with_the_small_model(name):
    model = _small_model()
    gen = gen_mcp()
    blended = gen.rank_1("holdout", name, model)
    lexical = gen.rank_1("holdout", name)
    shown = {g: f"{lexical[g][0]} -> {good}/{count}" for g, (good, count) in blended.items()}
    print(f"{name} held-out rank-1, lexical -> all-MiniLM-L6-v2:", shown)
    for group, floor in MINILM_FLOORS[name].items():
        good, count = blended[group]
        assert good / count >= floor, (group, shown)
    # Other languages are ranked as without the model.
    for group in ("de", "fr", "es"):
        assert blended[group] == lexical[group], (group, shown)


@pytest.mark.eval
@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", "all-mpnet-base-v2"])
def test_the_documented_figures_with_a_model_are_current(model):
    # Loads the model (model tier; the default, mpnet, takes a minute on a busy CPU):
    # docs/mcp.md's block is what the command prints.
    gen = gen_mcp()
    assert _small_model().model.startswith("local:")
    start = gen.model_figures_start(model)
    documented = gen.documented_figures(gen.DOC.read_text(encoding="utf-8"), start)
    assert documented == gen.model_figures(model), f"run gen_mcp.py --figures-with {model}"


@pytest.mark.model
def test_a_running_server_with_semantic_search_ranks_by_meaning_once_ready(tmp_path):
    from starlette.testclient import TestClient

    from memory_bank.app import create_app
    from memory_bank.settings import Settings
    from memory_bank.state import dispose, state_of
    from memory_bank.store import api_keys
    from memory_bank.store.engine import writing

    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/mcp.db", embeddings="local:all-MiniLM-L6-v2"
    )
    app = create_app(settings)
    state = state_of(app)
    scopes = ("mcp:read", "mcp:write")
    key = writing(state.db.engine, lambda c: api_keys.create_key(c, "t", scopes, "f", "o", None))
    headers = {
        "Authorization": f"Bearer {key[0]}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        "Mcp-Method": "tools/call",
    }
    phrase = "please hang on to my badge number"

    def search(client: TestClient) -> list[tuple[str, float]]:
        arguments = {"query": phrase, "limit": 3}
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": capabilities.SEARCH, "arguments": arguments},
        }
        response = client.post("/mcp", json=body, headers=headers)
        found = response.json()["result"]["structuredContent"]["results"]
        return [(r["name"], r["score"]) for r in found]

    tools = manifest.load()
    lexical = [(c.name, s) for c, s in ranking.rank(tools, phrase, 3)]
    # Other tests of this process may have embedded the shipped manifest with this model.
    ranking.VECTORS.clear()
    try:
        with TestClient(app, base_url="http://127.0.0.1:8080") as client:
            assert state.semantic.ready
            # The first search finds the capabilities not embedded yet: lexical, at once.
            assert search(client) == lexical
            wait_for(
                lambda: ranking.prepared(tools, state.semantic.provider),
                "the capabilities' vectors",
                every=0.1,
            )
            expected = ranking.rank(tools, phrase, 3, state.semantic.provider)
            assert expected != ranking.rank(tools, phrase, 3)
            assert search(client) == [(c.name, s) for c, s in expected]
    finally:
        dispose(state)
