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
    """(owner, memory id, score) of the best `limit` hits over every owner, best first. Each
    owner's hits keep their order (their scores never rise, and tied ones are in rank order);
    between owners a tie goes to the newest id, as within one index."""
    queues = [[(owner, mid, score) for mid, score in ranked] for owner, ranked in rankings]
    heads = [0] * len(queues)
    out: list[tuple[str, str, float]] = []
    while len(out) < limit:
        live = [i for i, queue in enumerate(queues) if heads[i] < len(queue)]
        if not live:
            break
        best = max(live, key=lambda i: (queues[i][heads[i]][2], queues[i][heads[i]][1]))
        out.append(queues[best][heads[best]])
        heads[best] += 1
    return out
