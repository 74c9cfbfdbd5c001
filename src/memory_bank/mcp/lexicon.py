"""The closed-class words search_capabilities reads a phrase's shape with: grammar, a few set
phrases, and one class of verbs that says nothing about which capability (those that ask to
see something); no nouns but the few for a stored item.

The words are data: each file in mcp/languages/ gives one language's words by class, so a
language is added by a file and its examples in the spec's `x-mcp-examples`, never by code.
A phrase is read with the words of the language it is in (`of(detect(...))`, mcp/language.py
tells which), so Portuguese "no" ("in the") negates nothing and German "ne" is no French
negation; a phrase no language's words tell apart is read with the union of those it may be
in. What a phrase asks for is read from the capabilities' own text and those examples
(mcp/ranking/); these lists only say which words are grammar: which ones negate, open a
question or a polite request, introduce the content of a save ("that", "dass", "que"), or say
nothing at all. Words are written folded, as ranking.fold leaves them (lower case, no
accents), so "über" is "uber" and "qué" is "que"; in a script written without spaces, as the
pairs of characters the ranker reads it in ("ない", not "ないで").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

LANGUAGES = Path(__file__).with_name("languages")


def _files() -> dict[str, dict[str, Any]]:
    """Every language file by its language's code, in name order (an earlier file's set
    phrases are tried first)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(LANGUAGES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for code in data["languages"]:
            found[code] = data
    return found


FILES = _files()
# Every language's code, in file order.
CODES = tuple(FILES)


class Words:
    """The closed-class words of some languages (the union of their files), by class."""

    def __init__(self, codes: Iterable[str]) -> None:
        self.codes = tuple(codes)
        data = [FILES[code] for code in dict.fromkeys(self.codes)]
        self._data = data
        # Words that negate the clause they are in ("don't", "vergiss nicht", "ne ... pas").
        self.NEGATIONS = self._words("NEGATIONS")
        # Negations that always stand before a verb (French "ne"): never a contrast.
        self.PREVERBAL_NEGATIONS = self._words("PREVERBAL_NEGATIONS")
        # A negation followed by one of these (or a number) contrasts a value, it refuses no
        # action: "the 19th, not the 18th", "der 19., nicht der 18.", "le 19, pas le 18".
        self.ARTICLES = self._words("ARTICLES")
        self.PLACING = self._words("PLACING")
        # Words that open a question.
        self.QUESTION_LEADS = self._words("QUESTION_LEADS")
        # Words that end one, in a language that puts them last (written as the pairs of
        # characters a script without spaces is read in: "すか" of "ますか").
        self.QUESTION_ENDS = self._words("QUESTION_ENDS")
        # The words a question's tag is made of ("..., right?", "..., oder?", "¿verdad?").
        self.TAGS = self._words("TAGS")
        # Fillers before a request, which say nothing ("um", "ähm", "euh", "pues").
        self.FILLERS = self._words("FILLERS")
        # Subject pronouns: the verb after one leads ("tu peux noter ...").
        self.SUBJECTS = self._words("SUBJECTS")
        # Words that open a polite request, not a question ("can you ...", "kannst du ...").
        self.REQUEST_LEADS = self._words("REQUEST_LEADS")
        # Words that introduce the content of a save ("that", "dass", "que").
        self.COMPLEMENTIZERS = self._words("COMPLEMENTIZERS")
        # Those that are also pronouns (English "that"): a clause must follow to introduce.
        self.BARE_COMPLEMENTIZERS = self._words("BARE_COMPLEMENTIZERS")
        # Object pronouns a request may open with ("¿me puedes apuntar ...?").
        self.OBJECT_LEADS = self._words("OBJECT_LEADS")
        # Words that only want or need ("je voudrais", "no hace falta"): their "that" clause
        # is the request, not content to save.
        self.VOLITION = self._words("VOLITION")
        # Words that say a later clause gives a new value ("the new one is ...").
        self.REPLACEMENTS = self._words("REPLACEMENTS")
        # Words that say a value changed ("it changed, it's now ...", "mudou, agora é ...").
        self.CHANGED = self._words("CHANGED")
        # Set phrases read as what they say: "off the record" is "not record", "for future
        # reference" is "note", a discourse marker ("on second thought") is nothing.
        self.IDIOMS: dict[tuple[str, ...], tuple[str, ...]] = {
            tuple(phrase.split()): tuple(meaning.split())
            for phrase, meaning in self._pairs("idioms")
        }
        # Prepositions that name what something is about ("about the dentist", "sobre el
        # dentista"): with the user's own word after one, a phrase names its subject.
        self.ABOUT = self._words("ABOUT")
        # Prepositions that name where something came from ("that came in from Slack"): a
        # listing by source, not a subject.
        self.ORIGINS = self._words("ORIGINS")
        # Possessives, which may stand between one of those and the subject ("about my ...").
        self.POSSESSIVES = self._words("POSSESSIVES")
        # English prepositions: "that" before one is a pronoun ("put that in memory").
        self.PREPOSITIONS = self._words("PREPOSITIONS")
        # Auxiliaries written onto a word ("I'd", "we'll"), spelled out.
        self.CLITICS = self._mapping("clitics")
        # Elided articles and pronouns written onto the next word ("l'entrée", "qu'il").
        self.ELISIONS = self._words("ELISIONS")
        # Subjects that, before an auxiliary, start a clause "that" was left out of: "tell the
        # team we're moving", "note I'm away".
        self.CLAUSE_SUBJECTS = self._words("CLAUSE_SUBJECTS")
        self.AUXILIARIES = self._words("AUXILIARIES")
        # With a negation, these stop something that goes on ("not anymore", "nicht mehr", "ne
        # ... plus"): not to remember any longer is to forget.
        self.CESSATION = self._words("CESSATION")
        # Clause boundaries besides punctuation: "denk dran und vergiss es nicht".
        self.CONJUNCTIONS = self._words("CONJUNCTIONS")
        # Words for "all of it": one word to the ranker, in every language ("alle", "todas").
        self.ALL = self._words("ALL")
        # Grammar that says nothing about what to do (formal politeness, what a host calls an
        # operation, question words: the question itself is a feature, the word is not).
        self.STOP = self._words("STOP")
        # Verbs that only ask to see something, one word in every language (by how they
        # start), so that what is to be seen decides: "Enséñame el historial" is about it.
        self.VERB_CLASSES: dict[str, tuple[str, ...]] = {}
        for one in data:
            for canonical, prefixes in one.get("verb_classes", {}).items():
                known = self.VERB_CLASSES.get(canonical, ())
                self.VERB_CLASSES[canonical] = known + tuple(prefixes)
        # Words that point at one thing already in view ("that memory", "diesen Eintrag"):
        # with a noun the spec's examples use for an item, the phrase is about one.
        self.DEMONSTRATIVES = self._words("DEMONSTRATIVES")
        # The nouns for one stored thing (a memory, a draft): after a demonstrative they say
        # the phrase is about one in view; which kind each names comes from the examples.
        self.ITEMS = self._words("ITEMS")
        # Relative pronouns: after a noun, what follows says which one ("the entry that you
        # just created", "l'entrée que vous venez de créer", "la nota que guardaste").
        self.RELATIVES = self._words("RELATIVES")
        # The same nouns in the plural: a phrase about several is about a collection.
        self.PLURAL_ITEMS = self._words("PLURAL_ITEMS")
        # Pronouns written onto an imperative ("bórralo", "muéstramelo"), longest first: the
        # verb without them is what the examples spell.
        self.ENCLITICS = _longest_first(self._words("ENCLITICS"))
        # Endings that inflect a verb or a noun ("merken", "looked", "guardes"), longest
        # first: a word the spec spells plus one of them is that word.
        self.ENDINGS = _longest_first(self._words("ENDINGS"))
        # Other spellings of a word the spec may use: a part swapped anywhere
        # ("organization" and "organisation"), or an ending swapped (a German imperative with
        # or without its "e", a Spanish formal imperative's vowel), tried in order.
        self.RESPELL_INFIXES = self._pairs("respell_infixes")
        self.RESPELL_SUFFIXES = self._pairs("respell_suffixes")
        # The verb "to be" after a subject: a phrase that asks nothing and names no action
        # but says what something is states a fact ("der Schlüssel ist beim Hausmeister").
        self.COPULAS = self._words("COPULAS")
        # With a stated fact, these say it replaces an older one: "my manager is now Tom".
        self.NOW = self._words("NOW")
        # When something was saved or changed: a filter, never the user's own subject.
        self.TIME = self._words("TIME")
        # Words that point back in time: with an addition and nothing to add, they ask for
        # what was added ("the latest ten things you noted", "seit Montag hinzugekommen").
        self.RECENT = self._words("RECENT")
        # Contractions, spelled out so "don't" negates and "what's" asks.
        self.CONTRACTIONS = self._mapping("contractions")
        # How an instruction that looks like a question opens ("don't forget ...?").
        self.COMMAND_OPENINGS = [
            tuple(line.split()) for one in data for line in one.get("command_openings", ())
        ]
        # Nouns a relative clause may follow: one stored thing or several, and "thing".
        self.PLURAL_NOUNS = self.PLURAL_ITEMS | self._words("THINGS")
        self.NOUNS = self.ITEMS | self.PLURAL_NOUNS | self._words("THING")
        # What stands before such a noun: an article, a demonstrative, a possessive, "all".
        self.DETERMINERS = (
            self.ARTICLES | self.DEMONSTRATIVES | self.POSSESSIVES | self.ALL | self._words("LAST")
        )

    def _words(self, name: str) -> frozenset[str]:
        """One class of words, from every language that has it."""
        return frozenset(
            word
            for one in self._data
            for line in one["words"].get(name, ())
            for word in line.split()
        )

    def _pairs(self, name: str) -> list[tuple[str, str]]:
        """A list of pairs from every language that has it, in file order."""
        return [(first, second) for one in self._data for first, second in one.get(name, ())]

    def _mapping(self, name: str) -> dict[str, str]:
        """A mapping from every language that has it."""
        return {key: value for one in self._data for key, value in one.get(name, {}).items()}


def _longest_first(words: frozenset[str]) -> tuple[str, ...]:
    """Words longest first (then in order), so the longest that fits is tried first."""
    return tuple(sorted(words, key=lambda word: (-len(word), word)))


@cache
def of(codes: tuple[str, ...] = CODES) -> Words:
    """The words of these languages (every language's when none is given)."""
    return Words(codes or CODES)


# What an HTTP method does to what its path names, as the verb people use for it (the verbs
# of the summaries' language).
METHOD_VERBS = {"POST": "create", "PUT": "set", "PATCH": "update", "DELETE": "delete"}
# The product's own name says nothing about what to do with it.
PRODUCT_NAMES = (("memory", "bank"), ("memory-bank",))
# Each language's grammar words, for telling which language a phrase is in (mcp/language.py).
GRAMMAR: dict[str, frozenset[str]] = {
    code: frozenset(w for line in lines for w in line.split())
    for data in FILES.values()
    for code, lines in data.get("grammar", {}).items()
}

# Classes that are parts of a word, not words.
_WRITTEN_ONTO = frozenset({"ENDINGS", "ENCLITICS", "ELISIONS"})


def _vocabulary(data: dict[str, Any]) -> frozenset[str]:
    """Every word of a language's file: its classes (not the endings, pronouns and elided words
    written onto a word), set phrases, contractions and grammar."""
    lines = [
        line for name, lines in data["words"].items() if name not in _WRITTEN_ONTO for line in lines
    ]
    lines += [phrase for phrase, _ in data.get("idioms", ())]
    lines += [line for lines in data.get("grammar", {}).values() for line in lines]
    return frozenset([*(w for line in lines for w in line.split()), *data.get("contractions", {})])


# What tells which language a phrase is in (mcp/language.py).
VOCABULARY = {code: _vocabulary(data) for code, data in FILES.items()}
# Letters one language writes and few others do ("ñ", "ã", "ß"), unfolded.
LETTERS: dict[str, str] = {code: data.get("letters", "") for code, data in FILES.items()}
