"""benchmarks/trust_c.py and its data: the set keeps its promises, the figures read them right."""

from __future__ import annotations

import json

import pytest

import trust_c  # a benchmark module (benchmarks/ is on pytest's path)
from memory_bank.search.analyzer import terms


@pytest.mark.parametrize("name", sorted(trust_c.SETS))
def test_a_blind_set_is_whole_and_its_english_pairs_share_what_they_say(name: str) -> None:
    data = json.loads(trust_c.SETS[name].read_text())
    ids = {m["id"] for m in data["memories"]}
    content = {m["id"]: m["content"] for m in data["memories"]}
    assert len(ids) == len(data["memories"]) == 150
    assert len(data["answerable"]) == len(data["unanswerable"]) == 60
    for item in data["answerable"]:
        assert item["answer"] and set(item["answer"]) <= ids
        if item["lang"] == "en":
            # trust_c's pairs share no term; trust_d says of each whether it shares one.
            for answer in item["answer"]:
                shared = set(terms(content[answer])) & set(terms(item["q"], query=True))
                assert bool(shared) == item.get("shares_word", False), item["q"]
    assert {x["kind"] for x in data["unanswerable"]} == {"near", "far"}
    assert {x["split"] for x in data["answerable"] + data["unanswerable"]} == {"tune", "holdout"}


def _asked(kind: str, answer: set[str], ranked: list[tuple[str, float]]) -> trust_c.Asked:
    return trust_c.Asked(
        "q", "en", "tune", kind, answer, [m for m, s in ranked if s >= 0.3], ranked
    )


def test_figures_count_abstention_hits_and_order() -> None:
    asked = [
        _asked("answerable", {"a"}, [("a", 0.9), ("b", 0.2)]),
        _asked("answerable", {"c"}, [("d", 0.25), ("c", 0.1)]),
        _asked("near", set(), [("x", 0.5)]),
        _asked("far", set(), [("y", 0.05)]),
    ]
    default = trust_c.figures(asked, None)
    assert default["abstention"] == 0.5 and default["abstention far"] == 1.0
    assert default["hit@5"] == 0.5
    # With no floor the second question's answer is in its top 5.
    assert trust_c.figures(asked, 0.0)["hit@5"] == 1.0
    # Tops 0.9 and 0.25 against 0.5 and 0.05: three of four pairs ordered right.
    assert default["auc"] == 0.75
