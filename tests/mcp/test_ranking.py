"""search_capabilities' ranking, measured on how people actually ask (tests/mcp/phrasings*.json).

The tests marked eval measure rank-1 over whole phrasing sets against floors (`make eval`); the
rest check single phrasings and the sets themselves, and run in `make test-fast`."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import yaml
from mcp_helpers import spec_copy

from memory_bank.mcp import manifest, ranking
from memory_bank.mcp.generate import build_manifest
from tool_scripts import gen_mcp

HERE = Path(__file__).parent
RANK_1 = 0.95
# Floors on the held-out half of phrasings_b.json (written before any tuning; its misses were
# looked at during earlier tuning, so it is no longer strictly held out). Measured 82/94 = 0.87,
# non-English 47/53 = 0.89 (before and after issue 31's second pass): one miss below that; the
# figure is printed (docs/mcp.md quotes it).
HOLDOUT_FLOOR, NON_ENGLISH_FLOOR = 0.86, 0.86
# Floors on the held-out half of phrasings_c.json (written and committed before the ranking
# changes of its branch, never tuned on). Measured when this was written: 60/67 = 0.90 overall,
# en 28/34, de 11/11, fr 11/11, es 10/11, non-English 32/33; each floor is one miss below
# that, except overall, where the floor is the measured 60/67 = 0.896 itself (the ranking is
# deterministic; the issue's 0.90 is not reached): the figure is what docs/mcp.md quotes.
# On phrasings_c_probes.json, tuned on: 422/459 = 0.92 when this was written.
PROBE_FLOOR = 0.91
D_PROBE_FLOOR = 0.95
C_FLOORS = {"all": 0.89, "non-English": 0.93, "en": 0.79, "de": 0.90, "fr": 0.90, "es": 0.81}
# Floors on the held-out half of phrasings_d.json (written and committed before the embedding
# blend, never tuned on; lexical ranking, as the suite runs with semantic search off).
# Measured once at the end of issue 31's second pass: 48/55 = 0.87 overall, en 21/25, de
# 10/10, fr 9/10, es 8/10, non-English 27/30, negations 8/10 (47/55, es 7/10 before it); each
# floor is one miss below. Short of the issue's 0.90 overall: reported as measured
# (tests/mcp/test_ranking_semantic.py has the figures with a model). With the learned model's
# blend (issue 43's fourth pass), measured once: 50/55; the overall floor raised.
D_FLOORS = {
    "all": 49 / 55,
    "en": 20 / 25,
    "de": 9 / 10,
    "fr": 8 / 10,
    "es": 7 / 10,
    "non-English": 26 / 30,
    "negations": 7 / 10,
}

# Floors on the held-out half of phrasings_e.json (written by a session that had not read the
# ranking, committed alone before issue 31's third pass, never tuned on: its texts and misses
# were not looked at). Measured once, at the end of that pass: 58/69 = 0.84 overall (0.70
# before it), en 25/30, de 11/13, fr 11/13, es 11/13, non-English 33/39, negations 10/14; each
# floor is one miss below. The issue's 0.90 overall is not reached; its 0.75 for the other
# languages is, and is asserted as such. Measured again once at the end of issue 43's second
# pass (its examples, the blend off): 58/69, en 26/30, de 10/13, fr 11/13, es 11/13; en raised.
E_FLOORS = {
    "all": 57 / 69,
    "en": 25 / 30,
    "de": 10 / 13,
    "fr": 10 / 13,
    "es": 10 / 13,
    "non-English": 32 / 39,
    "negations": 9 / 14,
}
# Floors on the held-out half of phrasings_i.json (written after issue 31's third pass by a
# session that had read only the operations' names and first sentences and the issue's
# section 2, committed alone, measured once and never tuned on): 53/55 = 0.96 overall, en
# 23/25, de, fr, es 10/10 each, negations 12/13; each floor is one miss below, and the issue's
# floors (0.90 overall, 0.75 for the other languages) are asserted as such.
I_FLOORS = {
    "all": 52 / 55,
    "en": 22 / 25,
    "de": 9 / 10,
    "fr": 9 / 10,
    "es": 9 / 10,
    "non-English": 29 / 30,
    "negations": 11 / 13,
}
ISSUE_FLOOR, ISSUE_NON_ENGLISH_FLOOR = 0.90, 0.75
# Floors on the held-out half of phrasings_j.json (issue 43: voices no earlier set had, in six
# languages, written from the tool list before the ranking was read, measured once after the
# tuning on its other half): 34/43 overall, en 10/13, de, fr, es 5/6, it 4/6, pt 5/6, negations
# 12/13 (29/43 before issue 43); each floor is one miss below. With the learned model's blend
# (issue 43's fourth pass), measured once: 36/43; the overall floor raised.
J_FLOORS = {
    "all": 35 / 43,
    "en": 9 / 13,
    "de": 4 / 6,
    "fr": 4 / 6,
    "es": 4 / 6,
    "it": 3 / 6,
    "pt": 4 / 6,
    "negations": 11 / 13,
}
# Floors on the held-out half of phrasings_k.json (written blind from the operations' names,
# summaries and descriptions, in voices no set had: chain of thought, indirect questions,
# transcripts, tickets, slang, corrections stated as facts, terse intents; committed alone,
# measured once untuned: 41/72, en 18/32, de 4/8, fr 3/8, es 4/8, it 6/8, pt 6/8, negations
# 6/13; then tuned on its other half and measured once at the end: 43/72, en 20/32, de 4/8,
# fr 3/8, es 4/8, it 6/8, pt 6/8, negations 7/13); each floor is one miss below. Measured
# again once at the end of issue 43's second pass (the examples it added, the blend off): 44/72,
# en 21/32, de 4/8, fr 3/8, es 4/8, it 6/8, pt 6/8, negations 6/13; floors raised only.
K_FLOORS = {
    "all": 43 / 72,
    "en": 20 / 32,
    "de": 3 / 8,
    "fr": 2 / 8,
    "es": 3 / 8,
    "it": 5 / 8,
    "pt": 5 / 8,
    "negations": 6 / 13,
}
# Floors on the held-out half of phrasings_l.json (written blind from the operations' names,
# summaries and descriptions, in voices no set had: elderly, non-native, typos, code-switching,
# rambling, one word, a manager delegating, hypothetical; committed alone before any
# measurement; its tune half tuned on, its holdout texts and results never looked at). Measured
# once untuned: 38/72; then once at the end of issue 43's second pass (the examples it added,
# the nearest blend off, lexical): 40/72, en 22/32, de 2/8, fr 3/8, es 4/8, it 5/8, pt 4/8,
# negations 7/13; each floor is one miss below (de's is one below its 2/8).
L_FLOORS = {
    "all": 39 / 72,
    "en": 21 / 32,
    "de": 1 / 8,
    "fr": 2 / 8,
    "es": 3 / 8,
    "it": 4 / 8,
    "pt": 3 / 8,
    "negations": 6 / 13,
}
# Floors on the held-out half of phrasings_m.json (written blind from the operations' names,
# summaries and descriptions, in voices no set had: formal, a child, texting shorthand,
# passive, a program addressing the service, question tags, a request after an aside,
# emotional; committed alone before any measurement; its tune half tuned on, its holdout texts
# and results never looked at). Measured once untuned: 46/72 (50/72 with all-mpnet-base-v2);
# then once with the learned model's blend (issue 43): 47/72, en 23/32, de 6/8, fr 4/8, es
# 5/8, it 6/8, pt 3/8, negations 8/14; each floor is one miss below.
M_FLOORS = {
    "all": 46 / 72,
    "en": 22 / 32,
    "de": 5 / 8,
    "fr": 3 / 8,
    "es": 4 / 8,
    "it": 5 / 8,
    "pt": 2 / 8,
    "negations": 7 / 14,
}
# Floors on phrasings_j_nl.json, Dutch held out whole (its words and examples added as data,
# then measured once): 12/16, negations 2/4; one miss below.
NL_FLOORS = {"all": 11 / 16, "negations": 1 / 4}
# Probes written in other voices by sessions that had not read the ranking, each measured once
# untuned and then tuned on (floors against regressions, a few misses below the tuned figure):
# f 149 -> 178, g 166 -> 177, h 143 -> 163 of 200.
VOICE_PROBE_FLOORS = {
    "phrasings_f_probes.json": 175 / 200,
    "phrasings_g_probes.json": 174 / 200,
    "phrasings_h_probes.json": 160 / 200,
}


def _phrasings(name: str) -> dict[str, str]:
    """The phrasings (phrase -> the tool it asks for) ranked today."""
    return json.loads((HERE / name).read_text(encoding="utf-8"))["now"]


@cache
def _with_standins() -> manifest.Manifest:
    """The shipped tools plus stand-ins for operations another branch is adding (an operation
    the spec already has keeps its own text); made once, as the ranking indexes a manifest once."""
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


@pytest.mark.eval
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


@pytest.mark.eval
def test_rank_1_on_the_held_out_half_in_four_languages():
    found = gen_mcp().rank_1("holdout")
    shown = {
        group: f"{good}/{count} = {good / count:.2f}" for group, (good, count) in found.items()
    }
    print("held-out rank-1:", shown)
    assert found["all"][1] == 94 and {"en", "de", "fr", "es"} <= set(found)
    good, count = found["all"]
    assert good / count >= HOLDOUT_FLOOR, shown
    good, count = found["non-English"]
    assert good / count >= NON_ENGLISH_FLOOR, shown


@pytest.mark.eval
def test_rank_1_on_the_third_set_held_out_in_four_languages():
    found = gen_mcp().rank_1("holdout", "phrasings_c.json")
    shown = {
        group: f"{good}/{count} = {good / count:.2f}" for group, (good, count) in found.items()
    }
    print("phrasings_c.json held-out rank-1:", shown)
    assert found["all"][1] == 67
    for group, floor in C_FLOORS.items():
        good, count = found[group]
        assert good / count >= floor, (group, shown)


@pytest.mark.eval
def test_rank_1_on_the_fourth_set_held_out_in_four_languages():
    found = gen_mcp().rank_1("holdout", "phrasings_d.json")
    shown = {
        group: f"{good}/{count} = {good / count:.2f}" for group, (good, count) in found.items()
    }
    print("phrasings_d.json held-out rank-1 (lexical):", shown)
    assert found["all"][1] == 55
    for group, floor in D_FLOORS.items():
        good, count = found[group]
        assert good / count >= floor, (group, shown)


@pytest.mark.eval
def test_rank_1_on_the_fifth_set_held_out_in_four_languages():
    found = gen_mcp().rank_1("holdout", "phrasings_e.json")
    shown = {
        group: f"{good}/{count} = {good / count:.2f}" for group, (good, count) in found.items()
    }
    print("phrasings_e.json held-out rank-1 (lexical):", shown)
    assert found["all"][1] == 69
    for group, floor in E_FLOORS.items():
        good, count = found[group]
        assert good / count >= floor, (group, shown)
    good, count = found["non-English"]
    assert good / count >= ISSUE_NON_ENGLISH_FLOOR, shown


@pytest.mark.eval
@pytest.mark.parametrize(
    ("name", "floors", "count"),
    [
        ("phrasings_m.json", M_FLOORS, 72),
        ("phrasings_l.json", L_FLOORS, 72),
        ("phrasings_k.json", K_FLOORS, 72),
        ("phrasings_j.json", J_FLOORS, 43),
        ("phrasings_j_nl.json", NL_FLOORS, 16),
    ],
)
def test_rank_1_on_the_sets_in_new_voices_and_a_held_out_language(name, floors, count):
    found = gen_mcp().rank_1("holdout", name)
    shown = {
        group: f"{good}/{total} = {good / total:.2f}" for group, (good, total) in found.items()
    }
    print(f"{name} held-out rank-1 (lexical):", shown)
    assert found["all"][1] == count
    for group, floor in floors.items():
        good, total = found[group]
        assert good / total >= floor, (group, shown)


@pytest.mark.eval
def test_rank_1_on_the_sixth_set_held_out_meets_the_issue_floors():
    found = gen_mcp().rank_1("holdout", "phrasings_i.json")
    shown = {
        group: f"{good}/{count} = {good / count:.2f}" for group, (good, count) in found.items()
    }
    print("phrasings_i.json held-out rank-1 (lexical):", shown)
    assert found["all"][1] == 55 and found["non-English"][1] == 30
    for group, floor in I_FLOORS.items():
        good, count = found[group]
        assert good / count >= floor, (group, shown)
    good, count = found["all"]
    assert good / count >= ISSUE_FLOOR, shown
    good, count = found["non-English"]
    assert good / count >= ISSUE_NON_ENGLISH_FLOOR, shown


@pytest.mark.eval
@pytest.mark.parametrize("name", sorted(VOICE_PROBE_FLOORS))
def test_rank_1_on_the_probes_in_other_voices(name):
    tools = manifest.load()
    entries = json.loads((HERE / name).read_text(encoding="utf-8"))["phrasings"]
    assert len(entries) == 200
    good = sum(gen_mcp().phrasing_passes(tools, e["text"], e["expected"]) for e in entries)
    print(f"{name} rank-1: {good}/200")
    assert good / len(entries) >= VOICE_PROBE_FLOORS[name]


@pytest.mark.eval
def test_rank_1_on_the_probes_it_was_tuned_on():
    # Tuned on, so a floor against regressions, not a measure of generalisation.
    tools = manifest.load()
    data = json.loads((HERE / "phrasings_c_probes.json").read_text(encoding="utf-8"))
    entries = data["phrasings"]
    misses = [
        e["text"] for e in entries if not gen_mcp().phrasing_passes(tools, e["text"], e["expected"])
    ]
    print(f"probes rank-1: {len(entries) - len(misses)}/{len(entries)}")
    assert 1 - len(misses) / len(entries) >= PROBE_FLOOR, misses


@pytest.mark.eval
def test_rank_1_on_the_everyday_probes_it_was_tuned_on():
    # phrasings_d_probes.json, tuned on: a floor against regressions (measured 195/203 when
    # this was written; untuned, its batches were 74/91, 71/72 and 37/40).
    tools = manifest.load()
    entries = json.loads((HERE / "phrasings_d_probes.json").read_text(encoding="utf-8"))
    misses = [
        e["text"]
        for e in entries["phrasings"]
        if not gen_mcp().phrasing_passes(tools, e["text"], e["expected"])
    ]
    assert 1 - len(misses) / len(entries["phrasings"]) >= D_PROBE_FLOOR, misses


@pytest.mark.parametrize(
    "name",
    [
        "phrasings_b.json",
        "phrasings_c.json",
        "phrasings_d.json",
        "phrasings_e.json",
        "phrasings_i.json",
    ],
)
def test_the_held_out_half_is_untouched(name):
    # The split was fixed when the set was written: alternate entries per language.
    data = json.loads((HERE / name).read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    for entry in data["phrasings"]:
        number = seen.get(entry["lang"], 0)
        seen[entry["lang"]] = number + 1
        assert entry["split"] == ("tune" if number % 2 == 0 else "holdout"), entry
    # At least a dozen phrasings in each language besides English, every label a capability.
    assert min(seen[lang] for lang in ("de", "fr", "es")) >= 12
    names = {c.name for c in (*manifest.load().capabilities, *manifest.load().elsewhere)}
    assert {e["expected"] for e in data["phrasings"]} <= names | {"none"}


@pytest.mark.parametrize(
    ("phrase", "best"),
    [
        # An auxiliary written onto a word is no "id": a save.
        ("I'd like you to remember that our team lunch is every second Friday", "postMemory"),
        # A question about what was saved reads the list; one in the user's own words searches.
        ("what did I save last week?", "getMemory"),
        ("what time is my dentist appointment?", "getMemorySearch"),
        ("who is the owner of the billing service?", "getMemorySearch"),
        # A new value after a dropped one, or a negated value, is an edit.
        ("scratch the old phone number, the new one is 555-0199", "patchMemoryById"),
        ("oops, I meant Thursday, not Tuesday", "patchMemoryById"),
        # A negation that an example of the spec spells out means what that example does.
        ("on second thought, don't remember that", "deleteMemoryById"),
        # "that memory" is about one memory in view, as an id would be.
        ("what did that memory say originally?", "getMemoryRevisions"),
        ("make that memory say 'weekly' instead of 'daily'", "patchMemoryById"),
        # Words spelled as the spec spells them: Spanish enclitics, compounds, inflections, a
        # word written in two.
        ("Bórralo", "deleteMemoryById"),
        ("Zeig den Änderungsverlauf", "getMemoryRevisions"),
        ("Kannst du dir merken, dass ich Vegetarier bin?", "postMemory"),
        ("show me how this memory looked before", "getMemoryRevisions"),
        ("back up all my memories", "getMemoryExport"),
        # Set phrases that introduce something to keep.
        ("for future reference, our sprint demos happen on Thursdays", "postMemory"),
        # Not to remember any longer is to forget.
        ("I don't want you to remember my salary anymore", "deleteMemoryById"),
        ("Ne retiens plus ça", "deleteMemoryById"),
        # An English clause without its "that" is still the content.
        ("let everyone on my team know we're retiring the v1 API in May", "postMemory"),
        # A wanted clause is the request itself, not content to save; the wanting's negation
        # and "plus" carry over to it.
        ("Quisiera que apuntes que mi coche es azul", "postMemory"),
        ("Il faudrait que tu notes que le train part à 8h", "postMemory"),
        ("Ich möchte, dass du dir merkst, dass ich Linkshänder bin", "postMemory"),
        ("Je ne veux plus que tu retiennes mon numéro", "deleteMemoryById"),
        # A polite question may open with an object pronoun, or in the Sie form.
        ("¿Me podrías guardar que el martes no puedo?", "postMemory"),
        ("Würden Sie notieren, dass ich im Urlaub bin?", "postMemory"),
        # A German imperative with or without its "e", a person ending off a known stem.
        ("Entfern den Eintrag", "deleteMemoryById"),
        ("Berichtig die Notiz: der Kurs ist am Montag", "patchMemoryById"),
        # A question about an edit or a restore of an item asks for its history.
        ("Wer hat diesen Eintrag zuletzt bearbeitet?", "getMemoryRevisions"),
        # A listing of what is about the user's own subject searches for it.
        ("what did you store about my landlord?", "getMemorySearch"),
        ("Zeig, was du über den Umzug gespeichert hast", "getMemorySearch"),
        # A negated clause after a clear request gives a reason, it asks for nothing else.
        ("Lösche die Notiz über den Kurs, das stimmt nicht mehr", "deleteMemoryById"),
    ],
)
def test_structural_rules_rank_the_right_tool_first(phrase, best):
    ranked = ranking.rank(manifest.load(), phrase, limit=3)
    assert ranked and ranked[0][0].name == best, [(c.name, s) for c, s in ranked]


@pytest.mark.parametrize(
    "phrase",
    [
        "off the record: I'm thinking of quitting",
        "this is just between us, no need to remember it",
        "don't put that in memory",
        "you don't need to save any of this",
        "No memorices esto, por favor",
    ],
)
def test_declining_phrases_run_nothing_that_changes_anything(phrase):
    found = ranking.answer(manifest.load(), phrase, 3)
    assert not found.ranked or found.ranked[0][0].method == "GET", found


def test_every_example_in_the_spec_ranks_its_own_operation_first():
    tools = manifest.load()
    for capability in (*tools.capabilities, *tools.elsewhere):
        for example in capability.examples:
            first = ranking.rank(tools, example, 1)
            assert first and first[0][0].name == capability.name, (example, first)
