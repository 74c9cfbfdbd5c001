"""The nearest examples (mcp/ranking/nearest.py): character n-grams of the spec's texts, TF-IDF
weighted by language, and their blend with the rules' scores (off as shipped)."""

from __future__ import annotations

import time

import pytest
from mcp_helpers import spec_copy

from memory_bank.mcp import manifest, ranking
from memory_bank.mcp.generate import build_manifest
from memory_bank.mcp.ranking import capability_index, nearest

# A language no word file has: the spec's examples are all the ranking knows of it.
SWEDISH = {
    ("/v1/memory", "post"): ["kom ihåg att …", "spara det här: …", "glöm inte att …"],
    ("/v1/memory/{id}", "delete"): ["radera den anteckningen", "ta bort minnet om …"],
    ("/v1/memory/search", "get"): ["vad vet du om …", "sök efter …"],
}


def _with_swedish() -> manifest.Manifest:
    """The shipped spec with a few Swedish examples added."""
    spec = spec_copy()
    for (path, method), examples in SWEDISH.items():
        spec["paths"][path][method]["x-mcp-examples"] += examples
    return manifest.parse(build_manifest(spec))


def _first(closeness: dict[str, float]) -> str:
    return max(closeness, key=closeness.__getitem__)


def test_grams_are_each_words_own_folded_and_without_the_placeholder():
    found = nearest.grams("Lösche …")
    assert {" lo", "losc", "che "} <= set(found)
    assert not any("zzslot" in g or g.strip() != g.strip(" ") for g in found)
    # No gram spans two words.
    assert not any(" " in g.strip() for g in nearest.grams("zwei Wörter"))


def test_a_language_known_only_by_spec_examples_ranks_by_them():
    near = nearest.nearest_of(_with_swedish())
    assert _first(near.closeness("kom ihåg att jag är vegetarian")) == "postMemory"
    assert _first(near.closeness("ta bort minnet om tandläkaren")) == "deleteMemoryById"
    assert _first(near.closeness("vad vet du om min hyresvärd")) == "getMemorySearch"


def test_without_those_examples_the_language_ranks_otherwise():
    # The same phrase against the shipped examples: what it found came from the Swedish ones.
    near = nearest.nearest_of(manifest.load())
    assert _first(near.closeness("ta bort minnet om tandläkaren")) != "deleteMemoryById"


def test_examples_added_in_one_language_move_no_other_languages_phrase():
    english = "please forget the note about my old gym"
    texts = [
        ("save", "en", "remember that …"),
        ("delete", "en", "forget the note about …"),
        ("delete", nearest.COMMON, "Delete a memory"),
    ]
    italian = [("save", "it", "ricorda che …"), ("delete", "it", "dimentica la nota su …")]
    base, grown = nearest.Nearest(texts), nearest.Nearest(texts + italian)
    assert grown.closeness(english, ("en",)) == base.closeness(english, ("en",))
    # Read as any language, the Italian texts change how rare each gram is.
    assert grown.closeness(english, ("en", "it")) != base.closeness(english, ("en", "it"))


def test_every_spec_example_is_nearest_its_own_operation():
    tools = manifest.load()
    index = capability_index.index_of(tools)
    near = nearest.nearest_of(tools)
    for capability in (*tools.capabilities, *tools.elsewhere):
        for example in capability.examples:
            closeness = near.closeness(example, index.detect(example))
            assert closeness[capability.name] == max(closeness.values()), example


def test_off_as_shipped_the_rules_rank_alone():
    assert nearest.NEAREST_WEIGHT == 0.0
    tools = manifest.load()
    scores = {"postMemory": 0.9, "getMemorySearch": 0.2}
    assert nearest.blended(tools, "remember that I'm vegan", scores) == scores


def test_blended_the_shape_still_chooses_first(monkeypatch):
    monkeypatch.setattr(nearest, "NEAREST_WEIGHT", 0.7)
    tools = manifest.load()
    # A correction (the words alone say delete) and a listing about the user's own subject.
    assert ranking.rank(tools, "scratch the old phone number, the new one is 555-0199", 1)[0][
        0
    ].name == ("patchMemoryById")
    found = ranking.rank(tools, "Zeig, was du über den Umzug gespeichert hast", 1)
    assert found[0][0].name == "getMemorySearch"
    # A declined save stays declined: nothing is added to nothing.
    assert ranking.answer(tools, "nah, don't save that", 3).ranked == ()


def test_blended_the_examples_reorder_what_the_words_found(monkeypatch):
    tools = manifest.load()
    text = "ta bort minnet om tandläkaren"
    swedish = _with_swedish()
    monkeypatch.setattr(nearest, "NEAREST_WEIGHT", 0.7)
    assert ranking.rank(swedish, text, 1)[0][0].name == "deleteMemoryById"
    scores = nearest.blended(tools, text, {"postMemory": 1.0, "getMemorySearch": 0.5})
    assert set(scores) == {c.name for c in capability_index.index_of(tools).capabilities}


@pytest.mark.slow
def test_the_index_is_made_quickly():
    started = time.perf_counter()
    near = nearest.of_index(capability_index.index_of(manifest.load()))
    near.closeness("remember that I'm vegan", ("en",))
    assert time.perf_counter() - started < 2.0


def test_what_the_user_hands_over_can_count_less_than_the_request(monkeypatch):
    index = capability_index.index_of(manifest.load())
    vocabulary = nearest.nearest_of(manifest.load()).vocabulary
    monkeypatch.setattr(nearest, "NEAREST_CONTENT", 1.0)
    monkeypatch.setattr(nearest, "NEAREST_CLAUSE", 0.5)
    text = 'remember this: the "spare keys" are at reception'
    weights = nearest.request_weights(index, text, vocabulary)
    assert weights["spare"] == weights["keys"] == weights["reception"] == 0.5
    assert "remember" not in weights
    monkeypatch.setattr(nearest, "NEAREST_CLAUSE", 1.0)
    plain = "remember this: the keys are at reception"
    assert nearest.request_weights(index, plain, vocabulary) == {}


def test_a_misspelt_request_word_counts_more_than_the_users_own_subject(monkeypatch):
    tools = manifest.load()
    index, vocabulary = capability_index.index_of(tools), nearest.nearest_of(tools).vocabulary
    monkeypatch.setattr(nearest, "NEAREST_CONTENT", 0.5)
    text = "delte the note about Steuerberaterin Albers"
    weights = nearest.request_weights(index, text, vocabulary)
    # A word the spec uses counts in full; an unknown one at least NEAREST_CONTENT, more the
    # likelier it is a spec word misspelt.
    assert "note" not in weights
    assert 0.5 <= weights["albers"] < weights["delte"] < 1.0
    assert weights["steuerberaterin"] < weights["delte"]
