"""A language is data: mcp/languages/*.json give the closed-class words the ranker reads."""

from __future__ import annotations

import json
import re

from memory_bank.mcp import lexicon

KEYS = {
    "languages",
    "about",
    "words",
    "idioms",
    "contractions",
    "clitics",
    "command_openings",
    "verb_classes",
    "respell_infixes",
    "respell_suffixes",
    "grammar",
}
SOURCE = (lexicon.LANGUAGES.parent / "lexicon.py").read_text(encoding="utf-8")


def _files() -> dict[str, dict]:
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(lexicon.LANGUAGES.glob("*.json"))
    }


def test_every_class_a_file_gives_is_one_the_ranker_reads():
    read = set(re.findall(r'_words\("([A-Z_]+)"\)', SOURCE))
    for name, data in _files().items():
        assert set(data) <= KEYS, name
        assert set(data["words"]) <= read, (name, set(data["words"]) - read)


def test_words_are_written_folded():
    for name, data in _files().items():
        for lines in data["words"].values():
            for word in " ".join(lines).split():
                assert re.fullmatch(r"[a-z0-9'-]+", word), (name, word)


def test_each_language_s_grammar_tells_it_apart():
    codes = [code for data in _files().values() for code in data.get("grammar", {})]
    assert len(codes) == len(set(codes)) and "en" in codes
    assert set(lexicon.GRAMMAR) == set(codes)


def test_the_words_of_every_file_are_read():
    for data in _files().values():
        for line in data["words"].get("NEGATIONS", ()):
            assert set(line.split()) <= lexicon.NEGATIONS
