"""What a save tells an agent it already knows: near-duplicates and same-subject memories.

By words: one bounded lexical query over the owner's own index, with the new memory's words:
the new memory scores itself highest, and each other memory's BM25 score relative to that
self-score says how alike it is (1.0: the same words). At THRESHOLD or above it is shown.

By meaning, with semantic search on and a model that has fitted curves: the new memory's text
is embedded as its vector will be, under the search's embedding deadline (a save never waits
longer; past it, or while the model is prepared, the hints are by words alone), and each of
the owner's vectors is scored with the model's semantic curve (search/calibration.py), the
scale search scores are on, so "I'm vegetarian" finds "the user doesn't eat meat", which
shares no word with it. At the model's threshold
(calibration.json's `similar`) or above it is shown; a memory found both ways shows the larger
score. Both thresholds are measured on built pairs (benchmarks/similar_hints.py,
docs/benchmarks.md "Similar-memory hints").
"""

from __future__ import annotations

import unicodedata
from typing import Any

from sqlalchemy import Connection

from memory_bank.domain.semantic import Semantic
from memory_bank.models.embeddings import embed_text
from memory_bank.search import calibration
from memory_bank.search import index as search_index
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.sealing import data_keys

THRESHOLD = 0.30
SHOWN = 3
# The query is the memory's first words only, so a long memory costs what a search does.
QUERY_CHARS = 512
# Candidates read from the index: the new memory itself and a few more.
CANDIDATES = SHOWN + 2


def normalised(text: str) -> str:
    """Content as compared for exact duplicates: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def ranked(conn: Connection, owner: str, content: str, limit: int) -> list[tuple[str, float]]:
    """The owner's memories best matching this content, with BM25 scores."""
    forms = data_keys.sealer(conn, owner).term_forms
    return search_index.search(conn, owner, content[:QUERY_CHARS], limit, forms)


def duplicate_of(conn: Connection, owner: str, content: str) -> store.MemoryRow | None:
    """The owner's memory with the same normalised content, if any (the top candidates of
    the lexical index are compared; an exact duplicate shares every term, so it ranks there)."""
    ids = [mid for mid, _ in ranked(conn, owner, content, CANDIDATES)]
    wanted = normalised(content)
    found = store.get_memories(conn, owner, ids)
    return next(
        (found[m] for m in ids if m in found and normalised(found[m].content) == wanted), None
    )


def hints(
    db: Database,
    owner: str,
    memory_id: str,
    content: str,
    semantic: Semantic | None = None,
    snippets: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Up to SHOWN of the owner's other memories alike enough to this new one (by words, and
    by meaning when its vector can be made in time), most alike first."""
    pending = None
    if semantic is not None and calibration.fitted(semantic.model):
        # Embedded on the search's threads while BM25 ranks here; the vector is kept for the
        # outbox worker, which would otherwise embed the same text again.
        pending = semantic.begin(embed_text(content, snippets), keep=True)
    alike: dict[str, float] = {}
    with db.reading() as conn:
        found = ranked(conn, owner, content, CANDIDATES)
        scores = dict(found)
        top = scores.get(memory_id, found[0][1]) if found else 0.0
        for mid, score in found:
            if mid != memory_id and top > 0 and score / top >= THRESHOLD:
                alike[mid] = min(1.0, score / top)
    # The vector is awaited with no connection held, as a search does.
    vector = pending() if pending is not None else None
    if vector is None and not alike:
        return []
    with db.reading() as conn:
        if vector is not None and semantic is not None:
            cal = calibration.for_model(semantic.model)
            matrix = semantic.matrix(conn, owner)
            for mid, cosine in matrix.top(matrix.scores(vector), CANDIDATES):
                meaning = cal.semantic(cosine)
                if mid != memory_id and meaning >= cal.similar:
                    alike[mid] = max(alike.get(mid, 0.0), meaning)
        best = sorted(alike.items(), key=lambda item: (item[1], item[0]), reverse=True)[:SHOWN]
        rows = store.get_memories(conn, owner, [mid for mid, _ in best])
    return [
        {"id": mid, "content": rows[mid].content, "score": round(score, 3)}
        for mid, score in best
        if mid in rows
    ]
