"""Rank capabilities for a plain-language phrase: deterministic, from the spec's own words.

Every capability has documents: its title, its summary, what its method and path say a change
does ("create memory"), and the example phrasings the spec gives it (`x-mcp-examples`, in
English, German, French and Spanish, with "…" where the user's own content goes). A phrase
is compared with each of them by words, word stems and character n-grams (so "Lösch",
"löschen" and "lösche" meet), weighted by how few capabilities use them; a capability scores
its best document's similarity, plus a little of all its text together.

Before that, the phrase's shape is read with closed-class words only (mcp/lexicon.py): its
clauses (an English one may start without its "that": "tell the team we're moving"), which
of them are negated, whether it asks, what part is the content to save, ids, and words no
capability uses (its topic). Negation and correction are then handled explicitly:

- a negated clause that matches a negated example means what that example's capability does
  ("don't remember that" is one of the delete's examples), unless the phrase also declines the
  save it would undo ("between us, no need to remember it");
- a negated "forget" is a save ("don't forget ...", "vergiss nicht, dass ..."), and a negated
  save that stops ("not ... anymore", "nicht mehr", "ne ... plus") forgets;
- any other negated action is declined ("never mind, don't save that"): no capability, unless
  another clause asks for a different one ("you shouldn't have kept that, delete it");
- a negated clause after a clear request gives a reason ("delete that memory, it's not true
  anymore"), it changes nothing the request asks;
- a contrast ("the 19th, not the 18th"), or a later clause giving a new value ("scratch the
  old number, the new one is ..."), is a correction: an edit;
- a listing of what is "about" the user's own words ("what have you saved about the
  dentist?", "¿qué tienes sobre el alquiler?") is a search;
- a question about adding to a collection ("what did I save last week?") reads it, one about
  editing an item or acting on one ("who changed this note last?") reads the nearest
  collection under or above it (its history), and one mostly in the user's own words ("what
  time is my dentist appointment?") is a search;
- a clause that only wants or needs ("quiero que ...", "il faut que ...", "ich möchte, dass
  ...") makes its "that" clause the request, not content to save, with its negation;
- an id, or "that memory" ("cette note", "diesen Eintrag"), favours the capabilities that take
  such an id; items in the plural and none alone favour those on a collection;
- a relative clause after a noun says which item, not what to do ("delete the entry that you
  just created"); with the user's own words in it, a listing is a search ("the memories that
  mention Berlin");
- a frame before a colon, a dash or an arrow that names no action reports the request after
  it ("user said: remember I'm vegan");
- content handed over, or a fact stated ("my sister's birthday is on March 3rd"), with no
  action named and no question is something to keep, or an edit when it is so "now";
- an addition that points back in time with nothing to add reads what was added ("the latest
  ten things you noted").

Before comparing, a phrase's words are spelled as the capabilities' text spells them (a
Spanish imperative without its pronouns, a compound of two known words, a German imperative
with or without its "e", an inflection its stem does not find, the other English spelling, two
words written as one), so one example covers its inflected forms.

A phrase that names no action but has a topic goes to the capability the spec marks
`x-mcp-fallback` (search): "what did we decide last week", "zebra quantum".

With an embedding model (semantic search on and its model ready; mcp/server.py), an English
phrase (mcp/language.py) is also compared in meaning with each capability's texts: each
capability the words found keeps less of its score the further it is behind the closest one
(SEMANTIC_WEIGHT), before the fallback and the declined check; the model reorders, it adds
and removes nothing. The default model is English and ranks German, French and
Spanish phrases worse than the words do, so those are ranked by words alone. Without a model,
or when it fails, the ranking is the lexical one, unchanged (tests/mcp/lexical_ranking.json).
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from memory_bank.caches import PerObject
from memory_bank.mcp import language, lexicon
from memory_bank.mcp.manifest import Capability, Manifest

# The stand-in for the user's own content in an example ("remember that …").
PLACEHOLDER = "\u2026"
_SLOT = "zzslot"
# Feature names for a question and for content the capabilities do not know (a topic).
QUESTION, TOPIC, NO_TOPIC, CONTENT = "<?>", "<topic>", "<no topic>", "<content>"
TOPIC_WEIGHT = 1.0
# How much what follows "that" or ":" counts: it is what to save, not what to do.
CONTENT_WEIGHT = 0.3
# How much a word's stem and its character 4-grams count beside the whole word.
STEM_WEIGHT, GRAM_WEIGHT = 0.7, 0.5
# A capability's score: its best document, plus this much of all its text together.
PROFILE_WEIGHT = 0.3
# Least score for a clause to name an action (below it, the words are only a topic).
ACTION_FLOOR = 0.25
# What the explicit rules add: a negated "forget", a contrast, an id of the right kind.
KEEP_BONUS, CORRECTION_BONUS, ID_BONUS = 1.0, 0.35, 0.3
# Below this share of words the capabilities know, a question is about the user's subject
# (a search), and the search leads the rest by this much.
TOPICAL, TOPICAL_MARGIN = 0.5, 0.05
# How clearly a negated clause must say "forget" to be read as "remember".
KEEP_FLOOR = 0.5
# How close a negated clause must be to a negated example to mean what that example does.
NEGATION_MATCH = 0.8
# What an id leaves of a capability that takes no id of its kind.
NO_ID_FACTOR = 0.5
# What a question leaves of a capability that changes something.
QUESTION_CHANGE_FACTOR = 0.6
# With an embedding model, the share of its score each cosine point a capability is behind the
# phrase's closest one costs it, and the least share it keeps (chosen on the tune halves of
# phrasings_c, _d and _e and on the probes only: 2 beat 3 with both local models once the
# probes in three more voices were in).
SEMANTIC_WEIGHT, SEMANTIC_FLOOR = 2.0, 0.05

_BOUNDARY = re.compile(r"([,;:.!?\u00bf\u00a1()\[\]\"]|\s[-\u2013\u2014]+\s|\s*[-=]>\s*)")
_WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")
_ID = re.compile(r"^([a-z][a-z0-9]*)_[a-z0-9]+$")
_ID_HINT = re.compile(r"\b([a-z][a-z0-9]*)_\.\.\.")
_CLITIC = re.compile(r"^([a-z]+)'(d|ll|re|ve|m)$")
_ELISION = re.compile(r"^(l|d|j|t|s|m|n|c|qu)'(.+)$")


def fold(text: str) -> str:
    """Lower case without accents (ß is ss), curly apostrophes straight."""
    text = text.replace("\u2019", "'").replace("\u00b4", "'")
    decomposed = unicodedata.normalize("NFKD", text.replace(PLACEHOLDER, f" {_SLOT} "))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _split_words(segment: str) -> list[str]:
    """The words of a piece of text: contractions spelled out, elisions ("l'", "qu'") and a
    possessive 's split off."""
    out: list[str] = []
    for token in _WORD.findall(segment):
        if token in lexicon.CONTRACTIONS:
            out.extend(lexicon.CONTRACTIONS[token].split())
            continue
        clitic = _CLITIC.match(token)
        if clitic:
            # "I'd", "we'll", "they're": the word and the auxiliary, not the word "id".
            out.extend((clitic.group(1), lexicon.CLITICS[clitic.group(2)]))
            continue
        elided = _ELISION.match(token)
        if elided:
            out.extend(elided.groups())
        elif token.endswith("'s"):
            out.append(token[:-2])
        else:
            out.append(token.replace("'", ""))
    return [_canonical(word) for word in out]


