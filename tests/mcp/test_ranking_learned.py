"""The learned model (mcp/ranking/learned.py, fitted by learn.py on the spec's texts alone) and
its blend with the rules' scores."""

from __future__ import annotations

import math

import pytest
from mcp_helpers import spec_copy

from memory_bank.mcp import manifest, ranking
from memory_bank.mcp.generate import build_manifest
from memory_bank.mcp.ranking import learn, learned, rules

# A language no word file has, in a toy spec of three capabilities.
SWEDISH = [
    ("save", "kom ihåg att jag är vegetarian"),
    ("save", "spara det här: mötet är på tisdag"),
    ("save", "glöm inte att ringa tandläkaren"),
    ("delete", "radera den anteckningen"),
    ("delete", "ta bort minnet om hyresvärden"),
    ("search", "vad vet du om min hyresvärd"),
    ("search", "sök efter anteckningar om semestern"),
]


def _first(probabilities: dict[str, float]) -> str:
    return max(probabilities, key=probabilities.__getitem__)


def test_the_shipped_model_was_fitted_on_the_shipped_specs_texts():
    # Fails after an example is added to the spec until `python -m
    # memory_bank.mcp.ranking.learn` is run again.
    model = learned.load()
    assert model is not None
    texts = learned.training_texts(ranking.capability_index.index_of(manifest.load()))
    assert model.digest == learned.texts_digest(texts)
    served = learned.model_for(manifest.load())
    assert served is not None and served.digest == model.digest


def test_a_fitted_model_learns_a_language_from_its_examples_alone():
    model = learn.fit(SWEDISH, steps=200)
    assert learn.accuracy(model, SWEDISH) == 1.0
    # Phrases it never saw, in words the examples share n-grams with.
    assert _first(model.probabilities("kom ihåg att min bror heter Olle")) == "save"
    assert _first(model.probabilities("radera minnet om bilen")) == "delete"
    assert _first(model.probabilities("vad vet du om semestern")) == "search"


def test_probabilities_sum_to_one_and_unknown_words_leave_the_bias():
    model = learn.fit(SWEDISH, steps=50)
    p = model.probabilities("zzz qqq")
    assert math.isclose(sum(p.values()), 1.0, rel_tol=1e-5)
    bias = model.bias - model.bias.max()
    expected = {n: math.exp(b) for n, b in zip(model.names, bias, strict=True)}
    total = sum(expected.values())
    assert all(math.isclose(p[n], expected[n] / total, rel_tol=1e-4) for n in model.names)


def test_a_saved_model_loads_with_the_same_answers(tmp_path):
    model = learn.fit(SWEDISH, steps=200)
    learned.save(model, tmp_path / "m.npz")
    again = learned.load(tmp_path / "m.npz")
    assert again is not None and again.digest == model.digest and again.names == model.names
    for _, text in SWEDISH:
        a, b = model.probabilities(text), again.probabilities(text)
        # Weights are kept as float16: the same order, nearly the same numbers.
        assert _first(a) == _first(b)
        assert all(abs(a[n] - b[n]) < 0.01 for n in a)
    assert learned.load(tmp_path / "none.npz") is None


def test_a_manifest_the_model_was_not_fitted_on_is_ranked_by_the_rules_alone(monkeypatch):
    spec = spec_copy()
    spec["paths"]["/v1/memory"]["post"]["x-mcp-examples"] += ["kom ihåg att …"]
    changed = manifest.parse(build_manifest(spec))
    assert learned.model_for(changed) is None
    monkeypatch.setattr(learned, "LEARNED_WEIGHT", 0.45)
    scores = {"postMemory": 1.0, "getMemorySearch": 0.5}
    assert learned.blended(changed, "spara det här", scores) == scores


def test_the_blend_adds_the_models_belief_on_the_rules_scale(monkeypatch):
    tools = manifest.load()
    monkeypatch.setattr(learned, "LEARNED_WEIGHT", 0.5)
    query = "please wipe that note"
    p = learned.model_for(tools).probabilities(query)  # type: ignore[union-attr]
    scores = {"postMemory": 0.8, "deleteMemoryById": 0.6}
    out = learned.blended(tools, query, scores)
    assert math.isclose(out["deleteMemoryById"], 0.5 * 0.6 + 0.5 * 0.8 * p["deleteMemoryById"])
    # A capability the rules gave nothing gets the model's share alone.
    assert math.isclose(out["getMemorySearch"], 0.5 * 0.8 * p["getMemorySearch"])
    # Nothing is added where the rules found nothing, nor with the weight 0.
    assert learned.blended(tools, query, {"postMemory": 0.0}) == {"postMemory": 0.0}
    monkeypatch.setattr(learned, "LEARNED_WEIGHT", 0.0)
    assert learned.blended(tools, query, scores) == scores


@pytest.mark.parametrize(
    "query",
    ["it's the 19th, not the 18th", "nah don't save that", "what did I say about Acme?"],
)
def test_what_the_shape_chose_stays_first(query, monkeypatch):
    tools = manifest.load()
    monkeypatch.setattr(learned, "LEARNED_WEIGHT", 0.0)
    alone = rules.answer(tools, query, 3)
    monkeypatch.setattr(learned, "LEARNED_WEIGHT", 0.9)
    blended = rules.answer(tools, query, 3)
    if alone.shaped:
        assert blended.ranked[0][0].name == alone.ranked[0][0].name
    assert blended.declined == alone.declined
