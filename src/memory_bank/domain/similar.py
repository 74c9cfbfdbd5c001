"""What a save tells an agent it already knows: near-duplicates and same-subject memories.

One bounded lexical query over the owner's own index, with the new memory's words: the new
memory scores itself highest, and each other memory's BM25 score relative to that self-score
says how alike it is (1.0: the same words). At THRESHOLD or above it is shown (measured on
built pairs, docs/benchmarks.md "Similar-memory hints").
"""

from __future__ import annotations

import unicodedata
from typing import Any

from sqlalchemy import Connection

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


def hints(db: Database, owner: str, memory_id: str, content: str) -> list[dict[str, Any]]:
    """Up to SHOWN of the owner's other memories alike enough to this new one, most alike first."""
    with db.reading() as conn:
        found = ranked(conn, owner, content, CANDIDATES)
        if not found:
            return []
        scores = dict(found)
        top = scores.get(memory_id, found[0][1])
        alike = [
            (mid, min(1.0, score / top))
            for mid, score in found
            if mid != memory_id and top > 0 and score / top >= THRESHOLD
        ][:SHOWN]
        rows = store.get_memories(conn, owner, [mid for mid, _ in alike])
    return [
        {"id": mid, "content": rows[mid].content, "score": round(score, 3)}
        for mid, score in alike
        if mid in rows
    ]