def _canonical(word: str) -> str:
    """One word for a class of words that says the same in every language ("all", "show")."""
    if word in lexicon.ALL:
        return "all"
    for canonical, prefixes in lexicon.VERB_CLASSES.items():
        if word.startswith(prefixes):
            return canonical
    return word


@dataclass(frozen=True)
class Clause:
    """A stretch of a phrase between punctuation, conjunctions and complementizers."""

    words: tuple[str, ...]
    negated: bool  # "don't save that"
    contrast: bool  # "not the 18th": a value corrected, no action refused
    content: bool  # after "that" or ":": what to save, not what to do
    # "(the entry) that you just created": which one, neither content nor the request
    relative: bool = False


@dataclass(frozen=True)
class Phrase:
    """A phrase read with closed-class words only."""

    clauses: tuple[Clause, ...]
    question: bool
    ids: frozenset[str]  # the prefixes of the ids it carries (mem, mdr)

    @property
    def words(self) -> tuple[str, ...]:
        """Every word, in order."""
        return tuple(w for clause in self.clauses for w in clause.words)


@lru_cache(maxsize=1024)
def parse(text: str) -> Phrase:
    """The shape of a phrase: clauses (negated, contrasting, content), question, ids."""
    folded = fold(text)
    # Pieces of text at even positions, the punctuation between them at odd ones.
    pieces = _BOUNDARY.split(folded)
    flat = [w for piece in pieces[::2] for w in _without_names(_split_words(piece))]
    # "Tu peux noter ...", "du kannst ...": the verb after a subject pronoun leads.
    # "¿Me puedes apuntar ...?", "te importa ...": and so does one after an object pronoun.
    lead = flat
    while lead[1:] and (lead[0] in lexicon.SUBJECTS or lead[0] in lexicon.OBJECT_LEADS):
        lead = lead[1:]
    first = lead[0] if lead else ""
    asks = folded.strip().endswith("?") or "\u00bf" in text or first in lexicon.QUESTION_LEADS
    question = asks and first not in lexicon.REQUEST_LEADS and not _commands(flat)
    clauses: list[Clause] = []
    content = acted = relative = False
    for number, piece in enumerate(pieces):
        if number % 2:
            # What follows a colon or a dash is the content: "save a memory: ...".
            content = content or piece.strip()[:1] in {":", "-", "=", "\u2013", "\u2014"}
            continue
        current: list[str] = []
        words = _without_names(_split_words(piece))
        for position, word in enumerate(words):
            rest = words[position + 1 :]
            if acted and not question and _opens_clause(word, rest) and current:
                # "tell the org we're switching ...": the "that" English may leave out.
                clauses.append(_clause(current, content))
                current, content = [], True
            if word in lexicon.RELATIVES and _names_one(current):
                # "delete the entry that you just created", "l'entrée que vous venez de
                # créer": says which one; its verb is not what the phrase asks.
                clauses.append(_clause(current, content))
                current, relative = [], True
                continue
            complementizer = acted and _introduces(word, rest)
            wish = current or (list(clauses[-1].words) if clauses and not content else [])
            if complementizer and _wishes(wish):
                # "quiero que recuerdes ...": the wanted clause is the request, not content;
                # a negation of the wanting negates it ("ya no quiero que lo recuerdes").
                if not current:
                    clauses.pop()
                current = [w for w in wish if w not in lexicon.VOLITION]
                continue
            if word in lexicon.CONJUNCTIONS or complementizer:
                if current:
                    clauses.append(_clause(current, content, relative))
                current, relative = [], False
                content = content or complementizer
                continue
            acted = acted or (word not in lexicon.STOP and word not in lexicon.NEGATIONS)
            current.append(word)
        if current:
            clauses.append(_clause(current, content, relative))
        relative = False
    ids = frozenset(m.group(1) for w in flat if (m := _ID.match(w)))
    return Phrase(tuple(clauses), question, ids)


