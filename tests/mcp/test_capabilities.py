"""search_capabilities ranking over the shipped manifest."""

from __future__ import annotations

import pytest

from memory_bank.mcp import capabilities, manifest


@pytest.mark.parametrize(
    ("phrase", "best"),
    [
        ("save a memory", "postMemory"),
        ("remember this", "postMemory"),
        ("Remember that I prefer tabs", "postMemory"),
        ("what do I know about Acme", "getMemorySearch"),
        ("recall what we decided", "getMemorySearch"),
        ("forget that", "deleteMemoryById"),
        ("delete the memory", "deleteMemoryById"),
        ("list everything you remember", "getMemory"),
        ("show the memory with this id", "getMemoryById"),
    ],
)
def test_phrases_rank_the_right_tool_first(phrase, best):
    ranked = capabilities.rank(manifest.load(), phrase, limit=5)
    assert ranked[0][0].name == best, [(c.name, s) for c, s in ranked]
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True)


def test_limit_and_nothing_matching():
    assert len(capabilities.rank(manifest.load(), "memory", limit=2)) == 2
    assert capabilities.rank(manifest.load(), "zebra quantum", limit=5) == []
    assert capabilities.rank(manifest.load(), "the of and", limit=5) == []


def test_results_carry_what_an_agent_needs_to_call():
    found = capabilities.search_results(manifest.load(), "save a memory", 1)["results"]
    assert [r["name"] for r in found] == ["postMemory"]
    assert found[0]["inputSchema"]["required"] == ["content"]
    assert found[0]["annotations"]["readOnlyHint"] is False
