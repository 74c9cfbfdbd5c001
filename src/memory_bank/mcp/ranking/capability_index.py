"""The capability index: every capability's texts as weighted features (words, stems and
character 4-grams), how rare each is, a phrase's words spelled as the capabilities spell them,
and how the capabilities relate by method and path (which one keeps, undoes, reads, edits)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from memory_bank.caches import PerObject
from memory_bank.mcp import language, lexicon
from memory_bank.mcp.manifest import Capability, Manifest
from memory_bank.mcp.ranking import tuning
from memory_bank.mcp.ranking.phrase import (
    ID_HINT,
    PLACEHOLDER,
    SLOT,
    Clause,
    Phrase,
    meaningful,
    parse,
    tokens,
)

# Feature names for a question and for content the capabilities do not know (a topic).
QUESTION, TOPIC, NO_TOPIC, CONTENT = "<?>", "<topic>", "<no topic>", "<content>"

# Tuned on the tune halves of the phrasing sets: tuning.json says what each does, and
# `python -m memory_bank.mcp.ranking.tune` measures a value.
TOPIC_WEIGHT = tuning.value("TOPIC_WEIGHT")
CONTENT_WEIGHT = tuning.value("CONTENT_WEIGHT")
STEM_WEIGHT = tuning.value("STEM_WEIGHT")
GRAM_WEIGHT = tuning.value("GRAM_WEIGHT")
PROFILE_WEIGHT = tuning.value("PROFILE_WEIGHT")


def _features(word: str) -> dict[str, float]:
    """A word's features: itself, its stem (first five letters) and its character 4-grams."""
    out = {f"w:{word}": 1.0, f"s:{word[:5]}": STEM_WEIGHT}
    padded = f"#{word}#"
    grams = [padded[i : i + 4] for i in range(len(padded) - 3)]
    for gram in grams:
        out[f"g:{gram}"] = out.get(f"g:{gram}", 0.0) + GRAM_WEIGHT / len(grams)
    return out