def _names_one(words: list[str]) -> bool:
    """Whether words end in a noun with its article or demonstrative ("the entry", "l'entrée",
    "esa nota"): a relative clause may follow ("commit to memory that ..." is no such noun)."""
    if words and words[-1] in lexicon.PLURAL_NOUNS:
        return True  # "delete things that I told you", "borrar cosas que te he contado"
    return (
        len(words) >= 2
        and words[-1] in lexicon.NOUNS
        and (words[-2] in lexicon.DETERMINERS or words[-2].isdigit())
    )


def _introduces(word: str, rest: list[str]) -> bool:
    """Whether a word introduces a clause ("note that we ...") rather than pointing at
    something ("delete that memory"): English "that" needs a clause after it."""
    if word not in lexicon.COMPLEMENTIZERS:
        return False
    if word != "that":
        return True
    # Not before a preposition or an item's noun: "put that in memory", "make that memory".
    if not rest or rest[0] in lexicon.PREPOSITIONS or rest[0] in lexicon.ITEMS:
        return False
    # Nor before its verb: "that's private, don't store it" ("that is").
    if rest[0] in lexicon.AUXILIARIES:
        return False
    return rest[0] in lexicon.STOP or len(rest) >= 3


def _wishes(words: list[str]) -> bool:
    """Whether a clause only wants or needs something ("je voudrais", "no hace falta")."""
    return not lexicon.VOLITION.isdisjoint(words) and all(
        w in lexicon.VOLITION
        or w in lexicon.STOP
        or w in lexicon.NEGATIONS
        or w in lexicon.SUBJECTS
        or w in lexicon.CESSATION
        for w in words
    )


def _opens_clause(word: str, rest: list[str]) -> bool:
    """Whether a subject and its auxiliary start a clause of their own ("... we are moving")."""
    return word in lexicon.CLAUSE_SUBJECTS and bool(rest) and rest[0] in lexicon.AUXILIARIES


def _commands(words: list[str]) -> bool:
    """Whether a phrase that looks like a question is an instruction ("don't forget ...")."""
    return words[:2] == ["do", "not"]


def _without_names(words: list[str]) -> list[str]:
    """The words with the product's own name read as what it holds ("my memory bank") and set
    phrases read as what they say ("off the record" is "not record")."""
    out: list[str] = []
    i = 0
    replacements: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
        (name, ("memory",)) for name in lexicon.PRODUCT_NAMES
    ]
    replacements += list(lexicon.IDIOMS.items())
    while i < len(words):
        for name, meaning in replacements:
            if tuple(words[i : i + len(name)]) == name:
                out.extend(meaning)
                i += len(name)
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _clause(words: list[str], content: bool, relative: bool = False) -> Clause:
    """A clause, with what its negations do."""
    negated = contrast = False
    for i, word in enumerate(words):
        if word not in lexicon.NEGATIONS:
            continue
        after = words[i + 1] if i + 1 < len(words) else ""
        contrasts = word not in {"ne", "n"}  # French "ne" always stands before a verb
        valued = after in lexicon.ARTICLES or after in lexicon.PLACING or after[:1].isdigit()
        if i == 0 and contrasts and valued:
            contrast = True
        elif after or i > 0:
            negated = True
    # A negation inside the content is part of what to save: "note that I don't eat pork".
    if relative:
        return Clause(tuple(words), False, False, False, True)
    return Clause(tuple(words), negated and not contrast and not content, contrast, content)


def _features(word: str) -> dict[str, float]:
    """A word's features: itself, its stem (first five letters) and its character 4-grams."""
    out = {f"w:{word}": 1.0, f"s:{word[:5]}": STEM_WEIGHT}
    padded = f"#{word}#"
    grams = [padded[i : i + 4] for i in range(len(padded) - 3)]
    for gram in grams:
        out[f"g:{gram}"] = out.get(f"g:{gram}", 0.0) + GRAM_WEIGHT / len(grams)
    return out


def _meaningful(word: str) -> bool:
    """Whether a word can say what to do (no grammar, no number, no id, no placeholder)."""
    return (
        word not in lexicon.STOP
        and word not in lexicon.NEGATIONS
        and word not in lexicon.TIME
        and word != _SLOT
        and not word.isdigit()
        and _ID.match(word) is None
        and len(word) > 1
    )


