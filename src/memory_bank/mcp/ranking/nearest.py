"""The nearest examples: how close a phrase is to each capability's texts by their character
3- to 5-grams, TF-IDF weighted, learned from the spec alone (its examples in each language),
and the rules' scores blended with it (NEAREST_WEIGHT; 0, off, as tuning.json says why)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from memory_bank.caches import PerObject
from memory_bank.mcp import lexicon
from memory_bank.mcp.manifest import Manifest
from memory_bank.mcp.ranking import tuning
from memory_bank.mcp.ranking.capability_index import Index, capability_texts, index_of
from memory_bank.mcp.ranking.phrase import SLOT, tokens
from memory_bank.mcp.ranking.vocabulary import Vocabulary

# Tuned on the tune halves of the phrasing sets: tuning.json says what each does, and
# `python -m memory_bank.mcp.ranking.tune` measures a value.
NEAREST_WEIGHT = tuning.value("NEAREST_WEIGHT")
NEAREST_BEST_OF = tuning.value("NEAREST_BEST_OF")
NEAREST_CONTENT = tuning.value("NEAREST_CONTENT")
NEAREST_CLAUSE = tuning.value("NEAREST_CLAUSE")

# The language of a capability's title, summary and binding, and of an example no language's
# words tell: compared with every phrase.
COMMON = ""


def grams(text: str, smallest: int = 3, largest: int = 5) -> Counter[str]:
    """A text's character n-grams, each word's own (a space at either end, so a gram at a
    word's start or end says so), on its folded words, the placeholder left out."""
    found: Counter[str] = Counter()
    for word in tokens(text):
        if word == SLOT:
            continue
        padded = f" {word} "
        for size in range(smallest, largest + 1):
            for start in range(len(padded) - size + 1):
                found[padded[start : start + size]] += 1
    return found


class _Part:
    """Unit TF-IDF vectors of some texts, as an inverted index of their n-grams."""

    def __init__(self, rows: list[tuple[str, Counter[str]]]) -> None:
        self.owners = [name for name, _ in rows]
        df: Counter[str] = Counter()
        for _, found in rows:
            df.update(found.keys())
        # Smoothed, so that a gram in every text still counts a little.
        self.idf = {g: math.log((1 + len(rows)) / (1 + n)) + 1 for g, n in df.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for row, (_, found) in enumerate(rows):
            for gram, value in self.vector(found).items():
                self.postings.setdefault(gram, []).append((row, value))

    def vector(
        self, found: Counter[str], weights: dict[str, float] | None = None
    ) -> dict[str, float]:
        """A unit TF-IDF vector (a gram's count counts by its log, times its weight when
        given), grams no text has left out: the user's own words change no text's closeness
        relative to another's."""
        weights = weights or {}
        out = {
            g: (1 + math.log(n)) * self.idf[g] * weights.get(g, 1.0)
            for g, n in found.items()
            if g in self.idf
        }
        norm = math.sqrt(sum(v * v for v in out.values()))
        return {g: v / norm for g, v in out.items()} if norm else {}

    def cosines(self, found: Counter[str], weights: dict[str, float] | None = None) -> list[float]:
        """Each text's cosine with a phrase's grams (weighted)."""
        sums = [0.0] * len(self.owners)
        for gram, value in self.vector(found, weights).items():
            for row, weight in self.postings[gram]:
                sums[row] += value * weight
        return sums


class Nearest:
    """Every capability's texts by language; a phrase meets those of its own languages and the
    common ones only, so examples added in one language move no other language's phrase."""

    def __init__(self, texts: Iterable[tuple[str, str, str]]) -> None:
        """texts: (capability, its language or COMMON, text)."""
        given = list(texts)
        self.texts = [(name, code, grams(text)) for name, code, text in given]
        # Every language's words: a misspelt word is like one of them whatever its language.
        self.vocabulary = Vocabulary(text for _, _, text in given)
        self.names = list(dict.fromkeys(name for name, _, _ in self.texts))
        self._parts: dict[tuple[str, ...], _Part] = {}

    def part(self, languages: tuple[str, ...]) -> _Part:
        """The vectors of the texts in these languages and in none (made once each)."""
        key = tuple(sorted(languages))
        if key not in self._parts:
            wanted = {COMMON, *key}
            self._parts[key] = _Part([(n, g) for n, code, g in self.texts if code in wanted])
        return self._parts[key]

    def closeness(
        self,
        text: str,
        languages: tuple[str, ...] = lexicon.CODES,
        best_of: int = 1,
        weight_of: dict[str, float] | None = None,
    ) -> dict[str, float]:
        """Each capability's closeness to a phrase in these languages: half its best text's
        cosine, half the mean of its best few (one text alike by chance says less than
        several, but a phrase that is one of its examples is that capability's). weight_of:
        what a word's grams count (1 for a word not in it; a gram in several words counts by
        the most of theirs)."""
        part = self.part(languages)
        weights: dict[str, float] | None = None
        if weight_of:
            weights = {}
            for word in tokens(text):
                for gram in grams(word):
                    weights[gram] = max(weights.get(gram, 0.0), weight_of.get(word, 1.0))
        found: dict[str, list[float]] = {name: [] for name in self.names}
        cosines = part.cosines(grams(text), weights)
        for name, cosine in zip(part.owners, cosines, strict=True):
            found[name].append(cosine)
        out = {}
        for name, cosines in found.items():
            best = sorted(cosines, reverse=True)[:best_of]
            out[name] = (best[0] + sum(best) / len(best)) / 2 if best else 0.0
        return out


def of_index(index: Index) -> Nearest:
    """The nearest-example index of an index's capabilities, each example in the language the
    index told it to be in."""
    return Nearest(
        (capability.name, index.language_of.get(text, COMMON), text)
        for capability in index.capabilities
        for text in capability_texts(capability)
    )


def request_weights(index: Index, query: str, vocabulary: Vocabulary) -> dict[str, float]:
    """What each word of a phrase counts for its closeness to the examples: the request, not
    what the user hands over. A word no capability's text in any language uses counts by how
    like one of the spec's words it is: NEAREST_CONTENT when like none (the user's own
    subject), up to 1 when nearly one (a misspelt request word: 'delte', 'chek'); a word after
    the first colon or inside quotes NEAREST_CLAUSE (the examples put their placeholder
    there); the rest 1. Punctuation, the languages' words and the spec's texts tell which is
    which: no language is named here."""
    weights: dict[str, float] = {}
    if NEAREST_CONTENT == 1 and NEAREST_CLAUSE == 1:
        return weights  # the whole phrase
    handed = " ".join(_HANDED.findall(query))
    head, colon, tail = query.partition(":")
    if colon and tokens(head):
        handed += " " + tail
    for word in tokens(handed):
        weights[word] = min(weights.get(word, 1.0), NEAREST_CLAUSE)
    for word in tokens(query):
        if word != SLOT and not index.known(word):
            unlike = (1 - NEAREST_CONTENT) * (1 - vocabulary.likeness(word))
            weights[word] = min(weights.get(word, 1.0), 1 - unlike)
    return weights


# Quoted words: what the user hands over ("…", «…», '…' between spaces).
_HANDED = re.compile(r'"[^"]*"|“[^”]*”|«[^»]*»|„[^“”]*[“”]|(?<!\w)\'[^\']*\'(?!\w)')


# A process has one manifest; tests make a few more.
_NEAREST: PerObject[Nearest] = PerObject(bound=8)


def nearest_of(manifest: Manifest) -> Nearest:
    """The nearest-example index of a manifest (made once per manifest)."""
    return _NEAREST.get(manifest, lambda: of_index(index_of(manifest)))


def blended(manifest: Manifest, query: str, scores: dict[str, float]) -> dict[str, float]:
    """The rules' scores with the phrase's closeness to each capability's nearest examples
    added, on the rules' scale (w * the best score * closeness, the rules' share 1 - w).
    Nothing is added to a phrase the rules found nothing for (grammar alone, a save declined),
    nor with the weight 0."""
    best = max(scores.values(), default=0.0)
    if best <= 0 or not NEAREST_WEIGHT:
        return scores  # off (tuning.json): no index is made
    index = index_of(manifest)
    near = nearest_of(manifest)
    weights = request_weights(index, query, near.vocabulary)
    closeness = near.closeness(query, index.detect(query), int(NEAREST_BEST_OF), weights)
    weight = NEAREST_WEIGHT
    return {
        name: (1 - weight) * scores.get(name, 0.0) + weight * best * value
        for name, value in closeness.items()
    }
