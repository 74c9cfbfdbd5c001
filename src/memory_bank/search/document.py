"""What the index keeps of a memory: weighted term frequencies over its fields (BM25F)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memory_bank.search.analyzer import ANALYZER_VERSION, terms
from memory_bank.store.postings import Postings

# Field weights of a simplified BM25F: a term's stored tf (and the document length) is the
# weighted sum over the memory's fields. Integers, so postings stay plain integer columns.
CONTENT_WEIGHT = 3
TAG_WEIGHT = 3
CONTEXT_WEIGHT = 1


def postings_of(content: str, tags: Iterable[str] = (), snippets: Iterable[str] = ()) -> Postings:
    """The postings of a memory: its content, tags and context snippets, weighted."""
    counts: Counter[str] = Counter()
    fields = [(content, CONTENT_WEIGHT)]
    fields += [(tag, TAG_WEIGHT) for tag in tags]
    if CONTEXT_WEIGHT:
        fields += [(snippet, CONTEXT_WEIGHT) for snippet in snippets]
    for text, weight in fields:
        for term in terms(text):
            counts[term] += weight
    return Postings(counts, sum(counts.values()))


def index_version() -> str:
    """What stored postings depend on: the analyzer's version and the field weights."""
    return f"analyzer={ANALYZER_VERSION};weights={CONTENT_WEIGHT},{TAG_WEIGHT},{CONTEXT_WEIGHT}"