def _bag(words: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Summed features of weighted words."""
    out: dict[str, float] = {}
    for word, weight in words:
        for feature, value in _features(word).items():
            out[feature] = out.get(feature, 0.0) + value * weight
    return out


@dataclass
class _Document:
    """One text of a capability, as features."""

    capability: Capability
    bag: dict[str, float]


class _Index:
    """Every capability's documents, and how rare each feature is among capabilities."""

    def __init__(self, capabilities: tuple[Capability, ...]) -> None:
        self.capabilities = capabilities
        self.documents: list[_Document] = []
        # The negated clauses of examples that say something by negating ("don't forget ..."):
        # what a phrase's negated clause means when it matches one of them.
        self.negated: list[_Document] = []
        self.negated_leads: list[tuple[str, ...]] = []
        self.profiles: dict[str, dict[str, float]] = {}
        self.words: set[str] = set()
        self.stems: set[str] = set()
        for capability in capabilities:
            profile: dict[str, float] = {}
            for text in _texts(capability):
                shape = parse(text)
                # A negated clause says what the example does by what it refuses: it is
                # matched against a phrase's negated clauses only.
                refused = frozenset(i for i, c in enumerate(shape.clauses) if c.negated)
                bag = _phrase_bag(shape, self._topic_of_example(text), refused)
                self.documents.append(_Document(capability, bag))
                for position in refused:
                    negation_bag = _negation_bag(shape.clauses[position])
                    self.negated.append(_Document(capability, negation_bag))
                    self.negated_leads.append(_negation_lead(shape.clauses[position]))
                    # Its words count for rarity, though not for the capability's profile.
                    for feature in negation_bag:
                        profile.setdefault(feature, 0.0)
                for feature, value in bag.items():
                    profile[feature] = profile.get(feature, 0.0) + value
                for word in parse(text).words:
                    if _meaningful(word):
                        self.words.add(word)
                        self.stems.add(word[:5])
            self.profiles[capability.name] = profile
        count = len(capabilities)
        df: dict[str, int] = {}
        for profile in self.profiles.values():
            for feature in profile:
                df[feature] = df.get(feature, 0) + 1
        self.idf = {f: math.log(1 + count / n) for f, n in df.items()}
        self.documents = [
            _Document(d.capability, self._weighted(d.bag)) for d in self.documents if d.bag
        ]
        self.profiles = {name: self._weighted(p) for name, p in self.profiles.items()}
        self.negated = [_Document(d.capability, self._weighted(d.bag)) for d in self.negated]
        # The kinds of id (mem, mdr) each item noun stands for: those of the capabilities
        # whose examples use it.
        self.items: dict[str, frozenset[str]] = {}
        for capability in capabilities:
            kinds = _id_prefixes(capability)
            used = {w for text in capability.examples for w in parse(text).words}
            for noun in lexicon.ITEMS & used if kinds else ():
                self.items[noun] = self.items.get(noun, frozenset()) | kinds

    @staticmethod
    def _topic_of_example(text: str) -> bool:
        """An example marks where the user's own words go with the placeholder."""
        return PLACEHOLDER in text

    def _weighted(self, bag: dict[str, float]) -> dict[str, float]:
        """A bag weighted by rarity, unit length, features no capability uses left out."""
        out = {f: v * self.idf[f] for f, v in bag.items() if f in self.idf}
        norm = math.sqrt(sum(v * v for v in out.values()))
        return {f: v / norm for f, v in out.items()} if norm else {}

    def spelled(self, word: str) -> tuple[str, ...]:
        """A word as the capabilities' text spells it: in the other English spelling, a
        Spanish imperative without its pronouns ("bórralo" is "borra"), a compound of two known
        words ("Änderungsverlauf" is "anderung verlauf"), without an inflection; unchanged when
        none fits."""
        if word in self.words or len(word) < 5:
            return (word,)
        # British and American spellings: "organization" is "organisation", "memorise" is
        # "memorize".
        for one, other in (("iz", "is"), ("is", "iz")):
            if one in word and word.replace(one, other) in self.words:
                return (word.replace(one, other),)
        for pronoun in lexicon.ENCLITICS:
            bare = word[: -len(pronoun)]
            if word.endswith(pronoun) and bare in self.words:
                return (bare,)
        # A German imperative drops its "e" ("Änder das" of "Ändere"), or keeps it
        # ("Korrigiere" of "Korrigier").
        if word + "e" in self.words:
            return (word + "e",)
        if word.endswith("e") and word[:-1] in self.words:
            return (word[:-1],)
        # A Spanish formal imperative swaps the imperative's vowel ("elimine", "actualice",
        # "guarde" of "elimina", "actualiza", "guarda").
        for formal, familiar in (("ice", "iza"), ("e", "a"), ("a", "e")):
            if word.endswith(formal) and word[: -len(formal)] + familiar in self.words:
                return (word[: -len(formal)] + familiar,)
        # An inflected form of a known word its stem does not find: "merken" of "merk",
        # "looked" of "look" ("guardes" finds "guarda" by its stem, not "guardé" by this).
        endings = () if word[:5] in self.stems else lexicon.ENDINGS
        for ending in endings:
            bare = word[: -len(ending)]
            if word.endswith(ending) and len(bare) >= 4 and bare in self.words:
                return (bare,)
        if len(word) >= 9:
            # German puts the head last: a known tail after a known head (with or without
            # the linking "s" of "Änderungs-").
            for cut in range(4, len(word) - 4):
                head, tail = word[:cut], word[cut:]
                if tail in self.words and (head in self.words or head[:-1] in self.words):
                    return (head if head in self.words else head[:-1], tail)
        return (word,)

    def known(self, word: str) -> bool:
        """Whether some capability's text uses this word (or its stem)."""
        return word in self.words or word[:5] in self.stems

    def negation_meaning(self, clause: Clause) -> tuple[Capability | None, float]:
        """The capability whose example negates the way this clause does, and how closely."""
        query = self._weighted(_negation_bag(clause))
        lead = _negation_lead(clause)
        best: tuple[Capability | None, float] = (None, 0.0)
        for document, document_lead in zip(self.negated, self.negated_leads, strict=True):
            similarity = _dot(query, document.bag) if lead == document_lead else 0.0
            if similarity > best[1]:
                best = (document.capability, similarity)
        return best

    def scores(self, bag: dict[str, float]) -> dict[str, float]:
        """Each capability's similarity to a phrase's features."""
        query = self._weighted(bag)
        best: dict[str, float] = {c.name: 0.0 for c in self.capabilities}
        if not query:
            return best
        for document in self.documents:
            similarity = _dot(query, document.bag)
            name = document.capability.name
            best[name] = max(best[name], similarity)
        for name, profile in self.profiles.items():
            best[name] += PROFILE_WEIGHT * _dot(query, profile)
        return best


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    """The dot product of two sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(f, 0.0) for f, v in a.items())


def _texts(capability: Capability) -> list[str]:
    """The documents of a capability: its title, its summary, what its HTTP binding says it
    does, and the spec's examples."""
    title = str(capability.definition.get("title", ""))
    summary = str(capability.definition.get("description", "")).partition(". ")[0]
    return [t for t in (title, summary, _binding(capability), *capability.examples) if t.strip()]


def _binding(capability: Capability) -> str:
    """What a change's method and path say it does, as words: POST on a collection creates
    one ("create memory"), PATCH updates, DELETE deletes, POST on an action runs it
    ("confirm draft"). Reads say nothing their title does not."""
    segments = [s for s in capability.path.strip("/").split("/")[1:] if s]
    # One item's noun: the path names the collection ("drafts"), the change acts on one.
    literal = [s[:-1] if s.endswith("s") else s for s in segments if not s.startswith("{")]
    if capability.method == "GET" or not literal:
        return ""
    if capability.method == "POST" and len(segments) > 1 and segments[-2].startswith("{"):
        # POST /drafts/{id}/confirm: the last segment is the action, on what is before it.
        return f"{literal[-1]} {literal[-2] if len(literal) > 1 else ''}".strip()
    return f"{lexicon.METHOD_VERBS.get(capability.method, '')} {literal[-1]}".strip()


def _negation_bag(clause: Clause) -> dict[str, float]:
    """The features of a negated clause's words that can say what to do."""
    return _bag((word, 1.0) for word in clause.words if _meaningful(word))


def _negation_lead(clause: Clause) -> tuple[str, ...]:
    """How a negated clause opens, up to its negation, polite words aside: "don't remember
    that" opens with ("do", "not"), "you don't need to remember this" with ("you", "do",
    "not"), which is no instruction to forget."""
    words = list(clause.words)
    while words and words[0] in lexicon.REQUEST_LEADS:
        words.pop(0)
    for position, word in enumerate(words):
        if word in lexicon.NEGATIONS:
            return tuple(words[: position + 1])
    return ()


def _phrase_bag(
    phrase: Phrase, topic: bool, skip: frozenset[int] = frozenset(), known: _Index | None = None
) -> dict[str, float]:
    """The features of a phrase's clauses (but those in skip), its question and its topic."""
    weighted: list[tuple[str, float]] = []
    has_topic = topic
    has_content = False
    for index, clause in enumerate(phrase.clauses):
        if index in skip or clause.contrast:
            continue
        has_content = has_content or clause.content
        weight = CONTENT_WEIGHT if clause.content or clause.relative else 1.0
        for word in clause.words:
            if word == _SLOT:
                has_topic = True
            if not _meaningful(word):
                continue
            if known is not None and not known.known(word):
                has_topic = True
                continue
            weighted.append((word, weight))
    bag = _bag(weighted)
    if not bag:
        return bag  # no word that could say what to do: the shape alone says nothing
    if has_content:
        # "... that <clause>", "...: <words>": something to keep, whatever the verb was.
        bag[CONTENT] = TOPIC_WEIGHT
    if phrase.question:
        bag[QUESTION] = 1.0
    # Whether the user's own subject is there tells a search from a listing ("what do you
    # know about Acme?" / "what do you know about me?").
    bag[TOPIC if has_topic else NO_TOPIC] = TOPIC_WEIGHT
    return bag


@dataclass(frozen=True)
class Answer:
    """The capabilities that fit a phrase, best first, and what the phrase declines."""

    ranked: tuple[tuple[Capability, float], ...]
    # The phrase says not to do this (and asks for nothing else): no capability fits.
    declined: Capability | None = None
    # A negated "forget" read as a save.
    kept: bool = False


# A process has one manifest; tests make a few more.
_INDEXES: PerObject[_Index] = PerObject(bound=8)


def _index(manifest: Manifest) -> _Index:
    """The index of a manifest's capabilities and other operations (made once per manifest)."""
    return _INDEXES.get(manifest, lambda: _Index((*manifest.capabilities, *manifest.elsewhere)))


def _joined(words: tuple[str, ...], index: _Index) -> list[str]:
    """Two words the capabilities' text writes as one ("back up" is "backup")."""
    out: list[str] = []
    for word in words:
        if out and out[-1] + word in index.words:
            out[-1] += word
        else:
            out.append(word)
    return out


def _respelled(phrase: Phrase, index: _Index) -> Phrase:
    """A phrase with its words spelled as the capabilities' text spells them, and a negation
    of nothing but the user's own words read as a contrast ("I meant Thursday, not Tuesday")."""
    clauses = []
    for clause in phrase.clauses:
        words = tuple(part for word in _joined(clause.words, index) for part in index.spelled(word))
        rest = [w for w in words[1:] if _meaningful(w)]
        valued = (
            clause.negated
            and words[0] in lexicon.NEGATIONS
            and bool(rest)
            and not any(index.known(w) for w in rest)
        )
        clauses.append(
            Clause(
                words,
                clause.negated and not valued,
                clause.contrast or valued,
                clause.content,
                clause.relative,
            )
        )
    return Phrase(tuple(clauses), phrase.question, phrase.ids)


def answer(
    manifest: Manifest, query: str, limit: int = 3, embedder: Embedder | None = None
) -> Answer:
    """What a phrase asks for among a manifest's capabilities and other operations; with an
    embedder, an English phrase is also ranked by meaning (module docstring)."""
    framed = _FRAMED.match(query)
    if framed is not None and _frames(manifest, framed.group(1)):
        # A frame that names no action but the fallback before a colon reports the request
        # after it: "user said: remember I'm vegan", "quick one: what do I know about Acme?".
        inner, named = _answer(manifest, framed.group(2), limit, embedder)
        if named:
            return inner
    return _answer(manifest, query, limit, embedder)[0]


def _frames(manifest: Manifest, head: str) -> bool:
    """Whether words before a colon name no action of their own (or only the fallback's)."""
    found, named = _answer(manifest, head, 1, None)
    return not named or (bool(found.ranked) and found.ranked[0][0].fallback)


# Up to a colon (not one between digits, as in 10:30), a dash or an arrow, and what follows.
_FRAMED = re.compile(r"^([^:]{1,60}?)(?:\s*:|\s+[-\u2013\u2014]|\s*->)\s+(\S.*)$", re.DOTALL)


def _answer(
    manifest: Manifest, query: str, limit: int, embedder: Embedder | None
) -> tuple[Answer, bool]:
    """answer() of a whole phrase, and whether the phrase itself names an action (or declines
    or keeps one), not only the fallback's."""
    phrase = parse(query)
    if not any(_meaningful(w) or _ID.match(w) for w in phrase.words):
        return Answer(()), False
    index = _index(manifest)
    phrase = _respelled(phrase, index)
    by_name = {c.name: c for c in index.capabilities}
    negated = frozenset(i for i, c in enumerate(phrase.clauses) if c.negated)
    scores = index.scores(_phrase_bag(phrase, False, negated, index))
    # A request in words no capability uses ("update a memory" with no edit tool) is no
    # confident match for whatever shares its other words.
    asked = [
        w
        for i, c in enumerate(phrase.clauses)
        if i not in negated and not c.content and not c.contrast and not c.relative
        for w in c.words
        if _meaningful(w)
    ]
    coverage = sum(index.known(w) for w in asked) / len(asked) if asked else 1.0
    scores = {name: value * coverage**0.75 for name, value in scores.items()}
    # A question mostly in the user's own words asks what is known about them: "what time is
    # my dentist appointment?", "who owns the billing service?".
    # Not one about a memory in view: "what did that note say at first?".
    topical = (
        phrase.question and coverage < TOPICAL and not phrase.ids and not _referred(phrase, index)
    )
    declined: Capability | None = None
    kept = False
    # What the clauses that negate nothing ask for, clearly: a negated clause after it gives
    # a reason ("delete that memory, it's not true anymore"), it asks for nothing else.
    asked_for = max(scores.values(), default=0.0) >= KEEP_FLOOR
    meanings: list[tuple[Capability, float]] = []
    for position in sorted(negated):
        clause = phrase.clauses[position]
        meant, similarity = index.negation_meaning(clause)
        if meant is not None and similarity >= NEGATION_MATCH:
            # The spec says what this negation means ("don't remember that" forgets).
            meanings.append((meant, similarity))
            continue
        alone = Phrase((Clause(clause.words, False, False, False),), False, frozenset())
        clause_scores = index.scores(_phrase_bag(alone, False, frozenset(), index))
        # What a negation refuses is a change ("don't save", "vergiss nicht"): reads aside.
        changes = {n: s for n, s in clause_scores.items() if by_name[n].method != "GET"}
        top, value = max(changes.items(), key=lambda item: item[1])
        if value < ACTION_FLOOR:
            continue
        undo = _undoer(by_name[top], index.capabilities)
        if (
            undo is not None
            and value >= KEEP_FLOOR
            and not lexicon.CESSATION.isdisjoint(clause.words)
        ):
            # Not to keep something any longer is to forget it: "I don't want you to remember
            # my salary anymore", "ne retiens plus ça".
            scores[undo.name] += KEEP_BONUS + value
            kept = True
            continue
        keeper = _keeper(by_name[top], index.capabilities)
        if keeper is not None and value >= KEEP_FLOOR:
            # Not forgetting is remembering: "don't forget ...", "vergiss nicht, dass ...".
            scores[keeper.name] += KEEP_BONUS + value
            kept = True
        else:
            # A negated verb that is no clear "forget" refuses the change, and the safe
            # reading of a vague one ("no memorices esto") is not to save: nothing to do.
            declined = keeper or by_name[top]
            scores[declined.name] = min(scores[declined.name], 0.0)
    for meant, similarity in meanings:
        # Declining a save and saying not to remember it ("between us, no need to remember
        # it") forgets nothing: nothing was saved.
        if declined is not None and _keeper(meant, index.capabilities) is declined:
            continue
        if asked_for and scores[meant.name] < max(scores.values()):
            continue
        scores[meant.name] += KEEP_BONUS + similarity
        kept = True
    # Dropping something and giving a new value for it is a correction: "scratch the old
    # number, the new one is ...".
    replaced = (
        not phrase.question
        and by_name[max(scores, key=lambda name: scores[name])].method == "DELETE"
        and any(
            i > 0 and not c.content and not lexicon.REPLACEMENTS.isdisjoint(c.words)
            for i, c in enumerate(phrase.clauses)
        )
    )
    if replaced or any(c.contrast for c in phrase.clauses):
        for capability in index.capabilities:
            if capability.method == "PATCH":
                scores[capability.name] += CORRECTION_BONUS
    if phrase.question:
        # A question asks to be told something, not to change anything: a question about a
        # change to a collection ("what did I save last week?") asks to read that collection.
        for capability in index.capabilities:
            if capability.method == "GET":
                continue
            reader = _reader(capability, index.capabilities)
            if reader is not None:
                scores[reader.name] = max(scores[reader.name], scores[capability.name])
            scores[capability.name] *= QUESTION_CHANGE_FACTOR
    elif _looks_back(phrase):
        # An addition to a collection since some time, with nothing to add, asks to read
        # what was added: "gimme the latest ten things you noted", "entries created this
        # week", "Lo último que has apuntado".
        leader = by_name[max(scores, key=lambda name: scores[name])]
        reader = _reader(leader, index.capabilities) if leader.method == "POST" else None
        if reader is not None and "{" not in leader.path:
            scores[reader.name] = max(scores[reader.name], scores[leader.name] + TOPICAL_MARGIN)
    if phrase.ids:
        # An id says which kind of thing the phrase is about: a tool taking no such id is
        # unlikely.
        for capability in index.capabilities:
            if phrase.ids & _id_prefixes(capability):
                scores[capability.name] += ID_BONUS
            else:
                scores[capability.name] *= NO_ID_FACTOR
    elif referred := _referred(phrase, index):
        # So does "that memory", "ce brouillon": one thing in view, not a collection.
        for capability in index.capabilities:
            if referred & _id_prefixes(capability):
                scores[capability.name] += ID_BONUS
            elif "{" not in capability.path:
                scores[capability.name] *= NO_ID_FACTOR
    elif not lexicon.PLURAL_ITEMS.isdisjoint(phrase.words) and lexicon.ITEMS.isdisjoint(
        phrase.words
    ):
        # Several items and no one of them ("list memories filtered by tag", "show the
        # drafts"): a collection, not one item.
        for capability in index.capabilities:
            if "{" in capability.path:
                scores[capability.name] *= NO_ID_FACTOR
    meaning = _meaning(manifest, index, query, embedder) if embedder is not None else None
    if meaning is not None:
        _blend(scores, meaning)
    best = max(scores.values(), default=0.0)
    if declined is not None and not kept and (best < ACTION_FLOOR or not asked):
        # Declined, and nothing else asked but the content not to keep ("unter uns, nicht
        # speichern: ich suche einen neuen Job").
        return Answer((), declined), True
    named = kept or best >= ACTION_FLOOR
    fallback = next((c for c in index.capabilities if c.fallback), None)
    leader = by_name[max(scores, key=lambda name: scores[name])]
    if fallback is not None and leader.method == "GET" and leader.path == _parent(fallback.path):
        # A listing of the collection the fallback searches, of what is about the user's own
        # subject, is a search for it: "what have you saved about the dentist?" (but "...
        # about me?" lists).
        topical = topical or _about(phrase, index)
    if fallback is not None and not kept and (best < ACTION_FLOOR or topical):
        scores[fallback.name] = max(scores[fallback.name], ACTION_FLOOR, best + TOPICAL_MARGIN)
        saver = _saver(fallback, index.capabilities)
        states = _states(phrase)
        if saver is not None and best < ACTION_FLOOR and (states or _gives_content(phrase)):
            # Content handed over, or a fact stated, with no action named and no question:
            # something to keep ("Für später: der Schlüssel hängt beim Hausmeister", "btw my
            # sister's birthday is on March 3rd"), with the search of what is kept next; a
            # fact that is so "now" replaces an older one ("my manager is now Tom").
            editor = _editor(saver, index.capabilities)
            now = states and not (lexicon.NOW | lexicon.REPLACEMENTS).isdisjoint(phrase.words)
            keeper = editor if now and editor is not None else saver
            scores[keeper.name] = scores[fallback.name] + TOPICAL_MARGIN
    ranked = [(by_name[n], round(s, 3)) for n, s in scores.items() if s > 0]
    order = {c.name: i for i, c in enumerate(index.capabilities)}
    ranked.sort(key=lambda pair: (-pair[1], order[pair[0].name]))
    return Answer(tuple(ranked[:limit]), declined, kept), named


def rank(
    manifest: Manifest, query: str, limit: int = 3, embedder: Embedder | None = None
) -> list[tuple[Capability, float]]:
    """Capabilities (and other operations) best matching a phrase, best first, with scores.

    Only those that score above zero are returned; a phrase of nothing but grammar, or one
    that declines an action and asks for nothing else, finds nothing."""
    return list(answer(manifest, query, limit, embedder).ranked)


class Embedder(Protocol):
    """An embedding model (models/embeddings.Provider is one): unit-length rows per text."""

    model: str

    def embed(self, texts: list[str]) -> Any:
        """One unit-length row per text (a numpy array)."""


# The capabilities' documents as vectors, per manifest and model: (matrix, the capability each
# row is of).
_VECTORS: PerObject[tuple[Any, Any]] = PerObject(bound=8)


def prepared(manifest: Manifest, embedder: Embedder) -> bool:
    """Whether the capabilities' vectors of this model are ready (ranking by meaning is quick)."""
    return _VECTORS.has(manifest, embedder.model)


def prepare(manifest: Manifest, embedder: Embedder) -> tuple[Any, Any]:
    """The vectors of every capability's documents (its texts, as the lexical ranking reads
    them) by this model, and the capability each is of; made once per manifest and model."""

    def make() -> tuple[Any, Any]:
        import numpy as np

        texts, owners = [], []
        for number, capability in enumerate(_index(manifest).capabilities):
            for text in _texts(capability):
                texts.append(text)
                owners.append(number)
        matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
        return matrix, np.asarray(owners)

    return _VECTORS.get(manifest, make, embedder.model)


def _meaning(
    manifest: Manifest, index: _Index, query: str, embedder: Embedder
) -> dict[str, float] | None:
    """How close an English phrase is in meaning to each capability (its closest document, as
    cosine); None for another language, or when the model fails (lexical alone then)."""
    if not language.is_english(query):
        return None
    import numpy as np

    try:
        matrix, owners = prepare(manifest, embedder)
        vector = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
    except Exception:  # a model that fails costs the ranking its meaning, never the answer
        return None
    closest = np.full(len(index.capabilities), -1.0)
    np.maximum.at(closest, owners, matrix @ vector)
    return {c.name: float(closest[i]) for i, c in enumerate(index.capabilities)}


def _blend(scores: dict[str, float], meaning: dict[str, float]) -> None:
    """Scale each capability's score down by how far it is behind the phrase's closest one in
    meaning: the model reorders what the words found, it adds and removes nothing."""
    closest = max(meaning.values())
    for name, value in meaning.items():
        if scores[name] > 0:
            scores[name] *= max(SEMANTIC_FLOOR, 1 + SEMANTIC_WEIGHT * (value - closest))


def _keeper(capability: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """For a capability that forgets (DELETE on an item), the one that keeps: POST on its
    collection."""
    if capability.method != "DELETE" or not capability.path.endswith("}"):
        return None
    collection = capability.path.rsplit("/", 1)[0]
    return next(
        (c for c in capabilities if c.method == "POST" and c.path == collection and c.reachable),
        None,
    )


def _saver(fallback: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """The capability that adds to the collection the fallback searches (POST on it)."""
    collection = _parent(fallback.path)
    return next((c for c in capabilities if c.method == "POST" and c.path == collection), None)


def _editor(saver: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """The capability that edits an item of the collection a saver adds to (PATCH on it)."""
    return next(
        (c for c in capabilities if c.method == "PATCH" and _parent(c.path) == saver.path), None
    )


def _looks_back(phrase: Phrase) -> bool:
    """Whether a phrase that asks no question and hands over nothing points back in time
    ("latest", "since Monday", "dernier", "último")."""
    return (
        not lexicon.RECENT.isdisjoint(phrase.words)
        and not any(c.content for c in phrase.clauses)
        and not _states(phrase)
    )


def _states(phrase: Phrase) -> bool:
    """Whether a phrase that asks nothing states a fact: a subject, then the verb "to be"."""
    return not phrase.question and any(
        not lexicon.COPULAS.isdisjoint(c.words[1:]) for c in phrase.clauses if not c.content
    )


def _gives_content(phrase: Phrase) -> bool:
    """Whether a phrase that asks nothing hands over content: after a colon or a "that"."""
    return not phrase.question and any(c.content and c.words for c in phrase.clauses)


def _parent(path: str) -> str:
    """The path a path is under: the collection a search searches."""
    return path.rsplit("/", 1)[0]


def _about(phrase: Phrase, index: _Index) -> bool:
    """Whether a phrase says what it is about in the user's own words ("about the dentist",
    "the memories that mention Berlin")."""
    for clause in phrase.clauses:
        if (
            clause.relative
            and lexicon.ORIGINS.isdisjoint(clause.words)
            and any(_meaningful(w) and not index.known(w) for w in clause.words)
        ):
            # Not "... that came in from Slack": where a memory came from lists (by source).
            return True
        words = [
            w for w in clause.words if w not in lexicon.ARTICLES and w not in lexicon.POSSESSIVES
        ]
        for word, after in itertools.pairwise(words):
            if word in lexicon.ABOUT and _meaningful(after) and not index.known(after):
                return True
    return False


def _referred(phrase: Phrase, index: _Index) -> frozenset[str]:
    """The kinds of id a phrase points at with a demonstrative ("that memory", "ce brouillon")."""
    found: set[str] = set()
    for clause in phrase.clauses:
        if clause.content:
            continue
        for word, after in zip(clause.words, clause.words[1:], strict=False):
            if word in lexicon.DEMONSTRATIVES:
                found.update(index.items.get(after, ()))
    return frozenset(found)


def _undoer(capability: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """For a capability that adds to a collection (POST on it), the one that deletes an item
    of it."""
    if capability.method != "POST":
        return None
    return next(
        (
            c
            for c in capabilities
            if c.method == "DELETE" and c.path.rsplit("/", 1)[0] == capability.path
        ),
        None,
    )


def _reader(capability: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """For a capability that adds to a collection (POST on it), the one that lists it (GET);
    for one that edits an item (PATCH), the one that lists the item's changes (a GET on a
    collection under it: "who changed that note?" asks for its history)."""
    if capability.method == "PATCH":
        return next(
            (
                c
                for c in capabilities
                if c.method == "GET"
                and c.path.startswith(capability.path + "/")
                and "{" not in c.path[len(capability.path) :]
            ),
            None,
        )
    if capability.method != "POST":
        return None
    same = next((c for c in capabilities if c.method == "GET" and c.path == capability.path), None)
    if same is not None or "{" not in capability.path:
        return same
    # An action on an item: the collection it is in ("who changed it last?" about a restore's
    # revisions, "anything I need to approve?" about the drafts a confirm takes).
    above = [
        c
        for c in capabilities
        if c.method == "GET"
        and not c.path.endswith("}")
        and capability.path.startswith(c.path + "/")
    ]
    return max(above, key=lambda c: len(c.path), default=None)


def _id_prefixes(capability: Capability) -> frozenset[str]:
    """The id prefixes its path arguments take, as their descriptions spell them (mem_...)."""
    properties = capability.definition.get("inputSchema", {}).get("properties", {})
    found: set[str] = set()
    for name, binding in capability.arguments.items():
        if binding.get("in") == "path":
            found.update(_ID_HINT.findall(str(properties.get(name, {}).get("description", ""))))
    return frozenset(found)
