"""The hybrid blend on hand-made candidate lists: the coverage-driven weight, fuse()'s scores,
order, cut and ties, and BM25 read against the query's attainable score (no model, no
database)."""

from __future__ import annotations

import pytest

from memory_bank.search.fusion import BLEND, Blend, attainable, fuse


def test_the_weight_is_the_uncovered_one_at_or_below_low_and_the_covered_one_from_high():
    blend = Blend(dense_when_covered=0.5, dense_when_uncovered=0.7, low=0.2, high=0.6)
    assert blend.dense_weight(0.0) == 0.7
    assert blend.dense_weight(0.2) == 0.7
    assert blend.dense_weight(0.6) == 0.5
    assert blend.dense_weight(1.0) == 0.5


def test_the_weight_moves_linearly_between_low_and_high():
    blend = Blend(dense_when_covered=0.5, dense_when_uncovered=0.7, low=0.2, high=0.6)
    # A quarter of the way from low to high: 0.7 + (0.5 - 0.7) / 4.
    assert blend.dense_weight(0.3) == pytest.approx(0.65)
    assert blend.dense_weight(0.4) == pytest.approx(0.6)
    weights = [blend.dense_weight(c / 10) for c in range(11)]
    assert weights == sorted(weights, reverse=True)


def test_the_shipped_blend_trusts_the_cosine_more_when_the_words_are_not_found():
    assert BLEND.dense_weight(0.0) == BLEND.dense_when_uncovered
    assert BLEND.dense_weight(1.0) == BLEND.dense_when_covered
    assert BLEND.dense_when_uncovered > BLEND.dense_when_covered


LEXICAL = [("a", 4.0), ("b", 2.0)]
DENSE = [("c", 0.9), ("a", 0.5)]
COSINE = {"a": 0.5, "b": 0.3, "c": 0.9}


def test_scores_are_bm25_over_its_best_blended_with_min_max_cosine():
    # bm25 / 4: a 1, b 0.5, c 0; cosine min-max over 0.3..0.9: a 1/3, b 0, c 1.
    fused = fuse(LEXICAL, DENSE, COSINE, weight=0.5, limit=10)
    assert [k for k, _ in fused] == ["a", "c", "b"]
    assert [s for _, s in fused] == pytest.approx([0.5 + 0.5 / 3, 0.5, 0.25])


def test_the_weight_decides_which_list_leads():
    assert [k for k, _ in fuse(LEXICAL, DENSE, COSINE, weight=0.0, limit=10)] == ["a", "b", "c"]
    only_cosine = fuse(LEXICAL, DENSE, COSINE, weight=1.0, limit=10)
    assert only_cosine == [("c", pytest.approx(1.0)), ("a", pytest.approx(1 / 3)), ("b", 0.0)]


def test_limit_cuts_after_ranking_and_a_larger_limit_returns_every_candidate_once():
    assert [k for k, _ in fuse(LEXICAL, DENSE, COSINE, weight=0.5, limit=1)] == ["a"]
    everything = fuse(LEXICAL, DENSE, COSINE, weight=0.5, limit=100)
    # "a" is in both lists and is scored once.
    assert sorted(k for k, _ in everything) == ["a", "b", "c"]
    assert fuse(LEXICAL, DENSE, COSINE, weight=0.5, limit=0) == []


def test_no_candidates_is_an_empty_result():
    assert fuse([], [], {}, weight=0.5, limit=10) == []
    assert fuse([], [], {"a": 0.9}, weight=0.5, limit=10) == []


def test_dense_only_candidates_rank_by_cosine_alone():
    fused = fuse([], [("x", 0.2), ("y", 0.8)], {"x": 0.2, "y": 0.8}, weight=0.7, limit=10)
    assert fused == [("y", pytest.approx(0.7)), ("x", 0.0)]


def test_a_candidate_without_a_vector_gets_no_cosine_share():
    # "b" has no vector: its score is its BM25 share alone, though 0.3 would be the minimum.
    fused = dict(fuse(LEXICAL, DENSE, {"a": 0.5, "c": 0.9}, weight=0.5, limit=10))
    assert fused["b"] == pytest.approx(0.25)
    assert fused["a"] == pytest.approx(0.5)  # the lowest cosine of those with one
    assert fused["c"] == pytest.approx(0.5)


