"""Rank tools for a plain-language phrase: deterministic, read from the tools' own text.

Each tool gets a signature from its title, summary, description, path and name: the action its
title (else summary) leads with, the objects it is about, whether it works on one item, and a
bag of words. A phrase is read with the same lexicon (mcp/lexicon.py): its lead action, the
objects it names, whether it is a question, ids, and topic words the lexicon does not know
("wife", "Acme"). A tool scores for agreeing on the action and the objects, plus a little word
overlap (BM25). Two rules fill in what people leave out: a topic without an action is a search
("what did we decide last week"), and memories without an action or a topic are a listing
("what are my memories").
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from memory_bank.mcp import lexicon
from memory_bank.mcp.manifest import Capability, Manifest
from memory_bank.search.analyzer import terms

# Where a word in a tool's text says most about it.
FIELD_WEIGHTS = (
    ("title", 3.0),
    ("summary", 2.0),
    ("path", 2.0),
    ("name", 1.5),
    ("description", 1.0),
)
# An id in a parameter's description: "A memory id ... (mem_...)".
_ID_HINT = re.compile(r"\b([a-z][a-z0-9]*)_\.\.\.")
_ID_TOKEN = re.compile(r"^([a-z][a-z0-9]*)_[a-z0-9]+$")
_WORD = re.compile(r"[a-z0-9_]+(?:[-'][a-z0-9_]+)*")
_METHOD_ACTIONS = {"PUT": "configure", "PATCH": "edit", "DELETE": "delete"}
_READS = frozenset({"find", "list", "fetch"})


def _lex(table: dict[str, str]) -> tuple[tuple[tuple[str, ...], str], ...]:
    """(word sequence, concept) for every entry of a lexicon table, longest first."""
    entries: list[tuple[tuple[str, ...], str]] = []
    for concept, spec in table.items():
        words, _, phrases = spec.partition("|")
        entries.extend(((word,), concept) for word in words.split())
        entries.extend(
            (tuple(tokens(phrase)), concept) for phrase in phrases.split("|") if phrase.strip()
        )
    return tuple(sorted(entries, key=lambda entry: -len(entry[0])))


def tokens(text: str) -> list[str]:
    """Lower-case words; contractions stay whole ("don't forget"), a possessive 's goes."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    out = []
    for token in _WORD.findall(text):
        if token.endswith("'s") and token not in lexicon.CONTRACTIONS:
            token = token[:-2]
        out.append(token)
    return out


_ACTIONS = _lex(lexicon.ACTIONS)
_OBJECTS = _lex(lexicon.OBJECTS)
_KNOWN = frozenset(word for seq, _ in _ACTIONS + _OBJECTS for word in seq)


def _concepts(words: list[str]) -> tuple[list[tuple[int, str, str]], set[int]]:
    """(position, "action" or "object", concept) in order, and the positions they used.

    At each position the longest entry wins (an action on a tie), and uses its words."""
    found: list[tuple[int, str, str]] = []
    used: set[int] = set()
    i = 0
    while i < len(words):
        best: tuple[int, str, str] | None = None
        for kind, entries in (("action", _ACTIONS), ("object", _OBJECTS)):
            for seq, concept in entries:
                if (best is None or len(seq) > best[0]) and tuple(words[i : i + len(seq)]) == seq:
                    best = (len(seq), kind, concept)
        if best is None:
            i += 1
            continue
        found.append((i, best[1], best[2]))
        used.update(range(i, i + best[0]))
        i += best[0]
    return found, used


@dataclass
class Signature:
    """What a tool is about, read from its own text."""

    capability: Capability
    primary: str = "read"
    method_action: str | None = None
    actions: dict[str, float] = field(default_factory=dict)
    objects: dict[str, float] = field(default_factory=dict)
    core: set[str] = field(default_factory=set)  # objects of its title, summary, path, name
    item: bool = False
    id_prefixes: frozenset[str] = frozenset()
    words: dict[str, float] = field(default_factory=dict)
    length: float = 0.0


def signature(capability: Capability) -> Signature:
    """A tool's signature (kept per capability: a loaded manifest does not change)."""
    cached = _SIGNATURES.get(id(capability))
    if cached is not None and cached[0] is capability:
        return cached[1]
    sig = _signature(capability)
    # The capability is kept with it, so its id cannot be reused by another object.
    _SIGNATURES[id(capability)] = (capability, sig)
    return sig


