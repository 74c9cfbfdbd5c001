"""The hybrid blend on hand-made candidate lists: the coverage-driven weight, fuse()'s rank
values, order, cut and ties, BM25 read against the query's attainable score, memories whose
vector is not made yet, and relevance()'s scores of the ranked results (no model, no
database)."""

from __future__ import annotations

import math

import pytest

from memory_bank.search.calibration import Calibration, Curve, Joint, Order, for_model
from memory_bank.search.fusion import BLEND, Blend, attainable, fuse, relevance

# Curves chosen by hand so the expected values can be worked out: sigmoid(10 * x - 5).
CURVE = Curve(10.0, -5.0)
# The hand-made joint model: sigmoid(10 * cosine + 4 * share^2 - 5).
JOINT = Joint(10.0, 0.0, 4.0, -5.0)
CAL = Calibration(
    lexical=Curve(6.0, -3.0),
    semantic=CURVE,
    hybrid=JOINT,
    order=Order(lexical=Curve(8.0, -4.0), hybrid=CURVE),
    floor=0.5,
    model="t",
)


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


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


def test_scores_are_the_hybrid_curve_of_bm25_over_the_attainable_blended_with_the_raw_cosine():
    # bm25 / 8: a 0.5, b 0.25, c 0, each worth lexical_scale of a cosine; the cosines as they
    # are.
    fused = fuse(LEXICAL, DENSE, COSINE, 0.5, 10, 8.0, CAL, lexical_scale=1.0)
    blends = {"a": 0.25 + 0.25, "b": 0.125 + 0.15, "c": 0.45}
    assert [k for k, _ in fused] == ["a", "c", "b"]
    assert dict(fused) == pytest.approx({k: sigmoid(10 * v - 5) for k, v in blends.items()})
    fused = fuse(LEXICAL, DENSE, COSINE, 0.5, 10, 8.0, CAL, lexical_scale=0.5)
    blends = {"a": 0.125 + 0.25, "b": 0.0625 + 0.15, "c": 0.45}
    assert [k for k, _ in fused] == ["c", "a", "b"]
    assert dict(fused) == pytest.approx({k: sigmoid(10 * v - 5) for k, v in blends.items()})


def test_a_score_does_not_depend_on_the_other_candidates():
    # The nearest memory no longer takes the whole dense share: alone or among others, the
    # same memory scores the same for the same query.
    alone = fuse([], [("c", 0.9)], {"c": 0.9}, 0.7, 10, 8.0, CAL)
    among = fuse(LEXICAL, DENSE, COSINE, 0.7, 10, 8.0, CAL)
    assert dict(alone)["c"] == pytest.approx(dict(among)["c"])


def test_an_unrelated_nearest_memory_scores_low_with_the_shipped_models():
    # Two memories, a question whose words match nothing: before, the nearer scored 0.7.
    cal = for_model("local:all-mpnet-base-v2-int8")
    cosine = {"x": 0.05, "y": 0.12}
    fused = fuse([], sorted(cosine.items()), cosine, BLEND.dense_weight(0.0), 10, 9.0, cal)
    assert all(score < cal.floor for _, score in relevance(fused, cosine, {}, cal))


def test_relevance_is_the_joint_model_and_never_rises_down_the_list():
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)]
    cosine = {"a": 0.5, "b": 0.95, "c": 0.3}
    shares = {"a": 1.0, "b": 0.0, "c": 0.5, "d": 1.0}
    scored = relevance(ranked, cosine, shares, CAL)
    assert [k for k, _ in scored] == ["a", "b", "c", "d"]
    own = {
        "a": sigmoid(10 * 0.5 + 4 * 1.0 - 5),
        "b": sigmoid(10 * 0.95 - 5),
        "c": sigmoid(10 * 0.3 + 4 * 0.25 - 5),
        # No vector: the lexical curve of its share.
        "d": sigmoid(6 * 1.0 - 3),
    }
    # "b" is ranked below "a" but would score above it: it is capped at a's score; "d" would
    # score above "c" and is capped at c's.
    assert dict(scored) == pytest.approx(
        {"a": own["a"], "b": own["a"], "c": own["c"], "d": own["c"]}
    )
    assert own["b"] > own["a"] and own["d"] > own["c"]


def test_the_first_results_score_is_its_own_whatever_else_is_ranked():
    alone = relevance([("a", 0.5)], {"a": 0.55}, {"a": 0.25}, CAL)
    among = relevance([("a", 0.5), ("b", 0.4)], {"a": 0.55, "b": 0.9}, {"a": 0.25}, CAL)
    assert alone[0] == among[0]


