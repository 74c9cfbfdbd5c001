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


def _words(text: str) -> frozenset[str]:
    """A set of words from a whitespace-separated list."""
    return frozenset(text.split())


# Grammar words that are English and no word of the other three (folded, no accents).
ENGLISH = _words(
    """the a an is are was were be been am do does did don't doesn't didn't can could would
    should will shall have has had it its it's this that these those what which who whom whose
    when where why how my me mine i i'm i've i'd you your you're yours we our us they their
    them he she his her of to for from with about and or but not no any some all every just
    please if then than so up out off on in at by into there here anything everything
    something nothing again also too very"""
)
OTHERS = {
    "de": _words(
        """der die das den dem des ein eine einen einem einer ist sind war und oder aber nicht
        ich du er wir ihr mir mich dir dich mein meine meinen meinem meiner dein deine was wer
        wie wo wann warum dass zu mit uber von fur auf aus bei nach im ins am vom zum zur bitte
        doch noch schon mal nur auch alle alles es sich hast habe hat kannst dieser diese
        diesen dieses diesem sein seine seinen ihre ihren damit weg"""
    ),
    "fr": _words(
        """le la les un une des du est sont et ou mais ne pas je tu il elle nous vous moi toi
        mon ma mes ton ta tes son sa ses ce cet cette ces ca qui quoi quel quelle quels ou
        comment pourquoi quand sur pour avec dans au aux y en est-ce qu'est-ce s'il peux
        veux tout tous toute toutes non oui"""
    ),
    "es": _words(
        """el la los las un una unos unas es son y o pero no yo tu mi mis me te se lo le les
        eso esto esa ese esta este que quien cual como donde cuando por para con sobre del al
        hay puedes quiero todo todos toda todas muy ya su sus"""
    ),
}
# Words spelled alike in English and another of them ("no", "me"): evidence for neither.
SHARED = frozenset(w for words in OTHERS.values() for w in words) & ENGLISH
_FOREIGN_MARKS = re.compile("[\u00bf\u00a1\u00df]")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# A French elision ("l'ancienne", "qu'il"); English clitics come after the word ("it's").
_ELISION = re.compile(r"^(?:l|d|j|qu|n|c|s|m|t)'[a-z]{2,}$")


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
