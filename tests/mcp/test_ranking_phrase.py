"""Reading a phrase's shape (mcp/ranking/phrase.py): clauses, negation, content, ids."""

from __future__ import annotations

from memory_bank.mcp import lexicon
from memory_bank.mcp.ranking import phrase


def test_folding_drops_case_and_accents():
    assert phrase.fold("Lösche die Straße\u2019s") == "losche die strasse's"


def test_a_negated_request_is_a_negated_clause():
    (clause,) = phrase.parse("don't save that").clauses
    assert clause.words == ("do", "not", "save", "that")
    assert clause.negated and not clause.contrast


def test_a_negated_value_is_a_contrast_not_a_refusal():
    clauses = phrase.parse("the 19th, not the 18th").clauses
    assert [(c.negated, c.contrast) for c in clauses] == [(False, False), (False, True)]


def test_what_follows_that_is_content():
    clauses = phrase.parse("remember that I am vegan").clauses
    assert [(c.words, c.content) for c in clauses] == [
        (("remember",), False),
        (("i", "am", "vegan"), True),
    ]


def test_a_question_and_a_polite_request_differ():
    assert phrase.parse("what do you know about me?").question
    assert not phrase.parse("can you save this?").question


def test_an_id_gives_its_kind_and_a_relative_clause_says_which_one():
    assert phrase.parse("delete mem_abc123").ids == {"mem"}
    clauses = phrase.parse("delete the entry that you just created").clauses
    assert [c.relative for c in clauses] == [False, True]


def test_grammar_numbers_and_ids_say_nothing_to_do():
    english = lexicon.of(("en",))
    assert phrase.meaningful("delete", english)
    assert not any(
        phrase.meaningful(w, english) for w in ("the", "not", "42", "mem_abc", phrase.SLOT)
    )


def test_a_tag_asks_of_a_statement_not_of_a_request():
    assert phrase.parse("you don't remember my order, do you?").question
    assert phrase.parse("No te acuerdas de mi pedido, ¿verdad?").question
    assert not phrase.parse("merk dir das, ja?").question


def test_fillers_say_nothing():
    assert not phrase.meaningful("uh", lexicon.of(("en",)))
    assert phrase.parse("euh, qu'est-ce que tu sais sur Bob ?").question


def test_a_script_without_spaces_is_read_in_pairs_of_characters():
    # No dictionary: every word of two characters or more is among the pairs, wherever it is.
    assert phrase.tokens("保存しないで") == ["保存", "存し", "しな", "ない", "いで"]
    assert phrase.tokens("remember 猫") == ["remember", "猫"]
    assert phrase.tokens("メモ、保存して") == ["メモ", "保存", "存し", "して"]


def test_folding_keeps_what_is_part_of_a_letter_elsewhere():
    assert phrase.fold("ガイド") == "ガイド"  # kana's voicing mark is no accent
    assert phrase.fold("Ｍｅｍｏ？") == "memo?"  # full-width forms as ASCII


def test_that_script_s_punctuation_ends_a_clause():
    assert len(phrase.parse("メモを保存して。歯医者は火曜日").clauses) == 2
