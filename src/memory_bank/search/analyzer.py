"""Text analysis: Unicode tokens, case folding, stop-words, English stemming, exact tokens."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

# Bump whenever terms() changes its output: stored postings made by another version are stale
# and `memory-bank migrate` rebuilds them (see memory_bank.search.version).
ANALYZER_VERSION = "2"

MAX_TERM = 64

# Scripts written without spaces between words: indexed as overlapping character bigrams, so a
# query for part of a run (東京 in 東京タワー) still matches.
_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\u3100-\u312f\u31a0-\u31bf"  # Bopomofo
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"  # Hangul
    "\U00020000-\U0002fa1f"  # Han extensions
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
# Words with joiners inside: v1.2, den-worker-proxy, a@b.com, 2026-12-02, 10:30, o'brien.
_TOKEN = re.compile(rf"[^\W{_CJK}]+(?:[.\-@:/+'_&][^\W{_CJK}]+)*|[{_CJK}]+")
_PART = re.compile(r"[^\W_]+", re.UNICODE)

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm
    i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not
    of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's with won't would wouldn't
    you you'd you'll you're you've your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads best as text
)

# Words that shape a question but rarely appear in the memory that answers it ("What kind of
# music…", "How many times…"); dropped from queries only, never from stored text.
QUESTION_WORDS = frozenset(
    """
    kind kinds type types sort sorts many much often ever likely probably might may
    mention mentioned mentions say said tell told describe described name names
    something anything someone anyone thing things specific particular
    """.split()  # noqa: SIM905 - a word list reads best as text
)
_QUERY_DROP = STOP_WORDS | QUESTION_WORDS


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    """The English Snowball stemmer (cached: construction is not free)."""
    return Stemmer.Stemmer("english")


def _normalise(text: str) -> str:
    """NFKC and case folding, so full-width 'Q3' and 'q3' are the same token."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return folded.replace("\u2019", "'").replace("\u2018", "'")


def _cjk_terms(run: str) -> list[str]:
    """Overlapping bigrams of a CJK run (the run itself when it is one character)."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def terms(text: str, *, query: bool = False) -> list[str]:
    """The index terms of a text, in order, with repeats (for term frequency)."""
    out: list[str] = []
    stem = _stemmer().stemWord
    drop = _QUERY_DROP if query else STOP_WORDS
    for token in _TOKEN.findall(_normalise(text)):
        if token.isascii() and token.isalnum():
            # The common case, a plain word or number: no joiners, no CJK.
            if token not in drop:
                out.append(stem(token)[:MAX_TERM] if token.isalpha() else token[:MAX_TERM])
            continue
        token = token.strip("'")
        if not token:
            continue
        if _CJK_RUN.fullmatch(token):
            out.extend(_cjk_terms(token))
            continue
        if token.endswith("'s"):
            token = token[:-2]  # possessive: "Caroline's" is about Caroline
        if token in drop:
            continue
        parts = _PART.findall(token)
        if len(parts) > 1:
            # Keep the exact compound (v1.2, den-worker-proxy, a@b.com) as one term as well as
            # its parts, so both the whole and a piece of it match.
            out.append(token[:MAX_TERM])
        for part in parts:
            if part in drop or (len(parts) > 1 and len(part) == 1 and part.isalpha()):
                continue
            out.append(stem(part)[:MAX_TERM] if part.isalpha() else part[:MAX_TERM])
    return out
