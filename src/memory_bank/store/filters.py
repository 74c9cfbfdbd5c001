"""What a listing or a search is narrowed to (tags, creation and update time, source), as the
statements of one owner read it. Every statement names the owner.

Each filter reads an index that leads with the owner (migration 0014): a tag its rows in
memory_tag, a time range memory's (user_id, created_at) or (user_id, updated_at), a source
(user_id, source, created_at). The domain parses the filters (domain/filters.py); ranking applies
them before it picks the best k (search/index.py takes restrict(), search/dense.py a mask).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    literal,
    select,
    text,
)

from memory_bank.store.engine import is_sqlite, placeholder
from memory_bank.store.schema import memory, memory_tag
from memory_bank.store.sealing import data_keys


@dataclass(frozen=True)
class Filters:
    """What a memory must match to be listed or found; every field empty matches all."""

    tags: tuple[str, ...] = ()  # folded (store/tags.fold): each one must be carried
    created_after: datetime | None = None  # inclusive, naive UTC
    created_before: datetime | None = None  # exclusive
    updated_after: datetime | None = None  # inclusive
    source: str | None = None

    def __bool__(self) -> bool:
        return bool(self.tags) or any(
            v is not None
            for v in (self.created_after, self.created_before, self.updated_after, self.source)
        )


NONE = Filters()


def tag_forms(conn: Connection, owner: str, only: Filters) -> list[tuple[str, ...]]:
    """Each filter tag's stored forms in this owner's rows (hashed with their key, if any)."""
    if not only.tags:
        return []
    seal = data_keys.sealer(conn, owner)
    return [seal.tag_forms(t) for t in only.tags]


# Each time filter, once: the Filters field, the memory column it bounds, and how. Both the
# SQLAlchemy conditions (created, columns) and the driver SQL (created_bounds, conditions) are
# made from it.
_TIMES = (
    ("created_after", "created_at", ">="),
    ("created_before", "created_at", "<"),
    ("updated_after", "updated_at", ">="),
)
_OPS = {">=": operator.ge, "<": operator.lt}


def _times(only: Filters, *names: str) -> list[tuple[str, str, datetime]]:
    """(column, comparison, value) of the time filters set on these memory columns."""
    found = [(column, op, getattr(only, field)) for field, column, op in _TIMES]
    return [(c, op, value) for c, op, value in found if c in names and value is not None]


def created(only: Filters, column: Any) -> list[ColumnElement[bool]]:
    """The creation-time bounds on a column that holds it (memory's, or a tag row's copy)."""
    return [_OPS[op](column, value) for _, op, value in _times(only, "created_at")]


def columns(only: Filters) -> list[ColumnElement[bool]]:
    """The time and source conditions on `memory`."""
    conds = [_OPS[op](memory.c[c], value) for c, op, value in _times(only, *_COLUMNS)]
    if only.source is not None:
        rule = same_source(":only_source", "memory.source")
        conds.append(text(rule).bindparams(only_source=only.source))
    return conds


_COLUMNS = ("created_at", "updated_at")


def same_source(mark: str, column: str = "m.source") -> str:
    """SQL: the memory's source (`column`) is exactly the value `mark` stands for, marked twice.

    MySQL/MariaDB compare with PAD SPACE (utf8mb4_bin), so `=` alone finds `alice-src` for
    `alice-src ` where SQLite does not; equal under padding and of equal length is the same
    string. The length is checked on the entries of memory's (user_id, source, created_at, id)
    index that `=` finds, so the index still reads the source's range and holds all the check
    needs (a NO PAD collation in the query would not match the index's, and comparing as
    binary would not use it).
    """
    return f"{column} = {mark} AND LENGTH({column}) = LENGTH({mark})"


def carries(forms: Sequence[str], row: Any = memory) -> ColumnElement[bool]:
    """The memory of this row carries a tag of these stored forms: one primary-key lookup.

    `row` is `memory`, or a memory_tag row that drives the read (its key holds the memory's
    creation time and id), so other tags are checked before the memory is read. A scalar
    subquery, not EXISTS: MariaDB turns an EXISTS into a semi-join and may then read this tag's
    rows first, all of them, and sort, where the listing walks its index newest first and stops
    after a page.
    """
    t = memory_tag.alias()
    of_memory = row is memory
    carried = (
        select(literal(1))
        .where(
            t.c.user_id == row.c.user_id,
            t.c.tag.in_(list(forms)),
            t.c.created_at == row.c.created_at,
            t.c.memory_id == (row.c.id if of_memory else row.c.memory_id),
        )
        .limit(1)
        .scalar_subquery()
    )
    return carried.is_not(None)


def driving_tag(conn: Connection, owner: str, forms: list[tuple[str, ...]]) -> int:
    """Which filter tag has the fewest rows (counted up to a cap): the one a search's tag filter
    reads first, so two tags cost what the rarer one costs (a listing's page asks sparsest())."""
    if len(forms) < 2:
        return 0
    # One round trip for every tag's capped count (a statement per tag cost as much again at
    # 100k memories on a busy server), in driver SQL: building it in SQLAlchemy cost more than
    # running it.
    mark = placeholder(conn)
    counted = []
    params: list[Any] = []
    for i, each in enumerate(forms):
        counted.append(
            f"SELECT {i}, COUNT(*) FROM (SELECT t.memory_id FROM memory_tag t "
            f"WHERE t.user_id = {mark} AND t.tag IN ({_marks(mark, len(each))}) "
            f"LIMIT {_COUNT_CAP}) c{i}"
        )
        params += [owner, *each]
    rows = conn.exec_driver_sql(" UNION ALL ".join(counted), tuple(params)).all()
    counts = [0] * len(forms)
    for i, n in rows:
        counts[int(i)] = int(n)
    return min(range(len(forms)), key=counts.__getitem__)


# How far driving_tag counts a tag's rows, and how many memories changed_since reads: past it,
# a filter passes enough memories that a walk in listing order meets them soon. (Counting tags
# to 20,000, to tell 11% from 5.6% at 100k memories, cost the two-tag listing more than the
# better choice saved.)
_COUNT_CAP = 2000


def changed_since(conn: Connection, owner: str, since: datetime | None) -> list[str] | None:
    """The ids of the owner's memories updated at or after `since` when there are few (read
    from the update-time index), else None: the walk by creation time then finds them soon.

    A memory updated since was created before or since; those created since all pass, so a
    walk newest first is quick unless few pass, which is when this list is short.
    """
    if since is None:
        return None
    ids = conn.execute(
        select(memory.c.id)
        .where(memory.c.user_id == owner, memory.c.updated_at >= since)
        .limit(_COUNT_CAP + 1)
    ).scalars()
    changed = list(ids)
    return changed if len(changed) <= _COUNT_CAP else None


def created_bounds(conn: Connection, only: Filters, when: str) -> tuple[list[str], list[Any]]:
    """The creation-time bounds in driver SQL over `when` (a memory's created_at, or a tag
    row's copy of it), and their values in order."""
    mark = placeholder(conn)
    found = _times(only, "created_at")
    return [f"{when} {op} {mark}" for _, op, _ in found], [_when(conn, v) for _, _, v in found]


def conditions(conn: Connection, only: Filters, when: str) -> tuple[list[str], list[Any]]:
    """The time and source conditions in driver SQL over memory `m`, with a memory's creation
    time read from `when` (a tag row's copy, or m.created_at), and their values in order."""
    mark = placeholder(conn)
    conds, values = created_bounds(conn, only, when)
    for column, op, value in _times(only, "updated_at"):
        conds.append(f"m.{column} {op} {mark}")
        values.append(_when(conn, value))
    if only.source is not None:
        conds.append(same_source(mark))
        values += [only.source, only.source]
    return conds, values


def restrict(
    conn: Connection, owner: str, only: Filters, column: str
) -> tuple[str, str, list[Any]]:
    """The filters as driver SQL over a row whose memory id is `column` (BM25's postings), in
    the connection's placeholders: a condition that looks each row's memory up, the same as a
    membership in the passing set (search/index.py's Among says which suits when), and their
    values in order (the same for both)."""
    mark = placeholder(conn)
    # SQLite: `+column` keeps the planner reading postings by term and checking each against
    # the set, instead of reading every posting of each passing memory with its row.
    member = f"+{column}" if is_sqlite(conn) else column
    probes: list[str] = []
    sets: list[str] = []
    checks, params = conditions(conn, only, "m.created_at")
    if checks:
        facts = " AND ".join(checks)
        probes.append(
            f"EXISTS (SELECT 1 FROM memory m WHERE m.user_id = {mark} AND m.id = {column} "
            f"AND {facts})"
        )
        sets.append(f"{member} IN (SELECT m.id FROM memory m WHERE m.user_id = {mark} AND {facts})")
        params.insert(0, owner)
    for forms in tag_forms(conn, owner, only):
        marks = ", ".join([mark] * len(forms))
        probes.append(
            f"EXISTS (SELECT 1 FROM memory_tag t WHERE t.user_id = {mark} "
            f"AND t.memory_id = {column} AND t.tag IN ({marks}))"
        )
        sets.append(
            f"{member} IN (SELECT t.memory_id FROM memory_tag t WHERE t.user_id = {mark} "
            f"AND t.tag IN ({marks}))"
        )
        params += [owner, *forms]
    return " AND ".join(probes) or "1 = 1", " AND ".join(sets) or "1 = 1", params


def page(
    conn: Connection,
    owner: str,
    only: Filters,
    limit: int,
    before: tuple[datetime, str] | None = None,
) -> list[str]:
    """The ids of one page of the owner's memories that pass, newest first by creation time
    then id, after the position `before`: driven()'s plan in driver SQL, led by sparsest().

    SQLAlchemy spent more building and keying driven()'s statement than the database spent
    running it (most of a two-tag listing's time on a loaded machine), so the listing sends the
    text and reads the rows by id (store/memories.get_memories).
    """
    mark = placeholder(conn)
    forms = tag_forms(conn, owner, only)
    joined: list[Any] = []  # the values of the joins' conditions, which come first in the text
    params: list[Any] = []
    conds: list[str] = []
    if forms:
        # MySQL/MariaDB: the other tags joined on their primary key, in the order written, as
        # _passing() joins them, when each tag has one stored form (else `tag IN (plain,
        # hashed)` is no longer the whole key and the join may go through a join buffer).
        joins = len(forms) > 1 and not is_sqlite(conn) and all(len(f) == 1 for f in forms)
        first = sparsest(conn, owner, forms, only, before)
        when, key = "t.created_at", "t.memory_id"
        sql = f"SELECT {'STRAIGHT_JOIN ' if joins else ''}t.memory_id FROM memory_tag t"
        if not is_sqlite(conn):
            # The walk is the primary key's order, whatever the table's statistics say: with
            # statistics taken before the owner's rows came, MariaDB read every tag row of
            # the owner through (user_id, memory_id, tag) and sorted them (1,518 rows for a
            # page of 15, in the suite under load).
            sql += " FORCE INDEX (PRIMARY)"
        conds.append(f"t.user_id = {mark} AND t.tag IN ({_marks(mark, len(forms[first]))})")
        params += [owner, *forms[first]]
        for i, each in enumerate(forms):
            if i == first:
                continue
            if joins:
                # One primary-key lookup per row walked: faster for the benchmark's two tags at
                # 100k memories than the scalar subquery below (docs/search.md, Filters).
                sql += (
                    f" JOIN memory_tag o{i} ON o{i}.user_id = t.user_id AND o{i}.tag = {mark} "
                    f"AND o{i}.created_at = t.created_at AND o{i}.memory_id = t.memory_id"
                )
                joined += each
                continue
            # carries(): a scalar subquery on the other tag's primary key, not EXISTS (MariaDB
            # would make a semi-join of it and may read that tag's rows first, all of them).
            conds.append(
                f"(SELECT 1 FROM memory_tag o{i} WHERE o{i}.user_id = t.user_id "
                f"AND o{i}.tag IN ({_marks(mark, len(each))}) AND o{i}.created_at = t.created_at "
                f"AND o{i}.memory_id = t.memory_id LIMIT 1) IS NOT NULL"
            )
            params += each
        if only.updated_after is not None or only.source is not None:
            sql += " JOIN memory m ON m.user_id = t.user_id AND m.id = t.memory_id"
    else:
        when, key = "m.created_at", "m.id"
        sql = "SELECT m.id FROM memory m"
        conds.append(f"m.user_id = {mark}")
        params.append(owner)
    more, values = conditions(conn, only, when)
    conds += more
    params += values
    if before is not None:
        # created_at <= c bounds the index range; the OR only breaks ties of one millisecond.
        conds.append(f"{when} <= {mark} AND ({when} < {mark} OR {key} < {mark})")
        at = _when(conn, before[0])
        params += [at, at, before[1]]
    sql += f" WHERE {' AND '.join(conds)} ORDER BY {when} DESC, {key} DESC LIMIT {mark}"
    params.append(int(limit))
    return list(conn.exec_driver_sql(sql, (*joined, *params)).scalars())


def sparsest(
    conn: Connection,
    owner: str,
    forms: list[tuple[str, ...]],
    only: Filters,
    before: tuple[datetime, str] | None = None,
) -> int:
    """Which filter tag a page's walk should read (the others are looked up on its rows): the
    one whose rows are sparsest where the walk goes, newest first from `before` within the
    creation-time bounds.

    Each tag's _PROBE-th newest row there, in one statement: the tag whose row is oldest (or
    which has fewer rows) is the sparsest, so each row it drives meets the others most often.
    A walk fills its page from the newest rows, so their spacing is what it pays for; a count
    of every row says less and costs more (about four times as much for two common tags counted
    to 2,000 at 100k memories on MariaDB). A tag with several stored forms is counted (driving_tag):
    its newest rows are in two ranges.
    """
    if len(forms) < 2:
        return 0
    if any(len(f) > 1 for f in forms):
        return driving_tag(conn, owner, forms)
    mark = placeholder(conn)
    conds, values = created_bounds(conn, only, "p.created_at")
    if before is not None:
        conds.append(f"p.created_at <= {mark}")
        values.append(_when(conn, before[0]))
    bounds = [f" AND {cond}" for cond in conds]
    probes = []
    params: list[Any] = []
    for (form,) in forms:
        probes.append(
            f"(SELECT p.created_at FROM memory_tag p WHERE p.user_id = {mark} AND p.tag = {mark}"
            f"{''.join(bounds)} ORDER BY p.created_at DESC, p.memory_id DESC "
            f"LIMIT 1 OFFSET {_PROBE - 1})"
        )
        params += [owner, form, *values]
    row = conn.exec_driver_sql(f"SELECT {', '.join(probes)}", tuple(params)).one()
    # None: fewer than _PROBE rows there, so that tag is read first; else the oldest row's.
    few = [i for i, at in enumerate(row) if at is None]
    return few[0] if few else min(range(len(forms)), key=row.__getitem__)


# How many of each tag's newest rows sparsest() spaces out: enough to tell 11% from 5.6%.
_PROBE = 100


def _marks(mark: str, n: int) -> str:
    """n comma-separated placeholders."""
    return ", ".join([mark] * n)


def _when(conn: Connection, value: datetime) -> Any:
    """A time as the engine's driver compares it with a stored one (SQLite keeps text)."""
    if is_sqlite(conn):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def driven(conn: Connection, owner: str, only: Filters) -> tuple[Select[Any], Any, Any]:
    """A select over the owner's memories that pass the filters, read through the index that
    leads (module docstring), and the columns of its order: (creation time, id), newest first.

    A tag filter reads its rarest tag's rows (their key ends with the memory's creation time and
    id, so they walk newest first), checks the other tags on those rows before it reads the
    memory, and bounds the creation time on them too; without tags, `memory` is read through
    its creation-time or source index."""
    forms = tag_forms(conn, owner, only)
    if not forms:
        stmt = select(memory).where(memory.c.user_id == owner, *columns(only))
        return stmt, memory.c.created_at, memory.c.id
    first = driving_tag(conn, owner, forms)
    t = memory_tag.alias("t")
    joined = t.join(memory, and_(memory.c.user_id == t.c.user_id, memory.c.id == t.c.memory_id))
    others = [carries(f, t) for i, f in enumerate(forms) if i != first]
    stmt = (
        select(memory)
        .select_from(joined)
        .where(
            t.c.user_id == owner,
            t.c.tag.in_(list(forms[first])),
            *created(only, t.c.created_at),
            *others,
            *columns(only),
        )
    )
    return stmt, t.c.created_at, t.c.memory_id


def tagged(conn: Connection, owner: str, forms: list[tuple[str, ...]]) -> list[str]:
    """The owner's memory ids carrying every tag (each given by its stored forms): the rarest
    tag's rows, each looked up for the others."""
    first = driving_tag(conn, owner, forms)
    t = memory_tag.alias("t")
    others = [carries(f, t) for i, f in enumerate(forms) if i != first]
    stmt = select(t.c.memory_id).where(
        t.c.user_id == owner, t.c.tag.in_(list(forms[first])), *others
    )
    return list(dict.fromkeys(conn.execute(stmt).scalars()))


def few(conn: Connection, owner: str, only: Filters, cap: int) -> list[str] | None:
    """The ids of the owner's memories that pass the filters when there are at most cap of
    them, else None. Counted first (at most cap + 1 index entries read), so a filter that
    passes many costs a count, not cap ids sent back; several tags are grouped once instead.
    Driver SQL, as page(): on a loaded machine SQLAlchemy's building cost as much as the
    count."""
    sql, params = _passing(conn, owner, only)
    joined = only.updated_after is not None or only.source is not None
    if len(only.tags) > 1 or (only.tags and joined):
        # Several tags, or a tag joined to `memory`: the reading costs more than sending up to
        # cap + 1 ids back, so it is done once.
        ids = list(conn.exec_driver_sql(f"{sql} LIMIT {int(cap) + 1}", params).scalars())
        return ids if len(ids) <= cap else None
    counted = f"SELECT COUNT(*) FROM ({sql} LIMIT {int(cap) + 1}) p"
    if int(conn.exec_driver_sql(counted, params).scalar() or 0) > cap:
        return None
    return list(conn.exec_driver_sql(sql, params).scalars())


def estimate(conn: Connection, owner: str, only: Filters) -> int | None:
    """About how many of the owner's memories pass, at most (MySQL/MariaDB: the optimizer's
    estimate of the index range the filter reads first, from a few index dives, within 2x of
    the count at 100k memories); None on SQLite, which has no such estimate.

    Counting instead cost as much as it would save (25,000 entries on MariaDB). Only
    a choice of plan rests on it (search/index.py's score order), never which memories pass.
    """
    if is_sqlite(conn):
        return None
    sql, params = _passing(conn, owner, only)
    rows = conn.exec_driver_sql(f"EXPLAIN {sql}", params).mappings().all()
    return int(rows[0]["rows"] or 0) if rows else None


def _passing(conn: Connection, owner: str, only: Filters) -> tuple[str, tuple[Any, ...]]:
    """The ids of the owner's memories that pass the filters, through the index that leads,
    as driver SQL and its values; a tag filter reads `memory` only when a time or source
    condition needs it."""
    mark = placeholder(conn)
    forms = tag_forms(conn, owner, only)
    params: list[Any] = []
    # MySQL/MariaDB: several tags as the rarest tag's rows joined to each other tag's row of
    # the same memory (its primary key): half the time of grouping both tags' rows in a
    # temporary table, for two common tags at 100k memories. SQLite groups (measured fine), and
    # so does a tag with two stored forms (an owner being encrypted): `tag IN (plain, hashed)`
    # is no longer the whole key, and with fresh statistics MariaDB then joined the two tags'
    # ranges through a join buffer (seconds for 40k tag rows, against milliseconds before).
    joins_tags = len(forms) > 1 and not is_sqlite(conn) and all(len(f) == 1 for f in forms)
    if forms:
        when = "t.created_at"
        sql = "SELECT t.memory_id FROM memory_tag t"
        if joins_tags:
            first = driving_tag(conn, owner, forms)
            every = list(forms[first])
            for i, each in enumerate(forms):
                if i != first:
                    sql += (
                        f" JOIN memory_tag o{i} ON o{i}.user_id = t.user_id "
                        f"AND o{i}.created_at = t.created_at AND o{i}.memory_id = t.memory_id "
                        f"AND o{i}.tag IN ({_marks(mark, len(each))})"
                    )
                    params += each
        else:
            every = [form for each in forms for form in each]
        if only.updated_after is None and only.source is not None and not is_sqlite(conn):
            # MySQL/MariaDB: a source is checked in memory's (user_id, source, created_at, id)
            # index, which holds all it needs, not in the memory's row: CONCAT keeps the primary
            # key out of the join (MariaDB prefers it): about half the time, side by side, for
            # one tag's rows in the last 180 days at 100k memories.
            sql += (
                " JOIN memory m ON m.user_id = t.user_id AND m.created_at = t.created_at "
                "AND CONCAT(m.id) = t.memory_id"
            )
        elif only.updated_after is not None or only.source is not None:
            sql += " JOIN memory m ON m.user_id = t.user_id AND m.id = t.memory_id"
        conds = [f"t.user_id = {mark}", f"t.tag IN ({_marks(mark, len(every))})"]
        params += [owner, *every]
    else:
        params.append(owner)
        when = "m.created_at"
        sql = "SELECT m.id FROM memory m"
        conds = [f"m.user_id = {mark}"]
    more, values = conditions(conn, only, when)
    conds += more
    params += values
    sql += f" WHERE {' AND '.join(conds)}"
    if not forms:
        # In the order of the index that leads: else MariaDB reads the owner's rows by primary
        # key for a broad time range (ids follow creation time, so counting the last year's
        # first 2,001 read the year before it first, many times slower at 100k memories).
        only_updated = only.updated_after is not None and only.source is None
        only_updated &= only.created_after is None and only.created_before is None
        sql += f" ORDER BY m.{'updated_at' if only_updated else 'created_at'} DESC"
    if len(forms) > 1 and not joins_tags:
        # Several tags: every row of each, grouped by memory, rather than each row of one tag
        # looked up for the others (at 100k memories two common tags read 16k index entries
        # in order instead of looking 11k up). A memory has one row per folded tag, in one
        # stored form, so carrying all n tags is n rows.
        sql += f" GROUP BY t.memory_id HAVING COUNT(*) = {len(forms)}"
    return sql, tuple(params)
