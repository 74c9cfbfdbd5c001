"""The rules (mcp/ranking/rules.py): what a phrase's shape does to the scores."""

from __future__ import annotations

import pytest

from memory_bank.mcp import manifest
from memory_bank.mcp.ranking import rules


def _answer(text: str) -> rules.Answer:
    return rules.answer(manifest.load(), text, 3)


def test_a_declined_save_gets_nothing_and_says_what_it_declines():
    found = _answer("never mind, don't save that")
    assert found.ranked == ()
    assert found.declined is not None and found.declined.name == "postMemory"


def test_a_negated_forget_is_kept():
    found = _answer("don't forget my badge is 4471")
    assert found.kept and found.ranked[0][0].name == "postMemory"


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("it's the 19th, not the 18th", "patchMemoryById"),  # a contrast is a correction
        ("ok, 15 h, pas 14 h", "patchMemoryById"),  # a contrast of nothing but values, too
        ("zebra quantum", "getMemorySearch"),  # no action named: the fallback
        ("user said: remember I'm vegan", "postMemory"),  # a frame reports the request
    ],
)
def test_the_shape_decides(text, first):
    assert _answer(text).ranked[0][0].name == first


def test_rank_is_the_answer_s_ranking():
    tools = manifest.load()
    assert rules.rank(tools, "list my memories", 2) == list(
        rules.answer(tools, "list my memories", 2).ranked
    )


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # A correction of stored content is an edit, stated as a fact as well as asked for.
        ("la dirección que guardaste ya no es esa, ahora es Calle Mayor 3", "patchMemoryById"),
        ("my office you saved is not on floor 2, it is now floor 5", "patchMemoryById"),
        # A negative question asks: it declines nothing.
        ("you don't remember my sister's name, do you?", "getMemorySearch"),
        # An indirect question asks too.
        ("I was wondering if you kept my dentist's name", "getMemorySearch"),
        # A tag after a request leaves it a request.
        ("merk dir das, ja?", "postMemory"),
        # A negated action that is no save is no decline: "don't let me forget" keeps.
        ("non farmi dimenticare che la palestra chiude alle 22", "postMemory"),
        # An agent's stacked frames report the request after them.
        ("Plan: step 2 -> update stored fact: city is Lyon", "patchMemoryById"),
    ],
)
def test_voices_read_like_a_person_s_request(text, first):
    found = _answer(text)
    assert found.ranked and found.ranked[0][0].name == first, found


def test_only_a_declined_save_is_answered_with_nothing():
    assert _answer("never mind, don't save that").ranked == ()
    assert _answer("you don't remember my sister's name, do you?").declined is None


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # An agent's terse intent: its action before the colon, its subject after it.
        ("recall: the Q3 budget", "getMemorySearch"),
        ("persist: prefers aisle seats", "postMemory"),
        # A refusal followed by another request refuses only.
        ("no wait, not delete it, just tell me what you have about the router", "getMemorySearch"),
        # ... and so does one run into it without punctuation, as speech is transcribed.
        (
            "no wait not delete it um just tell me what you had about the wifi router",
            "getMemorySearch",
        ),
        ("don't let me forget the lease renewal is due 1 March", "postMemory"),
        # The user's own subject after "about" costs the request's words nothing.
        ("delete the thing about my old gym membership", "deleteMemoryById"),
    ],
)
def test_voices_read_like_a_request(text, first):
    assert _answer(text).ranked[0][0].name == first


def test_a_reason_after_a_declined_save_asks_for_nothing():
    found = _answer("nah, no need to save it, I was only thinking aloud")
    assert found.ranked == () and found.declined is not None


def test_a_polite_condition_declines_nothing():
    # "If you don't mind" is a set phrase (mcp/languages/): no refusal, so no empty answer.
    found = _answer("If you don't mind, I'd like to read the one you just found in full")
    assert found.ranked and found.declined is None