def test_equal_cosines_carry_no_signal():
    fused = fuse(LEXICAL, [], {"a": 0.4, "b": 0.4}, weight=0.9, limit=10)
    assert fused == [("a", pytest.approx(0.1)), ("b", pytest.approx(0.05))]


def test_zero_bm25_scores_carry_no_signal():
    fused = fuse([("a", 0.0), ("b", 0.0)], [], {"a": 0.1, "b": 0.3}, weight=0.5, limit=10)
    assert fused == [("b", pytest.approx(0.5)), ("a", 0.0)]


def test_ties_go_to_the_larger_key_the_newest_id():
    lexical = [("01A", 1.0), ("01C", 1.0), ("01B", 1.0)]
    assert [k for k, _ in fuse(lexical, [], {}, weight=0.5, limit=10)] == ["01C", "01B", "01A"]
    assert fuse(lexical, [], {}, weight=0.5, limit=1) == [("01C", 0.5)]


def test_keys_may_be_owner_and_id_pairs():
    # The domain fuses (owner, memory id) keys across a user's and an org's indexes.
    lexical = [(("alice", "m1"), 3.0), (("org", "m2"), 3.0)]
    cosine = {("alice", "m1"): 0.2, ("org", "m2"): 0.6}
    fused = fuse(lexical, [], cosine, weight=0.5, limit=10)
    assert fused == [(("org", "m2"), pytest.approx(1.0)), (("alice", "m1"), pytest.approx(0.5))]


def test_the_attainable_score_is_the_sum_of_the_query_terms_weights():
    # A memory of average length holding each term once scores each term's weight.
    assert attainable({"penicillin": 3.5, "allergy": 1.25, "unseen": 6.0}) == pytest.approx(10.75)
    assert attainable({}) == 0.0


def test_bm25_is_read_against_the_attainable_score_when_no_hit_reaches_it():
    # bm25 / 8: a 0.5, b 0.25, c 0; cosine as before: a 1/3, b 0, c 1.
    fused = fuse(LEXICAL, DENSE, COSINE, weight=0.5, limit=10, attainable=8.0)
    assert [k for k, _ in fused] == ["c", "a", "b"]
    assert [s for _, s in fused] == pytest.approx([0.5, 0.25 + 0.5 / 3, 0.125])


def test_a_best_hit_above_the_attainable_score_sets_the_scale_as_before():
    # Short memories or repeated terms score past the attainable sum: the best hit is then 1.
    assert fuse(LEXICAL, DENSE, COSINE, 0.5, 10, attainable=3.0) == fuse(
        LEXICAL, DENSE, COSINE, 0.5, 10
    )
    assert fuse(LEXICAL, DENSE, COSINE, 0.5, 10, attainable=0.0) == fuse(
        LEXICAL, DENSE, COSINE, 0.5, 10
    )


def test_a_near_miss_that_holds_a_fraction_of_the_query_no_longer_outranks_the_meaning():
    # A paraphrased question: the answer shares no word with it (no BM25), the best cosine;
    # a distractor shares one rare word (a quarter of the query's weight) and is near in
    # meaning; the rest of the candidates are far.
    lexical = [("distractor", 2.0), ("other", 0.5)]
    cosine = {"answer": 0.62, "distractor": 0.50, "other": 0.20, "far": 0.10}
    dense = sorted(cosine.items(), key=lambda kv: kv[1], reverse=True)
    weight = BLEND.dense_weight(0.25)
    # Against the best hit, the distractor takes the whole lexical share and leads.
    before = fuse(lexical, dense, cosine, weight, 3)
    assert [k for k, _ in before][:2] == ["distractor", "answer"]
    # Against what the query could score (8.0), it holds a quarter of it and the answer leads.
    after = fuse(lexical, dense, cosine, weight, 3, attainable=8.0)
    assert [k for k, _ in after][:2] == ["answer", "distractor"]
