"""Dense retrieval over one owner's vectors: their matrix in a bounded per-process cache,
exact top-k by dot product (rows are unit length, so it is the cosine)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Facts:
    """What a time or source filter reads of each row: its memory's creation and update time
    and source. A row's memory changes these only by an edit, which drops its vector and so
    replaces the owner's vector version and this matrix (store/vectors.content_changed)."""

    created: np.ndarray  # int64 milliseconds since the epoch
    updated: np.ndarray
    source: np.ndarray  # int32 index into sources
    sources: tuple[str, ...]

    @classmethod
    def of(cls, facts: Sequence[tuple[datetime, datetime, str]]) -> Facts:
        """Facts from (created_at, updated_at, source) per row, naive UTC times."""
        sources = tuple(sorted({f[2] for f in facts}))
        code = {s: i for i, s in enumerate(sources)}
        return cls(
            np.array([_ms(f[0]) for f in facts], dtype=np.int64),
            np.array([_ms(f[1]) for f in facts], dtype=np.int64),
            np.array([code[f[2]] for f in facts], dtype=np.int32),
            sources,
        )

    def passing(
        self,
        created_after: datetime | None,
        created_before: datetime | None,
        updated_after: datetime | None,
        source: str | None,
    ) -> np.ndarray:
        """Which rows meet these bounds (after: inclusive, before: exclusive) and source."""
        keep = np.ones(len(self.created), dtype=bool)
        if created_after is not None:
            keep &= self.created >= _ms_up(created_after)
        if created_before is not None:
            keep &= self.created < _ms_up(created_before)
        if updated_after is not None:
            keep &= self.updated >= _ms_up(updated_after)
        if source is not None:
            keep &= self.source == (self.sources.index(source) if source in self.sources else -1)
        return keep


def _ms(when: datetime) -> int:
    """A stored time (naive UTC, whole milliseconds) as milliseconds since the epoch."""
    return int(when.replace(tzinfo=UTC).timestamp() * 1000 + 0.5)


def _ms_up(when: datetime) -> int:
    """A bound as milliseconds, rounded up: on the millisecond grid of stored times, ">= t"
    and "< t" mean the same for t and its ceiling."""
    micros = int(when.replace(tzinfo=UTC).timestamp()) * 1_000_000 + when.microsecond
    return -(-micros // 1000)


@dataclass(frozen=True)
class Matrix:
    """One owner's vectors of one model: ids[i] is row i, facts (when loaded) its memory's."""

    ids: tuple[str, ...]
    rows: np.ndarray  # float32, (n, dim), unit length
    facts: Facts | None = field(default=None, compare=False)

    @classmethod
    def of(
        cls,
        pairs: Sequence[tuple[str, bytes]],
        dim: int | None = None,
        facts: Sequence[tuple[datetime, datetime, str]] | None = None,
    ) -> Matrix:
        """A matrix from (memory id, float32 bytes) pairs, with each one's facts when given;
        rows of another size are left out."""
        keep = [i for i, (_, raw) in enumerate(pairs) if dim is None or len(raw) == 4 * dim]
        if not keep:
            return cls((), np.zeros((0, dim or 0), dtype=np.float32), Facts.of([]))
        rows = np.frombuffer(b"".join(pairs[i][1] for i in keep), dtype=np.float32)
        kept_facts = Facts.of([facts[i] for i in keep]) if facts is not None else None
        return cls(tuple(pairs[i][0] for i in keep), rows.reshape(len(keep), -1), kept_facts)

    @property
    def nbytes(self) -> int:
        """Memory held, roughly: the rows, the ids and their facts."""
        return int(self.rows.nbytes) + 100 * len(self.ids)

    def among(self, ids: Iterable[str]) -> np.ndarray:
        """Which rows are of these memory ids."""
        keep = np.zeros(len(self.ids), dtype=bool)
        rows = [r for r in map(self.row_of.get, ids) if r is not None]
        keep[rows] = True
        return keep

    def scores(self, query: np.ndarray) -> np.ndarray:
        """The cosine of every row with the query."""
        if not self.ids or self.rows.shape[1] != query.shape[0]:
            return np.zeros(len(self.ids), dtype=np.float32)
        # einsum, not a BLAS product: on a busy two-core server BLAS's own threads made this
        # 10k x 384 product tens of times slower.
        return np.einsum("ij,j->i", self.rows, query)

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Each memory id's row."""
        return {mid: i for i, mid in enumerate(self.ids)}

    def top(
        self, scores: np.ndarray, k: int, keep: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        """The k best (memory id, cosine) of scores(), best first, among the rows `keep` marks
        when given (a filter: the best k that pass); ties go to the newest id."""
        rows = np.arange(len(scores)) if keep is None else np.flatnonzero(keep)
        if not len(rows) or k <= 0:
            return []
        kept = scores[rows]
        k = min(k, len(kept))
        best = np.arange(len(kept))
        if k < len(kept):
            # Rows are in id order, so of the rows tied at the cut the last are the newest.
            cut = np.partition(-kept, k - 1)[k - 1]
            above = np.flatnonzero(-kept < cut)
            tied = np.flatnonzero(-kept == cut)
            best = np.concatenate([above, tied[len(tied) - (k - len(above)) :]])
        ranked = sorted(((float(kept[i]), self.ids[rows[i]]) for i in best), reverse=True)
        return [(mid, score) for score, mid in ranked]


class MatrixCache:
    """Owners' matrices, least recently used out past a byte budget; an entry serves only while
    the owner's version (a random token that never repeats) and the model are the same."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[str, str, Matrix]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, owner: str, version: str, model: str) -> Matrix | None:
        """The owner's cached matrix if it is of this version and model."""
        with self._lock:
            found = self._entries.get(owner)
            if found is None or found[0] != version or found[1] != model:
                return None
            self._entries.move_to_end(owner)
            return found[2]

    def put(self, owner: str, version: str, model: str, matrix: Matrix) -> None:
        """Keep the owner's matrix, evicting the least recently used past the budget; the
        newest stays even alone past it (a budget of 0 keeps nothing)."""
        with self._lock:
            old = self._entries.pop(owner, None)
            if old is not None:
                self._bytes -= old[2].nbytes
            if self.max_bytes <= 0:
                return
            # A matrix larger than the budget is kept too, alone: each of its owner's searches
            # holds the whole matrix in memory while it runs anyway, so dropping it saves no
            # peak memory and costs a reload of every vector per search (seconds at 100k).
            self._entries[owner] = (version, model, matrix)
            self._bytes += matrix.nbytes
            while self._bytes > self.max_bytes and len(self._entries) > 1:
                _, (_, _, gone) = self._entries.popitem(last=False)
                self._bytes -= gone.nbytes

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
