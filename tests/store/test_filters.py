"""How a filtered search reads the passing memories, on both engines: the passing ids when few
(several tags intersected at once), the same best k whichever way the ranking is restricted,
and SQLite's primary-key index under the name the ranking asks for."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from databases import SPIDER_HEAD_URL
from memory_bank.domain import filters
from memory_bank.search import index
from memory_bank.search.document import postings_of
from memory_bank.store import filters as store_filters
from memory_bank.store import memories as store
from memory_bank.store import memory_writes
from memory_bank.store.engine import placeholder
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory, memory_tag


def _plant(service: Any, user: str, tagged: list[list[str]]) -> list[str]:
    """One memory per tag list, about harbours, each with a different count of the word; ids."""

    def work(conn: sa.Connection) -> list[str]:
        made = []
        for i, tags in enumerate(tagged):
            text = f"memory {i} " + "harbour " * (1 + i % 5) + f"and ferry {i % 7}"
            if i in (0, 1, 2):
                text += " under a lantern"
            row = memory_writes.insert_memory(
                conn, Owner(user, None, "test"), text, tags, [], postings_of(text, tags, [])
            )
            made.append(row.id)
        return made

    return list(service.db.writing(work))


def test_few_intersects_several_tags_and_says_many_past_the_cap(service):
    tagged = [["a", "b"] if i % 4 == 0 else ["a"] if i % 2 else ["b", "c"] for i in range(40)]
    ids = _plant(service, "alice", tagged)
    _plant(service, "bob", [["a", "b"]] * 5)
    both = {mid for mid, tags in zip(ids, tagged, strict=True) if {"a", "b"} <= set(tags)}
    found = filters.parse(["a", "B"])
    with service.db.reading() as conn:
        assert set(store_filters.few(conn, "alice", found, 100) or []) == both
        assert store_filters.few(conn, "alice", found, len(both)) is not None
        assert store_filters.few(conn, "alice", found, len(both) - 1) is None
        assert store_filters.few(conn, "alice", filters.parse(["c", "a"]), 100) == []


@pytest.mark.parametrize(
    ("few", "budget", "in_order"),
    [
        (10_000, index.POSTINGS_BUDGET, False),
        (0, index.POSTINGS_BUDGET, False),
        (0, 5, False),
        (0, index.POSTINGS_BUDGET, True),
        (0, 5, True),
    ],
    ids=["by-id", "by-posting", "passing-set", "score-order", "score-order-common"],
)
def test_a_filtered_search_ranks_the_same_best_k_whichever_way(
    service, monkeypatch, few, budget, in_order
):
    tagged = [["keep"] if i % 3 == 0 else ["drop"] for i in range(60)]
    ids = _plant(service, "alice", tagged)
    kept = {mid for mid, tags in zip(ids, tagged, strict=True) if tags == ["keep"]}
    only = filters.parse(["keep"])
    query = "lantern harbour ferry"
    with service.db.reading() as conn:
        everything = index.search(conn, "alice", query, 100)
        best = [mid for mid, _ in everything if mid in kept][:7]
        # few=10,000: the passing ids are listed and exactly those are ranked. few=0: postings
        # are checked one by one (or, in_order, the unfiltered best are checked in score
        # order); with a budget of 5 postings only `lantern` (in 3 memories, one of which
        # passes) is rare, so fewer than k pass and every term is ranked over the passing set.
        monkeypatch.setattr(filters, "FEW", few)
        monkeypatch.setattr(index, "POSTINGS_BUDGET", budget)
        among = filters.restriction(conn, "alice", only)
        assert among is not None
        monkeypatch.setattr(filters, "_broad", lambda *_: True)
        if not in_order:
            among = replace(among, on=None)
        hits = index.search(conn, "alice", query, 7, None, among)
    assert len(best) == 7
    assert [mid for mid, _ in hits] == best


_FILTERS = [
    {"tag": ["keep"]},
    {"tag": ["keep", "red"]},
    {"source": "ci"},
    {"created_after": "2026-01-05"},
    {"created_before": "2026-01-05", "tag": ["red"]},
    {"created_after": "2026-01-02", "created_before": "2026-01-09", "source": "ci"},
]


@pytest.mark.parametrize("params", _FILTERS, ids=lambda p: "+".join(p))
@pytest.mark.parametrize("read", [1, 2, 16], ids=lambda r: f"read-{r}")
def test_score_order_answers_exactly_as_ranking_the_passing_or_gives_way(
    service, monkeypatch, params, read
):
    """Ranked unfiltered and checked best first, the answer is the passing memories' own
    ranking; when too few of the unfiltered best pass (a short read), the passing memories
    are ranked instead, with the same answer."""
    rng = random.Random(5)
    words = ["harbour", "ferry", "lantern", "tide", "quay", "gull"]

    def work(conn: sa.Connection) -> None:
        for i in range(120):
            text = " ".join(rng.choices(words, k=rng.randint(2, 9))) + f" note {i}"
            tags = [t for t in ("keep", "red") if rng.random() < 0.4]
            row = memory_writes.insert_memory(
                conn,
                Owner("alice", None, rng.choice(["ci", "cli"])),
                text,
                tags,
                [],
                postings_of(text, tags, []),
            )
            when = datetime(2026, 1, 1) + timedelta(hours=2 * i)
            conn.execute(
                sa.update(memory)
                .where(memory.c.user_id == "alice", memory.c.id == row.id)
                .values(created_at=when)
            )
            conn.execute(
                sa.update(memory_tag)
                .where(memory_tag.c.user_id == "alice", memory_tag.c.memory_id == row.id)
                .values(created_at=when)
            )

    service.db.writing(work)
    only = filters.parse(
        params.get("tag"),
        params.get("created_after"),
        params.get("created_before"),
        source=params.get("source"),
    )
    monkeypatch.setattr(filters, "FEW", 0)
    monkeypatch.setattr(index, "SCORE_ORDER_READ", read)
    # Every filter counts as broad here (it is what decides to try the score order, not what
    # makes it exact).
    monkeypatch.setattr(filters, "_broad", lambda *_: True)
    answered: list[bool] = []
    in_order = index._in_score_order

    def traced(*args: Any) -> Any:
        found = in_order(*args)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(index, "_in_score_order", traced)
    with service.db.reading() as conn:
        among = filters.restriction(conn, "alice", only)
        assert among is not None and among.on is not None
        for query, limit in [("harbour tide", 5), ("lantern gull quay ferry", 12), ("tide", 40)]:
            for budget in (index.POSTINGS_BUDGET, 30):
                monkeypatch.setattr(index, "POSTINGS_BUDGET", budget)
                ordered = index.search(conn, "alice", query, limit, None, among)
                exact = index.search(conn, "alice", query, limit, None, replace(among, on=None))
                assert ordered == exact, (query, limit, budget)
                assert ordered
    assert answered
    # A read of 16 times what is needed answers some in score order; a read of just what is
    # needed gives way to ranking the passing memories whenever one of them fails.
    if read == 16:
        assert any(answered)
    if read == 1:
        assert not all(answered)


def test_sqlite_names_the_postings_primary_key_as_the_ranking_expects(service):
    with service.db.reading() as conn:
        if conn.dialect.name != "sqlite":
            pytest.skip("an SQLite index name")
        keys = [
            r[1] for r in conn.exec_driver_sql("PRAGMA index_list('memory_term')") if r[3] == "pk"
        ]
    assert keys == [index.SQLITE_TERM_KEY]


@pytest.mark.skipif(
    bool(SPIDER_HEAD_URL),
    reason="a Spider head estimates rows its own way (2 of 90 here), so through it a broad "
    "filter takes the exact path: the same results, without the score-order shortcut",
)
def test_the_engine_estimates_a_broad_filter_broad_and_a_rare_one_not(service):
    tagged = [["rare"] if i == 7 else ["common"] for i in range(90)]
    _plant(service, "alice", tagged)
    with service.db.reading() as conn:
        broad = store_filters.estimate(conn, "alice", filters.parse(["common"]))
        rare = store_filters.estimate(conn, "alice", filters.parse(["rare"]))
        if conn.dialect.name == "sqlite":
            assert broad is None and rare is None
            return
    assert broad is not None and rare is not None
    assert broad * index.BROAD_SHARE >= 90
    assert rare * index.BROAD_SHARE < 90


def test_counting_a_broad_time_range_reads_the_cap_not_every_memory(service):
    _plant(service, "alice", [[] for _ in range(400)])
    recent = filters.parse(created_after="2000-01-01")
    with service.db.reading() as conn:
        if conn.dialect.name == "sqlite":
            plan = " ".join(
                str(r[-1])
                for r in conn.exec_driver_sql(
                    "EXPLAIN QUERY PLAN " + store_filters._passing(conn, "alice", recent)[0],
                    store_filters._passing(conn, "alice", recent)[1],
                )
            )
            assert "ix_memory_user_created" in plan, plan
        else:
            conn.exec_driver_sql("FLUSH STATUS")
            assert store_filters.few(conn, "alice", recent, 50) is None
            # The cap's 51 index entries newest first, not the owner's 400 rows by key.
            read = sum(
                int(value)
                for _, value in conn.exec_driver_sql(
                    "SHOW SESSION STATUS WHERE Variable_name IN "
                    "('Handler_read_key', 'Handler_read_next', 'Handler_read_prev', "
                    "'Handler_read_rnd_next')"
                )
            )
            assert read < 150, read


def _plant_at(service: Any, user: str, made: list[tuple[list[str], datetime, str]]) -> list[str]:
    """One memory per (tags, creation time, source); ids."""

    def work(conn: sa.Connection) -> list[str]:
        ids = []
        for i, (tags, when, source) in enumerate(made):
            text = f"note {i}"
            row = memory_writes.insert_memory(
                conn,
                Owner(user, None, source),
                text,
                tags,
                [],
                postings_of(text, tags, []),
                created_at=when,
            )
            ids.append(row.id)
        return ids

    return list(service.db.writing(work))


def test_the_sparsest_tag_where_a_page_walks_leads_it_not_the_rarest_overall(service, monkeypatch):
    """A page walks newest first, so the tag whose rows are sparsest there drives it, even
    when another has fewer rows in all (a count would pick that one)."""
    monkeypatch.setattr(store_filters, "_PROBE", 3)
    day = datetime(2026, 1, 1)
    # `old`: 10 rows in its first days and one on day 100; `new`: 4 rows on days 96-99;
    # `few`: 2 rows.
    made = [(["old"], day + timedelta(days=d), "cli") for d in [*range(10), 100]]
    made += [(["new"], day + timedelta(days=d), "cli") for d in range(96, 100)]
    made += [(["few"], day + timedelta(days=d), "cli") for d in (5, 97)]
    _plant_at(service, "alice", made)
    _plant_at(service, "bob", [(["new"], day + timedelta(days=1), "cli")] * 5)
    with service.db.reading() as conn:

        def leads(tags: list[str], before: datetime | None = None, **bounds: str) -> str:
            found = filters.parse(tags, **bounds)
            forms = store_filters.tag_forms(conn, "alice", found)
            at = (before, "mem_~") if before else None
            return tags[store_filters.sparsest(conn, "alice", forms, found, at)]

        assert leads(["old", "new"]) == "old" == leads(["new", "old"])
        forms = store_filters.tag_forms(conn, "alice", filters.parse(["old", "new"]))
        assert store_filters.driving_tag(conn, "alice", forms) == 1  # counted: `new`
        # Before day 50 `new` has no rows, after day 95 `old` has one: fewer than the probe.
        assert leads(["old", "new"], before=day + timedelta(days=50)) == "new"
        assert leads(["new", "old"], created_before="2026-02-20") == "new"
        assert leads(["new", "old"], created_after="2026-04-06") == "old"
        assert leads(["new", "old", "few"]) == "few"


def test_a_page_of_several_tags_is_the_same_whichever_tag_leads(service, monkeypatch):
    """Each page of a several-tag listing, cursor by cursor, is the memories that pass newest
    first, whichever tag drives the walk (MariaDB joins the others, SQLite looks them up)."""
    rng = random.Random(11)
    start = datetime(2026, 1, 1)
    made = []
    for i in range(160):
        # `c` only in the first half, `b` denser in the second: the sparsest tag changes
        # along the walk.
        share = {"a": 0.6, "b": 0.2 if i < 80 else 0.6, "c": 0.5 if i < 80 else 0.0}
        tags = [t for t, p in share.items() if rng.random() < p]
        made.append((tags, start + timedelta(hours=i, milliseconds=i % 3), rng.choice("xy")))
    ids = _plant_at(service, "alice", made)
    _plant_at(service, "bob", [(["a", "b", "c"], start, "x")] * 5)
    facts = sorted(zip(ids, made, strict=True), key=lambda r: (r[1][1], r[0]), reverse=True)
    cases = [
        ({"tag": ["a", "b"]}, lambda tags, when, src: {"a", "b"} <= set(tags)),
        ({"tag": ["b", "a", "c"]}, lambda tags, when, src: {"a", "b", "c"} <= set(tags)),
        (
            {"tag": ["c", "a"], "created_after": "2026-01-02"},
            lambda tags, when, src: {"a", "c"} <= set(tags) and when >= datetime(2026, 1, 2),
        ),
        (
            {"tag": ["a", "b"], "source": "x"},
            lambda tags, when, src: {"a", "b"} <= set(tags) and src == "x",
        ),
    ]
    chosen = store_filters.sparsest
    with service.db.reading() as conn:
        for params, passes in cases:
            found = filters.parse(
                params["tag"], params.get("created_after"), source=params.get("source")
            )
            expected = [mid for mid, (tags, when, src) in facts if passes(tags, when, src)]
            assert len(expected) > 7, params
            for lead in [None, *range(len(params["tag"]))]:
                pick = chosen if lead is None else (lambda *_, lead=lead: lead)
                monkeypatch.setattr(store_filters, "sparsest", pick)
                listed: list[str] = []
                before = None
                while True:
                    ids_ = store_filters.page(conn, "alice", found, 7, before)
                    listed += ids_
                    if len(ids_) < 7:
                        break
                    at = next(when for mid, (_, when, _) in facts if mid == ids_[-1])
                    before = (at, ids_[-1])
                assert listed == expected, (params, lead)


def test_a_two_tag_page_walks_the_sparser_tag_in_index_order(service, monkeypatch):
    """MariaDB's handler counters: a page of two tags reads the sparser tag's newest rows and
    one lookup of the other for each, not the commoner tag's rows, nor every row sorted."""
    with service.db.reading() as conn:
        if conn.dialect.name == "sqlite":
            pytest.skip("MariaDB's handler counters")
    monkeypatch.setattr(store_filters, "_PROBE", 10)
    _plant(
        service, "alice", [["common", "quarter"] if i % 4 == 0 else ["common"] for i in range(400)]
    )
    found = filters.parse(["common", "quarter"])
    with service.db.reading() as conn:
        conn.exec_driver_sql("FLUSH STATUS")
        ids = store_filters.page(conn, "alice", found, 20)
        read = sum(
            int(value)
            for _, value in conn.exec_driver_sql(
                "SHOW SESSION STATUS WHERE Variable_name IN "
                "('Handler_read_key', 'Handler_read_next', 'Handler_read_prev', "
                "'Handler_read_rnd_next', 'Handler_read_rnd')"
            )
        )
    assert len(ids) == 20
    # The probe's 2 x 10 entries, then 20 `quarter` rows and a lookup of `common` for each
    # (about 60); led by `common`, 80 rows and 80 lookups; sorted, all 100 `quarter` rows.
    assert read < 100, read


