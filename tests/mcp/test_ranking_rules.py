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
