"""The spec's words (mcp/ranking/vocabulary.py): how like one of them a phrase's word is, by
character 3-grams."""

from __future__ import annotations

from memory_bank.mcp.ranking import vocabulary

WORDS = vocabulary.Vocabulary(["Delete a memory", "check the server", "remember that …"])


def test_trigrams_mark_a_words_start_and_end():
    assert vocabulary.trigrams("dog") == {" do", "dog", "og "}


def test_the_placeholder_is_no_word():
    words = {"delete", "a", "memory", "check", "the", "server", "remember", "that"}
    assert set(WORDS.grams) == words


def test_a_spec_word_is_itself_and_a_misspelt_one_nearly():
    assert WORDS.likeness("delete") == 1.0
    assert 0.5 < WORDS.likeness("delte") < 1.0
    assert WORDS.likeness("chek") > WORDS.likeness("cheese")


def test_the_users_own_subject_is_like_none():
    assert WORDS.likeness("dentist") < WORDS.likeness("delte")
    assert WORDS.likeness("zyx") == 0.0