def test_scores_are_in_zero_to_one_and_order_the_results():
    fused = fuse(LEXICAL, DENSE, COSINE, 0.5, 10, 8.0, for_model(None))
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_limit_cuts_after_ranking_and_a_larger_limit_returns_every_candidate_once():
    everything = fuse(LEXICAL, DENSE, COSINE, 0.5, 100, 8.0, CAL)
    assert fuse(LEXICAL, DENSE, COSINE, 0.5, 1, 8.0, CAL) == everything[:1]
    # "a" is in both lists and is scored once.
    assert sorted(k for k, _ in everything) == ["a", "b", "c"]
    assert fuse(LEXICAL, DENSE, COSINE, 0.5, 0, 8.0, CAL) == []


def test_no_candidates_is_an_empty_result():
    assert fuse([], [], {}, 0.5, 10, 0.0, CAL) == []
    assert fuse([], [], {"a": 0.9}, 0.5, 10, 0.0, CAL) == []


def test_dense_only_candidates_rank_by_cosine_alone():
    fused = fuse([], [("x", 0.2), ("y", 0.8)], {"x": 0.2, "y": 0.8}, 0.7, 10, 5.0, CAL)
    assert fused == [
        ("y", pytest.approx(sigmoid(10 * 0.56 - 5))),
        ("x", pytest.approx(sigmoid(10 * 0.14 - 5))),
    ]


def test_a_candidate_without_a_vector_is_scored_on_its_words_not_as_irrelevant():
    # "new" was saved after the import: its vector is not made yet. Its words match the whole
    # query; "old" has a vector and shares half the words. Before, "new" got a cosine share of 0
    # and ranked below "old".
    lexical = [("new", 8.0), ("old", 4.0)]
    cosine = {"old": 0.4}
    fused = fuse(lexical, [("old", 0.4)], cosine, 0.5, 10, 8.0, CAL)
    assert [k for k, _ in fused] == ["new", "old"]
    # It is placed by the lexical order curve of its evidence.
    assert dict(fused)["new"] == pytest.approx(sigmoid(8 * 1.0 - 4))


def test_lexical_evidence_is_capped_at_the_attainable_score():
    over = fuse([("a", 20.0)], [], {"a": 0.5}, 0.5, 10, 8.0, CAL)
    full = fuse([("a", 8.0)], [], {"a": 0.5}, 0.5, 10, 8.0, CAL)
    assert over == full


def test_ties_go_to_the_larger_key_the_newest_id():
    lexical = [("01A", 1.0), ("01C", 1.0), ("01B", 1.0)]
    assert [k for k, _ in fuse(lexical, [], {}, 0.5, 10, 2.0, CAL)] == ["01C", "01B", "01A"]
    assert [k for k, _ in fuse(lexical, [], {}, 0.5, 1, 2.0, CAL)] == ["01C"]


def test_keys_may_be_owner_and_id_pairs():
    # The domain fuses (owner, memory id) keys across a user's and an org's indexes.
    lexical = [(("alice", "m1"), 3.0), (("org", "m2"), 3.0)]
    cosine = {("alice", "m1"): 0.2, ("org", "m2"): 0.6}
    fused = fuse(lexical, [], cosine, 0.5, 10, 3.0, CAL)
    assert [k for k, _ in fused] == [("org", "m2"), ("alice", "m1")]


def test_the_attainable_score_is_the_sum_of_the_query_terms_weights():
    # A memory of average length holding each term once scores each term's weight.
    assert attainable({"penicillin": 3.5, "allergy": 1.25, "unseen": 6.0}) == pytest.approx(10.75)
    assert attainable({}) == 0.0


def test_a_near_miss_that_holds_a_fraction_of_the_query_does_not_outrank_the_meaning():
    # A paraphrased question: the answer shares no word with it (no BM25), the best cosine;
    # a distractor shares one rare word (a quarter of the query's weight) and is near in
    # meaning; the rest of the candidates are far.
    lexical = [("distractor", 2.0), ("other", 0.5)]
    cosine = {"answer": 0.62, "distractor": 0.50, "other": 0.20, "far": 0.10}
    dense = sorted(cosine.items(), key=lambda kv: kv[1], reverse=True)
    weight = BLEND.dense_weight(0.25)
    fused = fuse(lexical, dense, cosine, weight, 3, 8.0, CAL)
    assert [k for k, _ in fused][:2] == ["answer", "distractor"]