def test_a_tag_with_a_source_is_counted_in_the_source_index(service):
    """The memories that pass a tag, a source and a time, read (MySQL/MariaDB) from the source
    index, which holds all the check needs, rather than from each memory's row."""
    rng = random.Random(3)
    start = datetime(2026, 1, 1)
    made = [
        (
            [t for t in ("a", "b") if rng.random() < 0.5],
            start + timedelta(hours=i),
            rng.choice(["ci", "cli", "web"]),
        )
        for i in range(120)
    ]
    ids = _plant_at(service, "alice", made)
    _plant_at(service, "bob", [(["a"], start + timedelta(hours=50), "ci")] * 3)
    found = filters.parse(["a"], "2026-01-02", source="ci")
    expected = {
        mid
        for mid, (tags, when, src) in zip(ids, made, strict=True)
        if "a" in tags and src == "ci" and when >= datetime(2026, 1, 2)
    }
    assert expected
    with service.db.reading() as conn:
        assert set(store_filters.few(conn, "alice", found, 500) or []) == expected
        assert set(
            store_filters.few(conn, "alice", filters.parse(["a", "b"], source="ci"), 500) or []
        ) == {
            mid
            for mid, (tags, _, src) in zip(ids, made, strict=True)
            if {"a", "b"} <= set(tags) and src == "ci"
        }
        if conn.dialect.name == "sqlite" or SPIDER_HEAD_URL:
            return
        sql, params = store_filters._passing(conn, "alice", found)
        plan = conn.exec_driver_sql("EXPLAIN " + sql, params).mappings().all()
    read = {row["table"]: row for row in plan}
    assert "Using index" in str(read["m"]["Extra"]), plan


