"""The ranking's tuned constants are data (mcp/ranking/tuning.json), with the command that
tunes them on the tune halves only."""

from __future__ import annotations

import json

import pytest

from memory_bank.mcp import manifest
from memory_bank.mcp.ranking import blend, capability_index, learned, nearest, rules, tune, tuning

MODULES = {
    "capability_index": capability_index,
    "rules": rules,
    "blend": blend,
    "nearest": nearest,
    "learned": learned,
}


def test_every_constant_is_read_from_the_data_by_the_module_it_names():
    data = json.loads(tuning.DATA.read_text(encoding="utf-8"))
    assert data["command"].startswith("python -m memory_bank.mcp.ranking.tune ")
    for name, entry in data["constants"].items():
        assert getattr(MODULES[entry["read_by"]], name) == entry["value"], name
        assert entry["does"], name


def test_tuning_reads_no_holdout_half():
    sets = tune.tune_sets()
    assert sets and all(e["split"] == "tune" for entries in sets.values() for e in entries)


def test_an_unknown_constant_shows_the_usage(capsys):
    assert tune.main(["NO_SUCH", "1"]) == 2
    assert "constants:" in capsys.readouterr().err


@pytest.mark.eval
def test_measuring_a_value_leaves_the_ranking_as_it_was():
    tools = manifest.load()
    before = rules.rank(tools, "it's the 19th, not the 18th", 3)
    changed = tune.measure("CORRECTION_BONUS", 0.0)
    assert changed["all"] > 0
    assert tuning.value("CORRECTION_BONUS") == rules.CORRECTION_BONUS
    assert rules.rank(tools, "it's the 19th, not the 18th", 3) == before
