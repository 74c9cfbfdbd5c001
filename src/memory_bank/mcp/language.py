"""Which language a phrase is in, from its closed-class words and letters alone
(deterministic): `detect` chooses the words a phrase is read with, `is_english` whether the
embedding model is asked.

A phrase is in the language whose words (mcp/languages/) it uses most, a word several
languages share counting for each a share; a phrase that no language's words tell apart is in
any of those tied (every language when it has no such word).

search_capabilities asks the embedding model only about English phrases: the default model is
English and ranks German, French and Spanish phrases worse than the lexical ranking does.
A phrase counts as English when it has more English grammar words than German, French or
Spanish ones (their letters with accents, "¿" and "¡" counting for the others); a phrase with
no evidence either way (a bare id, "open mem_...") counts as English.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction

from memory_bank.mcp import lexicon

# Grammar words that are English, and those of each other language (mcp/languages/).
ENGLISH = lexicon.GRAMMAR["en"]
OTHERS = {code: words for code, words in lexicon.GRAMMAR.items() if code != "en"}
# Words spelled alike in English and another of them ("no", "me"): evidence for neither.
SHARED = frozenset(w for words in OTHERS.values() for w in words) & ENGLISH
_FOREIGN_MARKS = re.compile("[\u00bf\u00a1\u00df]")
# The last code point of the Latin letters (Latin Extended-B).
_LATIN_END = 0x024F
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# A French elision ("l'ancienne", "qu'il"); English clitics come after the word ("it's").
_ELISION = re.compile(r"^(?:" + "|".join(sorted(lexicon.of().ELISIONS)) + r")'[a-z]{2,}$")


class Evidence:
    """What tells languages apart: each language's words, and how many languages use each."""

    def __init__(self, words: Mapping[str, frozenset[str]]) -> None:
        self.words = dict(words)
        self.shared_by = Counter(w for found in self.words.values() for w in found)


# Their closed-class words alone (mcp/languages/); the ranker adds the spec's examples.
CLOSED_CLASS = Evidence(lexicon.VOCABULARY)
# Elided words ("l'", "qu'") tell a language only written onto the next word.
_ELIDED = Evidence({code: lexicon.of((code,)).ELISIONS for code in lexicon.CODES})
_LETTERS = Evidence({code: frozenset(letters) for code, letters in lexicon.LETTERS.items()})


def _folded(text: str) -> str:
    """Lower case without accents, curly apostrophes straight."""
    text = text.replace("\u2019", "'")
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def is_english(text: str) -> bool:
    """Whether a phrase reads as English (see the module's docstring)."""
    accented = sum(1 for c in unicodedata.normalize("NFKD", text) if unicodedata.combining(c))
    marks = len(_FOREIGN_MARKS.findall(text))
    words = _WORD.findall(_folded(text))
    english = sum(1 for w in words if w in ENGLISH and w not in SHARED)
    other = max(sum(1 for w in words if w in found - SHARED) for found in OTHERS.values())
    other += accented + marks + sum(1 for w in words if _ELISION.match(w))
    # Letters of another alphabet than Latin ("保存", "память"): no English phrase.
    other += sum(1 for c in text if c.isalpha() and ord(c) > _LATIN_END)
    return english > other or english == other == 0


def detect(words: Iterable[str], text: str, evidence: Evidence = CLOSED_CLASS) -> tuple[str, ...]:
    """The languages a phrase may be in, from its folded words and its letters: the one whose
    words and letters it uses most, or those tied (all of them when none is used)."""
    score = dict.fromkeys(lexicon.CODES, Fraction(0))
    found: list[tuple[Evidence, str]] = [(_LETTERS, letter) for letter in set(text.casefold())]
    for word in words:
        head, elided, tail = word.partition("'")
        if elided and word not in evidence.shared_by:
            found += [(_ELIDED, head), (evidence, tail)]  # "l'entrée", not "it's"
        else:
            found.append((evidence, word))
    for kind, form in found:
        for code, known in kind.words.items():
            if form in known:
                score[code] += Fraction(1, kind.shared_by[form])
    best = max(score.values())
    if not best:
        return lexicon.CODES
    return tuple(code for code in lexicon.CODES if score[code] == best)