def _bag(words: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Summed features of weighted words."""
    out: dict[str, float] = {}
    for word, weight in words:
        for feature, value in _features(word).items():
            out[feature] = out.get(feature, 0.0) + value * weight
    return out


@dataclass
class Document:
    """One text of a capability, as features."""

    capability: Capability
    bag: dict[str, float]


class Index:
    """Every capability's documents, and how rare each feature is among capabilities."""

    def __init__(self, capabilities: tuple[Capability, ...]) -> None:
        self.capabilities = capabilities
        self.documents: list[Document] = []
        # The negated clauses of examples that say something by negating ("don't forget ..."):
        # what a phrase's negated clause means when it matches one of them.
        self.negated: list[Document] = []
        self.negated_leads: list[tuple[str, ...]] = []
        self.profiles: dict[str, dict[str, float]] = {}
        self.words: set[str] = set()
        self.stems: set[str] = set()
        self.evidence = _evidence(capabilities)
        # Each capability's texts by the language they are in ("" for its title, summary and
        # binding, and an example no language's words tell): a phrase meets those of its own
        # language and the common ones, so a language added to the spec moves no other's score.
        self.spoken: dict[str, dict[str, dict[str, float]]] = {}
        # The language each text was told to be in ("" for none): the nearest examples read it.
        self.language_of: dict[str, str] = {}
        examples = {text for capability in capabilities for text in capability.examples}
        for capability in capabilities:
            profile: dict[str, float] = {}
            spoken = self.spoken.setdefault(capability.name, {})
            for text in capability_texts(capability):
                shape = parse(text)
                found = self.detect(text) if text in examples else ()
                code = found[0] if len(found) == 1 else ""
                self.language_of[text] = code
                part = spoken.setdefault(code, {})
                # A negated clause says what the example does by what it refuses: it is
                # matched against a phrase's negated clauses only.
                refused = frozenset(i for i, c in enumerate(shape.clauses) if c.negated)
                bag = phrase_bag(shape, self._topic_of_example(text), refused)
                self.documents.append(Document(capability, bag))
                for position in refused:
                    negation_bag = _negation_bag(shape.clauses[position], shape.lex)
                    self.negated.append(Document(capability, negation_bag))
                    self.negated_leads.append(_negation_lead(shape.clauses[position], shape.lex))
                    # Its words count for rarity, though not for the capability's profile.
                    for feature in negation_bag:
                        profile.setdefault(feature, 0.0)
                for feature, value in bag.items():
                    profile[feature] = profile.get(feature, 0.0) + value
                    part[feature] = part.get(feature, 0.0) + value
                for word in shape.words:
                    if meaningful(word, shape.lex):
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
            Document(d.capability, self._weighted(d.bag)) for d in self.documents if d.bag
        ]
        self.profiles = {name: self._weighted(p) for name, p in self.profiles.items()}
        self._profiles_in: dict[tuple[str, ...], dict[str, dict[str, float]]] = {}
        self.negated = [Document(d.capability, self._weighted(d.bag)) for d in self.negated]
        # The kinds of id (mem, mdr) each item noun stands for: those of the capabilities
        # whose examples use it.
        self.items: dict[str, frozenset[str]] = {}
        for capability in capabilities:
            kinds = id_prefixes(capability)
            used = {w for text in capability.examples for w in parse(text).words}
            for noun in lexicon.of().ITEMS & used if kinds else ():
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

    def spelled(self, word: str, lex: lexicon.Words) -> tuple[str, ...]:
        """A word as the capabilities' text spells it: in the other English spelling, a
        Spanish imperative without its pronouns ("bórralo" is "borra"), a compound of two known
        words ("Änderungsverlauf" is "anderung verlauf"), without an inflection; unchanged when
        none fits."""
        if word in self.words or len(word) < 5:
            return (word,)
        # Another spelling ("organization" is "organisation"), an imperative without its
        # pronouns ("bórralo" is "borra"), with or without its "e" ("Änder" of "Ändere"), or
        # a formal imperative's vowel swapped ("elimine" of "elimina"): mcp/languages/.
        for one, other in lex.RESPELL_INFIXES:
            if one in word and word.replace(one, other) in self.words:
                return (word.replace(one, other),)
        suffixes = [(pronoun, "") for pronoun in lex.ENCLITICS] + lex.RESPELL_SUFFIXES
        for ending, other in suffixes:
            bare = word[: len(word) - len(ending)]
            if word.endswith(ending) and bare + other in self.words:
                return (bare + other,)
        # An inflected form of a known word its stem does not find: "merken" of "merk",
        # "looked" of "look" ("guardes" finds "guarda" by its stem, not "guardé" by this).
        endings = () if word[:5] in self.stems else lex.ENDINGS
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

    def detect(self, text: str) -> tuple[str, ...]:
        """The languages a text may be in, by its words and the examples' (language.detect)."""
        return language.detect(tokens(text), text, self.evidence)

    def parse(self, text: str) -> Phrase:
        """A phrase read with the closed-class words of the language its words (and the
        examples') say it is in."""
        return parse(text, self.detect(text))

    def profiles_in(self, languages: tuple[str, ...]) -> dict[str, dict[str, float]]:
        """Each capability's texts together, in these languages and in none (weighted)."""
        if languages not in self._profiles_in:
            made: dict[str, dict[str, float]] = {}
            for name, spoken in self.spoken.items():
                together: dict[str, float] = {}
                for code in ("", *languages):
                    for feature, value in spoken.get(code, {}).items():
                        together[feature] = together.get(feature, 0.0) + value
                made[name] = self._weighted(together)
            self._profiles_in[languages] = made
        return self._profiles_in[languages]

    def known(self, word: str) -> bool:
        """Whether some capability's text uses this word (or its stem)."""
        return word in self.words or word[:5] in self.stems

    def negation_meaning(
        self, clause: Clause, lex: lexicon.Words
    ) -> tuple[Capability | None, float]:
        """The capability whose example negates the way this clause does, and how closely."""
        query = self._weighted(_negation_bag(clause, lex))
        lead = _negation_lead(clause, lex)
        best: tuple[Capability | None, float] = (None, 0.0)
        for document, document_lead in zip(self.negated, self.negated_leads, strict=True):
            similarity = _dot(query, document.bag) if lead == document_lead else 0.0
            if similarity > best[1]:
                best = (document.capability, similarity)
        return best

    def scores(
        self, bag: dict[str, float], languages: tuple[str, ...] = lexicon.CODES
    ) -> dict[str, float]:
        """Each capability's similarity to a phrase's features (in these languages)."""
        query = self._weighted(bag)
        best: dict[str, float] = {c.name: 0.0 for c in self.capabilities}
        if not query:
            return best
        for document in self.documents:
            similarity = _dot(query, document.bag)
            name = document.capability.name
            best[name] = max(best[name], similarity)
        for name, profile in self.profiles_in(languages).items():
            best[name] += PROFILE_WEIGHT * _dot(query, profile)
        return best


