"""Merging the rankings of several owners' indexes (a user's and their org's) into one list.

Each index ranks with BM25 over its own statistics, so one owner's saves never move another
owner's scores. The raw scores are merged as they are: BM25's idf depends on the share of an
owner's memories that hold a term (df against N), not on how many memories the owner has, and
its length normalisation is relative to the owner's own average, so a memory scores alike in
either index. Measured on LoCoMo with half (or a tenth) of each conversation's memories in the
org's index: recall@10 0.724 (0.725) against 0.727 with everything personal; dividing each
index's scores by the best score it could give the query did no better (docs/acl.md).
"""

from __future__ import annotations

from collections.abc import Iterable


def merged(
    rankings: Iterable[tuple[str, list[tuple[str, float]]]], limit: int
) -> list[tuple[str, str, float]]:
    """(owner, memory id, score) of the best `limit` hits over every owner, best first; ties go
    to the newest id, as within one index."""
    hits = [(owner, mid, score) for owner, ranked in rankings for mid, score in ranked]
    hits.sort(key=lambda hit: (hit[2], hit[1]), reverse=True)
    return hits[:limit]
