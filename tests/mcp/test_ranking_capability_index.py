"""The capability index (mcp/ranking/capability_index.py): texts as features, spelling, and
how capabilities relate by method and path."""

from __future__ import annotations

import pytest

from memory_bank.mcp import lexicon, manifest
from memory_bank.mcp.ranking import capability_index, phrase


@pytest.fixture(scope="module")
def index() -> capability_index.Index:
    return capability_index.index_of(manifest.load())


def test_one_index_per_manifest(index):
    assert capability_index.index_of(manifest.load()) is index


def test_a_word_is_spelled_as_the_capabilities_spell_it(index):
    assert index.spelled("organization", lexicon.of(("en",))) == ("organisation",)
    assert index.spelled("anderungsverlauf", lexicon.of(("de",))) == ("anderung", "verlauf")
    # A Spanish imperative without its pronoun, in Spanish only.
    assert index.spelled("apuntalo", lexicon.of(("es",))) == ("apunta",)
    assert index.spelled("apuntalo", lexicon.of(("en",))) == ("apuntalo",)


def test_scores_follow_the_words(index):
    scores = index.scores(capability_index.phrase_bag(phrase.parse("delete a memory"), False))
    assert max(scores, key=scores.__getitem__) == "deleteMemoryById"


def test_relations_come_from_methods_and_paths(index):
    by_name = {c.name: c for c in index.capabilities}
    every = index.capabilities
    assert capability_index.keeper_of(by_name["deleteMemoryById"], every) is by_name["postMemory"]
    assert capability_index.undoer_of(by_name["postMemory"], every) is by_name["deleteMemoryById"]
    assert capability_index.editor_of(by_name["postMemory"], every) is by_name["patchMemoryById"]
    revisions = by_name["getMemoryRevisions"]
    assert capability_index.reader_of(by_name["patchMemoryById"], every) is revisions
    assert capability_index.saver_of(by_name["getMemorySearch"], every) is by_name["postMemory"]
    assert capability_index.id_prefixes(by_name["getMemoryById"]) == {"mem"}


def test_an_article_is_never_joined_to_its_noun(index):
    # "anota" is a word of the spec ("Anota que …"); "a nota" is an article and a noun.
    assert "anota" in index.words
    joined = capability_index.respelled(phrase.parse("corrige a nota"), index)
    assert joined.clauses[0].words == ("corrige", "a", "nota")


def test_a_phrase_meets_the_texts_of_its_own_language(index):
    # An operation's texts together, for a phrase's score: those in its language and those in
    # none (title, summary), so a language added to the spec moves no other's scores.
    assert "w:保存" in index.profiles_in(("ja",))["postMemory"]
    assert "w:保存" not in index.profiles_in(("en",))["postMemory"]
    assert index.detect("Lösch das") == ("de",)