def _signature(capability: Capability) -> Signature:
    """A tool's signature from its title, summary, description, path and name."""
    title = capability.definition.get("title", "")
    description = capability.definition.get("description", "")
    summary, _, rest = description.partition(". ")
    texts = {
        "title": title,
        "summary": summary,
        "path": " ".join(
            s for s in capability.path.split("/") if s and not s.startswith("{") and s != "v1"
        ),
        "name": re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", capability.name),
        "description": rest,
    }
    sig = Signature(capability, item="{" in capability.path)
    leads: dict[str, str] = {}
    for name, weight in FIELD_WEIGHTS:
        words = tokens(texts[name])
        for _, kind, concept in _concepts(words)[0]:
            bag = sig.actions if kind == "action" else sig.objects
            bag[concept] = bag.get(concept, 0.0) + weight
            if kind == "action":
                leads.setdefault(name, concept)
            elif name != "description":
                sig.core.add(concept)
        for term in terms(" ".join(w for w in words if w not in lexicon.STOP)):
            sig.words[term] = sig.words.get(term, 0.0) + weight
            sig.length += weight
    sig.primary = leads.get("title") or leads.get("summary") or "read"
    if sig.primary in lexicon.GENERIC_ACTIONS:
        # "Show ..." or "Get ...": a tool whose answer holds a list lists, else it fetches one.
        sig.primary = "list" if _returns_many(capability) else "fetch"
    sig.method_action = _METHOD_ACTIONS.get(capability.method)
    sig.id_prefixes = _id_prefixes(capability)
    return sig


_SIGNATURES: dict[int, tuple[Capability, Signature]] = {}


def _returns_many(capability: Capability) -> bool:
    """Whether the tool's result holds a list (a page or search results) at its top level."""
    schema = capability.definition.get("outputSchema") or {}
    options = [schema, *schema.get("anyOf", [])]
    return any(
        isinstance(prop, dict) and prop.get("type") == "array"
        for option in options
        for prop in option.get("properties", {}).values()
    )


def _id_prefixes(capability: Capability) -> frozenset[str]:
    """The id prefixes its path arguments take, as their descriptions spell them (mem_...)."""
    properties = capability.definition.get("inputSchema", {}).get("properties", {})
    found: set[str] = set()
    for name, binding in capability.arguments.items():
        if binding.get("in") == "path":
            found.update(_ID_HINT.findall(str(properties.get(name, {}).get("description", ""))))
    return frozenset(found)


@dataclass(frozen=True)
class Phrase:
    """What a phrase asks, read with the lexicon."""

    words: tuple[str, ...]
    question: bool
    actions: tuple[str, ...]
    objects: frozenset[str]
    topic: tuple[str, ...]
    ids: frozenset[str]  # the prefixes of ids it carries (mem, mdr)
    plural: bool
    singular: bool


@lru_cache(maxsize=256)
def parse(text: str) -> Phrase:
    """The intent of a phrase: actions in order, objects, question or not, topic words, ids."""
    words = tokens(text)
    for name in lexicon.PRODUCT_NAMES:
        words = _without(words, name)
    expanded = [w for word in words for w in lexicon.CONTRACTIONS.get(word, word).split()]
    first = expanded[0] if expanded else ""
    # "don't forget ..." is a command, and "can you save that?" a request, not questions.
    question = (
        expanded[:2] != ["do", "not"]
        and first not in lexicon.REQUEST_LEADS
        and (text.strip().endswith("?") or first in lexicon.QUESTION_LEADS)
    )
    found, used = _concepts(words)
    actions: list[str] = []
    objects: set[str] = set()
    for position, kind, concept in found:
        if kind == "object":
            objects.add(concept)
        elif question and concept == "create" and words[position] in lexicon.RECALL_IN_QUESTIONS:
            actions.append("find")  # "do you remember ...?" asks; "remember ..." tells
        else:
            actions.append(concept)
    ids = frozenset(m.group(1) for w in words if (m := _ID_TOKEN.match(w)))
    topic = tuple(
        w
        for i, w in enumerate(words)
        if i not in used
        and w not in lexicon.STOP
        and w not in lexicon.CONTRACTIONS
        and w not in _KNOWN
        and not _ID_TOKEN.match(w)
        and not w.isdigit()
        and len(w) > 1
    )
    plural = any(w in lexicon.PLURALS for w in words)
    singular = not plural and any(w in lexicon.SINGULARS for w in words)
    return Phrase(
        tuple(words), question, tuple(actions), frozenset(objects), topic, ids, plural, singular
    )


def _without(words: list[str], name: tuple[str, ...]) -> list[str]:
    """The words with every occurrence of a multi-word name taken out."""
    out: list[str] = []
    i = 0
    while i < len(words):
        if tuple(words[i : i + len(name)]) == name:
            i += len(name)
            continue
        out.append(words[i])
        i += 1
    return out