def _evidence(capabilities: tuple[Capability, ...]) -> language.Evidence:
    """Each language's closed-class words and the words of the examples in it: what tells which
    language a phrase is in ("recuerda" is Spanish, as the examples spell it). An example's
    language is told by the words of those already told, until no more are."""
    evidence = language.CLOSED_CLASS
    examples = [text for capability in capabilities for text in capability.examples]
    told: dict[str, str] = {}
    while True:
        for text in examples:
            found = language.detect(tokens(text), text, evidence)
            if len(found) == 1:
                told[text] = found[0]
        spoken = {code: set(words) for code, words in lexicon.VOCABULARY.items()}
        for text, code in told.items():
            spoken[code].update(w for w in tokens(text) if w != SLOT)
        grown = language.Evidence({code: frozenset(w) for code, w in spoken.items()})
        if grown.words == evidence.words:
            return evidence
        evidence = grown


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    """The dot product of two sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(f, 0.0) for f, v in a.items())


def capability_texts(capability: Capability) -> list[str]:
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


def _negation_bag(clause: Clause, lex: lexicon.Words) -> dict[str, float]:
    """The features of a negated clause's words that can say what to do."""
    return _bag((word, 1.0) for word in clause.words if meaningful(word, lex))


def _negation_lead(clause: Clause, lex: lexicon.Words) -> tuple[str, ...]:
    """How a negated clause opens, up to its negation, polite words aside: "don't remember
    that" opens with ("do", "not"), "you don't need to remember this" with ("you", "do",
    "not"), which is no instruction to forget."""
    words = list(clause.words)
    while words and words[0] in lex.REQUEST_LEADS:
        words.pop(0)
    for position, word in enumerate(words):
        if word in lex.NEGATIONS:
            return tuple(words[: position + 1])
    return ()


def phrase_bag(
    phrase: Phrase, topic: bool, skip: frozenset[int] = frozenset(), known: Index | None = None
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
            if word == SLOT:
                has_topic = True
            if not meaningful(word, phrase.lex):
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


# A process has one manifest; tests make a few more.
_INDEXES: PerObject[Index] = PerObject(bound=8)


def forget_indexes() -> None:
    """Drop every index made (a constant it was made with changed: tuning)."""
    global _INDEXES
    _INDEXES = PerObject(bound=8)


def index_of(manifest: Manifest) -> Index:
    """The index of a manifest's capabilities and other operations (made once per manifest)."""
    return _INDEXES.get(manifest, lambda: Index((*manifest.capabilities, *manifest.elsewhere)))


def _joined(words: tuple[str, ...], index: Index) -> list[str]:
    """Two words the capabilities' text writes as one ("back up" is "backup"); never an article
    of any language and its noun ("a nota" is no "anota", whichever language "a" is in)."""
    out: list[str] = []
    articles = lexicon.of().ARTICLES
    for word in words:
        if out and out[-1] not in articles and out[-1] + word in index.words:
            out[-1] += word
        else:
            out.append(word)
    return out


def respelled(phrase: Phrase, index: Index) -> Phrase:
    """A phrase with its words spelled as the capabilities' text spells them, and a negation
    of nothing but the user's own words read as a contrast ("I meant Thursday, not Tuesday")."""
    clauses = []
    lex = phrase.lex
    for clause in phrase.clauses:
        joined = _joined(clause.words, index)
        words = tuple(part for word in joined for part in index.spelled(word, lex))
        rest = [w for w in words[1:] if meaningful(w, lex)]
        valued = (
            clause.negated
            and words[0] in lex.NEGATIONS
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
    return Phrase(tuple(clauses), phrase.question, phrase.ids, phrase.languages)


def keeper_of(capability: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """For a capability that forgets (DELETE on an item), the one that keeps: POST on its
    collection."""
    if capability.method != "DELETE" or not capability.path.endswith("}"):
        return None
    collection = capability.path.rsplit("/", 1)[0]
    return next(
        (c for c in capabilities if c.method == "POST" and c.path == collection and c.reachable),
        None,
    )


def saver_of(fallback: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """The capability that adds to the collection the fallback searches (POST on it)."""
    collection = parent_path(fallback.path)
    return next((c for c in capabilities if c.method == "POST" and c.path == collection), None)


def editor_of(saver: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
    """The capability that edits an item of the collection a saver adds to (PATCH on it)."""
    return next(
        (c for c in capabilities if c.method == "PATCH" and parent_path(c.path) == saver.path), None
    )


def parent_path(path: str) -> str:
    """The path a path is under: the collection a search searches."""
    return path.rsplit("/", 1)[0]


def undoer_of(capability: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
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


def reader_of(capability: Capability, capabilities: tuple[Capability, ...]) -> Capability | None:
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


def id_prefixes(capability: Capability) -> frozenset[str]:
    """The id prefixes its path arguments take, as their descriptions spell them (mem_...)."""
    properties = capability.definition.get("inputSchema", {}).get("properties", {})
    found: set[str] = set()
    for name, binding in capability.arguments.items():
        if binding.get("in") == "path":
            found.update(ID_HINT.findall(str(properties.get(name, {}).get("description", ""))))
    return frozenset(found)
