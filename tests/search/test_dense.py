"""Dense retrieval on small hand-made matrices: building one from stored bytes, cosines, exact
top-k with its ties, and the per-process cache's budget (no model, no database)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.search.dense import Matrix, MatrixCache


def _raw(*values: float) -> bytes:
    """A stored vector: float32 bytes."""
    return np.array(values, dtype=np.float32).tobytes()


def _matrix(ids: str, rows: list[list[float]]) -> Matrix:
    """A matrix whose ids are the letters of ids."""
    return Matrix(tuple(ids), np.array(rows, dtype=np.float32))


def test_of_keeps_the_order_and_the_bytes_of_each_row():
    matrix = Matrix.of([("m1", _raw(1, 0, 0)), ("m2", _raw(0, 0.6, 0.8))])
    assert matrix.ids == ("m1", "m2")
    assert matrix.rows.dtype == np.float32
    np.testing.assert_array_equal(matrix.rows, np.array([[1, 0, 0], [0, 0.6, 0.8]], np.float32))
    assert matrix.row_of == {"m1": 0, "m2": 1}


def test_of_leaves_out_rows_of_another_size():
    # A vector of an earlier model with another dimension must not break the reshape.
    matrix = Matrix.of([("old", _raw(1, 0)), ("new", _raw(0, 1, 0))], dim=3)
    assert matrix.ids == ("new",)
    assert matrix.rows.shape == (1, 3)


def test_of_nothing_is_an_empty_matrix_of_the_asked_width():
    assert Matrix.of([], dim=4).rows.shape == (0, 4)
    assert Matrix.of([("old", _raw(1, 0))], dim=4).rows.shape == (0, 4)
    empty = Matrix.of([])
    assert empty.ids == () and empty.rows.shape == (0, 0)


def test_nbytes_counts_the_rows_the_ids_and_their_facts():
    matrix = _matrix("ab", [[1, 0, 0], [0, 1, 0]])
    # float32 rows, and about 100 bytes a row for its id and filter facts.
    assert matrix.nbytes == 2 * 3 * 4 + 2 * 100


def test_scores_are_the_dot_product_with_each_row():
    matrix = _matrix("abc", [[1, 0], [0, 1], [0.6, 0.8]])
    scores = matrix.scores(np.array([0.8, 0.6], dtype=np.float32))
    assert scores.tolist() == pytest.approx([0.8, 0.6, 0.96])


def test_a_query_of_another_width_or_zero_scores_nothing():
    matrix = _matrix("ab", [[1, 0], [0, 1]])
    assert matrix.scores(np.ones(3, dtype=np.float32)).tolist() == [0.0, 0.0]
    assert matrix.scores(np.zeros(2, dtype=np.float32)).tolist() == [0.0, 0.0]
    assert len(Matrix.of([], dim=2).scores(np.ones(2, dtype=np.float32))) == 0


def test_top_is_the_k_best_best_first():
    matrix = _matrix("abcde", [[1.0]] * 5)
    scores = np.array([0.1, 0.9, 0.3, 0.7, 0.5], dtype=np.float32)
    top = matrix.top(scores, 3)
    assert [mid for mid, _ in top] == ["b", "d", "e"]
    assert [s for _, s in top] == pytest.approx([0.9, 0.7, 0.5])
    assert all(isinstance(s, float) for _, s in top)


def test_k_at_or_past_the_row_count_ranks_every_row():
    matrix = _matrix("abc", [[1.0]] * 3)
    scores = np.array([0.2, 0.8, 0.5], dtype=np.float32)
    want = ["b", "c", "a"]
    assert [mid for mid, _ in matrix.top(scores, 3)] == want
    assert [mid for mid, _ in matrix.top(scores, 50)] == want


def test_top_of_nothing_or_zero_is_empty():
    assert Matrix.of([], dim=2).top(np.zeros(0, dtype=np.float32), 10) == []
    assert _matrix("ab", [[1.0], [1.0]]).top(np.array([0.5, 0.4], dtype=np.float32), 0) == []


def test_ties_inside_the_cut_go_to_the_newest_id():
    # ULIDs: a larger id is a newer memory.
    matrix = _matrix("abcde", [[1.0]] * 5)
    scores = np.array([0.5, 0.5, 0.9, 0.5, 0.1], dtype=np.float32)
    assert [mid for mid, _ in matrix.top(scores, 4)] == ["c", "d", "b", "a"]
    assert [mid for mid, _ in matrix.top(scores, 10)] == ["c", "d", "b", "a", "e"]


def test_ties_at_the_cut_go_to_the_newest_id():
    matrix = _matrix("abcd", [[1.0]] * 4)
    scores = np.array([0.5, 0.5, 0.5, 0.1], dtype=np.float32)
    assert [mid for mid, _ in matrix.top(scores, 1)] == ["c"]


def test_the_cache_serves_only_the_same_version_and_model():
    cache = MatrixCache(max_bytes=10_000)
    matrix = _matrix("ab", [[1, 0], [0, 1]])
    assert cache.get("alice", "v1", "m") is None
    cache.put("alice", "v1", "m", matrix)
    assert cache.get("alice", "v1", "m") is matrix
    assert cache.get("alice", "v2", "m") is None
    assert cache.get("alice", "v1", "other") is None
    assert cache.get("bob", "v1", "m") is None


def test_a_new_version_replaces_the_owner_s_entry_and_its_bytes():
    cache = MatrixCache(max_bytes=10_000)
    small, large = _matrix("a", [[1.0]]), _matrix("abc", [[1.0]] * 3)
    cache.put("alice", "v1", "m", small)
    cache.put("alice", "v2", "m", large)
    assert len(cache) == 1
    assert cache.nbytes == large.nbytes
    assert cache.get("alice", "v2", "m") is large


def test_the_least_recently_used_owner_leaves_past_the_budget():
    one = _matrix("a", [[1.0]])  # 84 bytes
    cache = MatrixCache(max_bytes=2 * one.nbytes)
    cache.put("alice", "v", "m", one)
    cache.put("bob", "v", "m", one)
    assert cache.get("alice", "v", "m") is one  # alice is now the most recent
    cache.put("carol", "v", "m", one)
    assert cache.get("bob", "v", "m") is None
    assert cache.get("alice", "v", "m") is one
    assert cache.get("carol", "v", "m") is one
    assert len(cache) == 2 and cache.nbytes == 2 * one.nbytes


def test_a_matrix_larger_than_the_budget_is_kept_alone():
    small, large = _matrix("a", [[1.0]]), _matrix("abcdef", [[1.0] * 8] * 6)
    cache = MatrixCache(max_bytes=2 * small.nbytes)
    cache.put("alice", "v1", "m", small)
    cache.put("bob", "v1", "m", large)
    # Reloading it for every search would hold as much memory per search and take seconds.
    assert cache.get("bob", "v1", "m") is large
    assert cache.get("alice", "v1", "m") is None
    assert len(cache) == 1 and cache.nbytes == large.nbytes
    cache.put("alice", "v1", "m", small)
    assert cache.get("bob", "v1", "m") is None
    assert len(cache) == 1 and cache.nbytes == small.nbytes


def test_a_new_version_too_large_replaces_the_owner_s_old_one():
    small, large = _matrix("a", [[1.0]]), _matrix("abcdef", [[1.0] * 8] * 6)
    cache = MatrixCache(max_bytes=small.nbytes)
    cache.put("alice", "v1", "m", small)
    cache.put("alice", "v2", "m", large)
    assert len(cache) == 1 and cache.nbytes == large.nbytes
    assert cache.get("alice", "v1", "m") is None
    assert cache.get("alice", "v2", "m") is large


def test_a_budget_of_zero_keeps_nothing():
    cache = MatrixCache(max_bytes=0)
    cache.put("alice", "v1", "m", _matrix("a", [[1.0]]))
    assert len(cache) == 0 and cache.nbytes == 0
    assert cache.get("alice", "v1", "m") is None