def _lead(phrase: Phrase) -> tuple[str | None, frozenset[str]]:
    """The action a phrase leads with, after the rules for what people leave out, and the
    objects it is about (a question about a change asks for a history)."""
    specific = [a for a in phrase.actions if a not in lexicon.GENERIC_ACTIONS]
    lead = specific[0] if specific else None
    objects = phrase.objects
    if phrase.question and lead in {"edit", "delete", "create"}:
        # "What did admins change?", "who deleted ...?": read what happened, don't do it.
        lead, objects = None, objects | {"history"}
    if lead == "find" and phrase.question and not phrase.topic and not phrase.ids:
        lead = "list"  # "do you remember anything?": the whole collection
    if lead is None and phrase.topic and not objects & lexicon.SPECIFIC_OBJECTS:
        lead = "find"  # a topic and no action: "what did we decide last week"
    if lead is None and not phrase.topic and objects <= {"memory"}:
        lead = "fetch" if phrase.ids else "list"  # "what are my memories"
    return lead, objects


def rank(manifest: Manifest, query: str, limit: int = 3) -> list[tuple[Capability, float]]:
    """Capabilities best matching a phrase, best first, with their scores (ties in spec order).

    Only tools that score above zero are returned; a phrase of nothing but stop-words finds
    nothing."""
    phrase = parse(query)
    if not any(w not in lexicon.STOP for w in phrase.words):
        return []
    signatures = [signature(c) for c in manifest.capabilities]
    lead, objects = _lead(phrase)
    scorer = _Scorer(phrase, lead, objects, signatures)
    scored = [(s.capability, round(scorer.score(s), 3)) for s in signatures]
    scored = [pair for pair in scored if pair[1] > 0]
    scored.sort(key=lambda pair: -pair[1])  # stable: equal scores keep spec order
    return scored[:limit]


class _Scorer:
    """Scores tools for one phrase."""

    def __init__(
        self,
        phrase: Phrase,
        lead: str | None,
        objects: frozenset[str],
        signatures: list[Signature],
    ) -> None:
        self.phrase = phrase
        self.lead = lead
        self.objects = objects
        self.others = [a for a in phrase.actions if a not in lexicon.GENERIC_ACTIONS][1:]
        self.query_terms = terms(" ".join(w for w in phrase.words if w not in lexicon.STOP))
        self.count = len(signatures)
        self.average = sum(s.length for s in signatures) / max(1, self.count)
        self.df: dict[str, int] = {}
        for s in signatures:
            for term in s.words:
                self.df[term] = self.df.get(term, 0) + 1

    def score(self, sig: Signature) -> float:
        """One tool's score: action, objects, one-or-many cues, then word overlap."""
        return self._action(sig) + self._objects(sig) + self._cues(sig) + self._words(sig)

    def _action(self, sig: Signature) -> float:
        """Agreement on what to do: the lead action most, further actions a little."""
        score = 0.0
        doing = {sig.primary, sig.method_action}
        if self.lead in doing:
            score += 6.0
        elif self.lead in sig.actions:
            score += 1.5 * min(sig.actions[self.lead], 3.0) / 3.0
        for action in self.others:
            score += 2.0 if action in doing else 0.5 if action in sig.actions else 0.0
        reading = self.lead is None or self.lead in _READS
        asks = self.phrase.question or "read" in self.phrase.actions
        if reading and asks and sig.capability.method == "GET":
            score += 1.5
        return score

    def _objects(self, sig: Signature) -> float:
        """Agreement on what it is done to; a tool about something else costs."""
        score = 0.0
        for concept in self.objects:
            weight = lexicon.OBJECT_WEIGHTS.get(concept, lexicon.SPECIFIC_WEIGHT)
            if concept in sig.objects:
                score += weight * min(sig.objects[concept], 4.0) / 4.0
            if concept in lexicon.SPECIFIC_OBJECTS and concept not in sig.core:
                score -= 2.0
        return score - 3.0 * len((sig.core & lexicon.SPECIFIC_OBJECTS) - self.objects)

    def _cues(self, sig: Signature) -> float:
        """Ids and singular nouns point at one item, plurals at a collection."""
        score = 4.0 if self.phrase.ids & sig.id_prefixes else 0.0
        if self.phrase.plural and not sig.item and sig.capability.method == "GET":
            score += 1.0
        if self.phrase.singular and sig.item:
            score += 1.0
        return score

    def _words(self, sig: Signature) -> float:
        """A little BM25 over the tool's field-weighted words."""
        k1, b = 1.2, 0.75
        score = 0.0
        for term in self.query_terms:
            tf = sig.words.get(term, 0.0)
            if not tf:
                continue
            df = self.df[term]
            idf = math.log(1 + (self.count - df + 0.5) / (df + 0.5))
            norm = tf + k1 * (1 - b + b * sig.length / self.average)
            score += 0.6 * idf * tf * (k1 + 1) / norm
        return score
