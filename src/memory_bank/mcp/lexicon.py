"""The closed-class words search_capabilities reads a phrase's shape with: grammar, a few set
phrases, and one class of verbs that says nothing about which capability (those that ask to
see something); no nouns but the few for a stored item.

The words are data: every file in mcp/languages/ gives some languages' words by class (their
union is what the ranker reads), so a language is added by a file and its examples in the
spec's `x-mcp-examples`, never by code. What a phrase asks for is read from the capabilities'
own text and those examples (mcp/ranking/); these lists only say which words are grammar:
which ones negate, open a question or a polite request, introduce the content of a save
("that", "dass", "que"), or say nothing at all. Words are written folded, as ranking.fold
leaves them (lower case, no accents), so "über" is "uber" and "qué" is "que".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LANGUAGES = Path(__file__).with_name("languages")


def _files() -> list[dict[str, Any]]:
    """Every language file, in name order (an earlier file's set phrases are tried first)."""
    return [
        json.loads(path.read_text(encoding="utf-8")) for path in sorted(LANGUAGES.glob("*.json"))
    ]


_DATA = _files()


def _words(name: str) -> frozenset[str]:
    """One class of words, from every language that has it."""
    return frozenset(
        word for data in _DATA for line in data["words"].get(name, ()) for word in line.split()
    )


def _pairs(name: str) -> list[tuple[str, str]]:
    """A list of pairs from every language that has it, in file order."""
    return [(one, other) for data in _DATA for one, other in data.get(name, ())]


def _mapping(name: str) -> dict[str, str]:
    """A mapping from every language that has it."""
    return {key: value for data in _DATA for key, value in data.get(name, {}).items()}


# Words that negate the clause they are in ("don't", "vergiss nicht", "ne ... pas", "no lo").
NEGATIONS = _words("NEGATIONS")
# Negations that always stand before a verb (French "ne"): never a contrast.
PREVERBAL_NEGATIONS = _words("PREVERBAL_NEGATIONS")
# A negation followed by one of these (or a number) contrasts a value, it refuses no action:
# "the 19th, not the 18th", "der 19., nicht der 18.", "le 19, pas le 18", "el 19, no el 18".
ARTICLES = _words("ARTICLES")
PLACING = _words("PLACING")
# Words that open a question.
QUESTION_LEADS = _words("QUESTION_LEADS")
# The words a question's tag is made of ("..., right?", "..., oder?", "..., ¿verdad?").
TAGS = _words("TAGS")
# Fillers before a request, which say nothing ("um", "ähm", "euh", "pues").
FILLERS = _words("FILLERS")
# Subject pronouns: the verb after one leads ("tu peux noter ...").
SUBJECTS = _words("SUBJECTS")
# Words that open a polite request, not a question ("can you ...", "kannst du ...").
REQUEST_LEADS = _words("REQUEST_LEADS")
# Words that introduce the content of a save ("that", "dass", "que").
COMPLEMENTIZERS = _words("COMPLEMENTIZERS")
# Those that are also pronouns (English "that"): a clause must follow for them to introduce.
BARE_COMPLEMENTIZERS = _words("BARE_COMPLEMENTIZERS")
# Object pronouns a request may open with ("¿me puedes apuntar ...?").
OBJECT_LEADS = _words("OBJECT_LEADS")
# Words that only want or need ("je voudrais", "no hace falta"): their "that" clause is the
# request, not content to save.
VOLITION = _words("VOLITION")
# Words that say a later clause gives a new value ("the new one is ...").
REPLACEMENTS = _words("REPLACEMENTS")
# Words that say a value changed ("it changed, it's now ...", "mudou, agora é ...").
CHANGED = _words("CHANGED")
# Set phrases read as what they say: "off the record" is "not record", "for future reference"
# is "note", a discourse marker ("on second thought") is nothing.
IDIOMS: dict[tuple[str, ...], tuple[str, ...]] = {
    tuple(phrase.split()): tuple(meaning.split()) for phrase, meaning in _pairs("idioms")
}
# Prepositions that name what something is about ("about the dentist", "sobre el dentista"):
# with the user's own word after one, a phrase names its subject, so it searches for it.
ABOUT = _words("ABOUT")
# Prepositions that name where something came from ("that came in from Slack", "die aus dem
# Kalender kamen"): a listing by source, not a subject.
ORIGINS = _words("ORIGINS")
# Possessives, which may stand between one of those and the subject ("about my landlord").
POSSESSIVES = _words("POSSESSIVES")
# English prepositions: "that" before one is a pronoun ("put that in memory"), no clause.
PREPOSITIONS = _words("PREPOSITIONS")
# Auxiliaries written onto a word ("I'd", "we'll"), spelled out.
CLITICS = _mapping("clitics")
# Elided articles and pronouns written onto the next word ("l'entrée", "qu'il").
ELISIONS = _words("ELISIONS")
# What an HTTP method does to what its path names, as the verb people use for it (the verbs
# of the summaries' language).
METHOD_VERBS = {"POST": "create", "PUT": "set", "PATCH": "update", "DELETE": "delete"}
# Subjects that, before an auxiliary, start a clause "that" was left out of: "tell the team
# we're moving", "note I'm away".
CLAUSE_SUBJECTS = _words("CLAUSE_SUBJECTS")
AUXILIARIES = _words("AUXILIARIES")
# With a negation, these stop something that goes on ("not anymore", "nicht mehr", "ne ...
# plus"): not to remember any longer is to forget.
CESSATION = _words("CESSATION")
# Clause boundaries besides punctuation: "denk dran und vergiss es nicht".
CONJUNCTIONS = _words("CONJUNCTIONS")
# Words for "all of it": one word to the ranker, in every language ("alle", "todas").
ALL = _words("ALL")
# Grammar that says nothing about what to do (formal politeness, what a host calls an
# operation, question words: the question itself is a feature, the word is not).
STOP = _words("STOP")
# Verbs that only ask to see something, one word in every language (by how they start), so
# that what is to be seen decides: "Enséñame el historial" is about the history.
VERB_CLASSES: dict[str, tuple[str, ...]] = {}
for _data in _DATA:
    for _canonical, _prefixes in _data.get("verb_classes", {}).items():
        VERB_CLASSES[_canonical] = VERB_CLASSES.get(_canonical, ()) + tuple(_prefixes)
# Words that point at one thing already in view ("that memory", "diesen Eintrag", "cette
# note", "esa nota"): with a noun the spec's examples use for an item, the phrase is about one.
DEMONSTRATIVES = _words("DEMONSTRATIVES")
# The nouns for one stored thing (a memory, a draft): after a demonstrative they say the phrase
# is about one the agent has in view; which kind each names comes from the spec's examples.
ITEMS = _words("ITEMS")
# Relative pronouns: after a noun, what follows says which one ("the entry that you just
# created", "l'entrée que vous venez de créer", "la nota que guardaste").
RELATIVES = _words("RELATIVES")
# The same nouns in the plural: a phrase about several is about a collection, not one item.
PLURAL_ITEMS = _words("PLURAL_ITEMS")
# Pronouns written onto an imperative ("bórralo", "guárdalo", "muéstramelo"), longest first:
# the verb without them is what the examples spell.
ENCLITICS = tuple(sorted(_words("ENCLITICS"), key=lambda pronoun: (-len(pronoun), pronoun)))
# Endings that inflect a verb or a noun ("merken", "looked", "guardes"), longest first: a word
# the spec spells plus one of them is that word.
ENDINGS = tuple(sorted(_words("ENDINGS"), key=lambda ending: (-len(ending), ending)))
# Other spellings of a word the spec may use: a part swapped anywhere ("organization" and
# "organisation"), or an ending swapped (a German imperative with or without its "e", a
# Spanish formal imperative's vowel: "elimine" of "elimina"), tried in order.
RESPELL_INFIXES = _pairs("respell_infixes")
RESPELL_SUFFIXES = _pairs("respell_suffixes")
# The verb "to be" after a subject: a phrase that asks nothing and names no action but says
# what something is states a fact ("my sister's birthday is on March 3rd", "der Schlüssel ist
# beim Hausmeister").
COPULAS = _words("COPULAS")
# With a stated fact, these say it replaces an older one: "my manager is now Tom", "ahora vivo
# en Sevilla".
NOW = _words("NOW")
# When something was saved or changed: a filter, never the user's own subject.
TIME = _words("TIME")
# Words that point back in time: with an addition and nothing to add, they ask for what was
# added ("the latest ten things you noted", "seit Montag hinzugekommen").
RECENT = _words("RECENT")
# The product's own name says nothing about what to do with it.
PRODUCT_NAMES = (("memory", "bank"), ("memory-bank",))
# Contractions, spelled out so "don't" negates and "what's" asks.
CONTRACTIONS = _mapping("contractions")
# How an instruction that looks like a question opens ("don't forget ...?").
COMMAND_OPENINGS = [
    tuple(line.split()) for data in _DATA for line in data.get("command_openings", ())
]
# Nouns a relative clause may follow: one stored thing or several, and "thing" itself.
PLURAL_NOUNS = PLURAL_ITEMS | _words("THINGS")
NOUNS = ITEMS | PLURAL_NOUNS | _words("THING")
# What stands before such a noun: an article, a demonstrative, a possessive, "all", "last".
DETERMINERS = ARTICLES | DEMONSTRATIVES | POSSESSIVES | ALL | _words("LAST")
# Each language's grammar words, for telling which language a phrase is in (mcp/language.py).
GRAMMAR: dict[str, frozenset[str]] = {}
for _data in _DATA:
    for _code, _lines in _data.get("grammar", {}).items():
        GRAMMAR[_code] = GRAMMAR.get(_code, frozenset()) | {
            w for line in _lines for w in line.split()
        }
