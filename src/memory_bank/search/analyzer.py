"""Text analysis: Unicode tokens, case folding, stop-words, English stemming, exact tokens."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

import Stemmer

MAX_TERM = 64

# Words with joiners inside: v1.2, den-worker-proxy, a@b.com, 2026-12-02, Q3's, 10:30.
_TOKEN = re.compile(r"\w+(?:[.\-@:/+'_]\w+)*", re.UNICODE)
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


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    """The English Snowball stemmer (cached: construction is not free)."""
    return Stemmer.Stemmer("english")


def _normalise(text: str) -> str:
    """NFKC and case folding, so full-width 'Q3' and 'q3' are the same token."""
    return unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")


def terms(text: str) -> list[str]:
    """The index terms of a text, in order, with repeats (for term frequency)."""
    out: list[str] = []
    stem = _stemmer().stemWord
    for match in _TOKEN.finditer(_normalise(text)):
        token = match.group(0).strip("'")
        parts = _PART.findall(token)
        if len(parts) > 1:
            # Keep the exact compound (v1.2, den-worker-proxy) as one term as well as its parts.
            out.append(token[:MAX_TERM])
        for part in parts:
            if part in STOP_WORDS:
                continue
            out.append(stem(part)[:MAX_TERM] if part.isalpha() else part[:MAX_TERM])
    return out


def term_counts(text: str) -> tuple[Counter[str], int]:
    """Term frequencies of a text and its length in terms."""
    found = terms(text)
    return Counter(found), len(found)