def _rows_read(conn: sa.Connection) -> int:
    """Rows this session's handlers have read so far (every Handler_read_* counter)."""
    rows = conn.exec_driver_sql("SHOW SESSION STATUS LIKE 'Handler_read%%'").all()
    return sum(int(value) for _, value in rows)


def test_a_tag_listing_walks_the_tag_after_the_tables_grew(fresh_mariadb):
    # Under load in the suite, a listing of one tag once read every tag row of the owner
    # through (user_id, memory_id, tag) and sorted them (1,518 rows for 15): statistics taken
    # before the owner's rows came. The walk now names the primary key; this pins what it
    # reads with the statistics of an empty table (not retaken here, whatever the server's
    # background thread would do).
    engine, n = fresh_mariadb, 1500
    rare = filters.parse(["rare"])
    with engine.connect() as conn:
        # Statistics as a busy server has them: taken while empty, not yet retaken (InnoDB
        # retakes them in the background after 10% of a table changed, in its own time).
        conn.exec_driver_sql("ALTER TABLE memory_tag STATS_AUTO_RECALC=0")
        conn.exec_driver_sql("ANALYZE TABLE memory_tag")
        assert store.list_memories(conn, "alice", 20, None, rare) == []
    made = []
    with engine.begin() as conn:
        for i in range(n):
            tags = ["rare"] if i % 100 == 0 else ["common"]
            text = f"memory {i}"
            row = memory_writes.insert_memory(
                conn, Owner("alice", None, "bulk"), text, tags, [], postings_of(text, tags, [])
            )
            made.append(row.id)
    with engine.connect() as conn:
        before = _rows_read(conn)
        page = store.list_memories(conn, "alice", 20, None, rare)
        read = _rows_read(conn) - before
    assert [m.id for m in page] == list(reversed(made[::100]))
    assert read < 200, read


