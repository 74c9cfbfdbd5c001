"""A language is data: mcp/languages/*.json give the closed-class words the ranker reads, and
a phrase is read with those of the language it is in."""

from __future__ import annotations

import json
import re

from memory_bank.mcp import language, lexicon, manifest
from memory_bank.mcp.ranking import capability_index, phrase

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
    "letters",
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
                assert phrase.fold(word) == word, (name, word)


def test_each_language_s_grammar_tells_it_apart():
    codes = [code for data in _files().values() for code in data.get("grammar", {})]
    assert len(codes) == len(set(codes)) and "en" in codes
    assert set(lexicon.GRAMMAR) == set(codes)


def test_the_words_of_every_file_are_read():
    for data in _files().values():
        for line in data["words"].get("NEGATIONS", ()):
            assert set(line.split()) <= lexicon.of().NEGATIONS


def test_a_phrase_is_read_with_the_words_of_its_own_language():
    # Portuguese "no" is "in the", German "ne" is "eine": neither negates in its language,
    # though both do when every language's words are read at once.
    for text, code in [("Salva isso no meu perfil", "pt"), ("Kannst du dir ne Notiz machen", "de")]:
        found = phrase.parse(text)
        assert found.languages == (code,)
        assert not any(clause.negated for clause in found.clauses)
        assert any(clause.negated for clause in phrase.parse(text, lexicon.CODES).clauses)


def test_a_language_is_told_by_its_words_and_letters():
    def detect(text: str) -> tuple[str, ...]:
        return language.detect(phrase.tokens(text), text)

    assert detect("don't save that") == ("en",)
    assert detect("Lösch das") == ("de",)
    assert detect("¿Qué sabes de mí?") == ("es",)
    assert detect("mem_01JG4K2M3N4P5Q6R7S8T9V0W2A") == lexicon.CODES  # no evidence: any


def test_a_phrase_in_another_alphabet_is_no_english_one():
    assert not language.is_english("メモを保存して")
    assert language.is_english("save this")


def test_the_spec_s_examples_tell_a_language_too():
    index = capability_index.index_of(manifest.load())
    text = "Recuérdame que …"
    # "que" is Spanish, French and Portuguese; "recuerdame" is in no word list, but the
    # Spanish examples spell it.
    assert len(phrase.parse(text).languages) > 1
    assert index.parse(text).languages == ("es",)
