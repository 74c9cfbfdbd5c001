"""Whether a phrase is English, from its grammar words and letters alone (deterministic).

search_capabilities asks the embedding model only about English phrases: the default model is
English and ranks German, French and Spanish phrases worse than the lexical ranking does.
A phrase counts as English when it has more English grammar words than German, French or
Spanish ones (their letters with accents, "¿" and "¡" counting for the others); a phrase with
no evidence either way (a bare id, "open mem_...") counts as English.
"""

from __future__ import annotations

import re
import unicodedata

from memory_bank.mcp import lexicon

# Grammar words that are English, and those of each other language (mcp/languages/).
ENGLISH = lexicon.GRAMMAR["en"]
OTHERS = {code: words for code, words in lexicon.GRAMMAR.items() if code != "en"}
# Words spelled alike in English and another of them ("no", "me"): evidence for neither.
SHARED = frozenset(w for words in OTHERS.values() for w in words) & ENGLISH
_FOREIGN_MARKS = re.compile("[\u00bf\u00a1\u00df]")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# A French elision ("l'ancienne", "qu'il"); English clitics come after the word ("it's").
_ELISION = re.compile(r"^(?:" + "|".join(sorted(lexicon.ELISIONS)) + r")'[a-z]{2,}$")


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
    return english > other or english == other == 0
