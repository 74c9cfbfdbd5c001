"""Merging several owners' BM25 rankings into one list (no database)."""

from __future__ import annotations

from memory_bank.search.merge import merged

ALICE = ("alice", [("m5", 7.0), ("m1", 2.0)])
ORG = ("org", [("m4", 9.0), ("m3", 3.0), ("m2", 0.5)])


def test_hits_of_every_owner_interleave_by_raw_score():
    assert merged([ALICE, ORG], limit=10) == [
        ("org", "m4", 9.0),
        ("alice", "m5", 7.0),
        ("org", "m3", 3.0),
        ("alice", "m1", 2.0),
        ("org", "m2", 0.5),
    ]


def test_the_order_of_the_owners_does_not_matter():
    assert merged([ORG, ALICE], limit=10) == merged([ALICE, ORG], limit=10)


def test_limit_cuts_the_merged_list_not_each_owner_s():
    assert merged([ALICE, ORG], limit=2) == [("org", "m4", 9.0), ("alice", "m5", 7.0)]
    assert merged([ALICE, ORG], limit=0) == []


def test_ties_go_to_the_newest_id_whoever_owns_it():
    rankings = [("alice", [("01B", 1.0), ("01A", 1.0)]), ("org", [("01C", 1.0)])]
    assert [mid for _, mid, _ in merged(rankings, limit=10)] == ["01C", "01B", "01A"]
    assert merged(rankings, limit=1) == [("org", "01C", 1.0)]


def test_no_owners_or_no_hits_merge_to_nothing():
    assert merged([], limit=10) == []
    assert merged([("alice", []), ("org", [])], limit=10) == []
    assert merged([("alice", []), ORG], limit=10) == [("org", mid, s) for mid, s in ORG[1]]


def test_rankings_may_be_a_generator_read_once():
    # The domain passes a generator that runs each owner's search as it is read.
    assert merged(((o, r) for o, r in [ALICE]), limit=10) == [
        ("alice", "m5", 7.0),
        ("alice", "m1", 2.0),
    ]