def test_a_source_matches_exactly_on_both_engines(service):
    """A trailing space makes another source: MySQL/MariaDB's PAD SPACE collations would
    compare `alice-src ` equal to `alice-src`, SQLite not; every statement answers as SQLite."""
    start = datetime(2026, 1, 1)
    sources = ["alice-src", "alice-src ", "alice-src", "alice-src  ", "alice-srd"]
    made = [(["a"], start + timedelta(hours=i), src) for i, src in enumerate(sources)]
    ids = _plant_at(service, "alice", made)
    with service.db.reading() as conn:
        mark = placeholder(conn)
        for source in ("alice-src", "alice-src ", "alice-src  ", "alice-src   "):
            want = {mid for mid, src in zip(ids, sources, strict=True) if src == source}
            for tags in ([], ["a"]):
                only = filters.parse(tags, "2025-12-31", source=source)
                got = {
                    "few": set(store_filters.few(conn, "alice", only, 100) or []),
                    "page": set(store_filters.page(conn, "alice", only, 100)),
                    "driven": {
                        r.id for r in conn.execute(store_filters.driven(conn, "alice", only)[0])
                    },
                    "columns": set(
                        conn.execute(
                            sa.select(memory.c.id).where(
                                memory.c.user_id == "alice", *store_filters.columns(only)
                            )
                        ).scalars()
                    ),
                }
                probe, members, params = store_filters.restrict(conn, "alice", only, "x.id")
                for name, cond in (("probe", probe), ("members", members)):
                    sql = f"SELECT x.id FROM memory x WHERE x.user_id = {mark} AND {cond}"
                    got[name] = set(conn.exec_driver_sql(sql, ("alice", *params)).scalars())
                assert got == dict.fromkeys(got, want), (source, tags)
