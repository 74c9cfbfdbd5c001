"""The filters of a listing or a search (tag, creation and update time, source), parsed once.

They combine with AND (and with scope); a search applies them before ranking (domain/search.py),
so its top k are the best k memories that pass. The spec states their shapes; this module reads
what a pattern cannot check (a real calendar day, a time zone offset, an empty time range).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from memory_bank.errors import InvalidRequest
from memory_bank.search.index import Among
from memory_bank.spec import load_spec
from memory_bank.store import filters as store_filters
from memory_bank.store.filters import NONE, Filters
from memory_bank.store.tags import fold

if TYPE_CHECKING:
    import numpy as np

    from memory_bank.search.dense import Matrix

__all__ = ["NONE", "Filters", "instant", "keep", "parse", "restriction"]

# RFC 3339: full-date, or full-date "T" full-time with a "Z" or a numeric offset (T and Z in
# either case, as section 5.6 allows; a space for T, as its note allows). ASCII digits only
# ([0-9], not \d: int() reads full-width and other scripts' digits too), and the whole value
# (fullmatch, never a `$` that lets a trailing newline through), whatever the spec's pattern
# admits.
_INSTANT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2})))?",
    re.ASCII,
)


@cache
def max_tags() -> int:
    """How many tags one filter may name, as the spec's `tag` parameter states it (a listing
    from the command line, `users export`, meets no Connexion to check it)."""
    return int(load_spec()["components"]["parameters"]["TagFilter"]["schema"]["maxItems"])


def parse(
    tag: list[str] | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    updated_after: str | None = None,
    source: str | None = None,
) -> Filters:
    """Filters from their query values; 400 invalid_request naming the parameter that is wrong."""
    tags = tuple(dict.fromkeys(fold(t) for t in tag or []))
    if any(not t for t in tags):
        raise InvalidRequest("A tag cannot be empty.", field="tag")
    if len(tags) > max_tags():
        raise InvalidRequest(f"Filter by at most {max_tags()} tags.", field="tag")
    found = Filters(
        tags=tags,
        created_after=instant(created_after, "created_after"),
        created_before=instant(created_before, "created_before"),
        updated_after=instant(updated_after, "updated_after"),
        source=source,
    )
    # A window that ends where it starts (or before) is valid and simply empty: the schema
    # cannot state the order of two parameters, so refusing it would be a 400 for a
    # schema-valid request.
    return found


def instant(value: str | None, name: str) -> datetime | None:
    """An RFC 3339 date (00:00 UTC that day) or date-time as a naive UTC datetime; 400 naming
    `name` when it is neither."""
    if value is None:
        return None
    # Not stripped: white space around a time is not RFC 3339 either.
    match = _INSTANT.fullmatch(value)
    if match is None:
        raise InvalidRequest(
            f"{name} must be an RFC 3339 date (2026-12-01, meaning 00:00 UTC) or date-time "
            "with its offset (2026-12-01T09:30:00Z).",
            field=name,
        )
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        when = datetime(int(year), int(month), int(day), tzinfo=UTC)
        if hour is not None:
            if int(off_h or 0) > 23 or int(off_m or 0) > 59:
                raise ValueError("offset out of range")
            offset = timedelta(hours=int(off_h or 0), minutes=int(off_m or 0))
            zone = timezone(-offset if sign == "-" else offset) if not zulu else UTC
            # A leap second (:60, which RFC 3339 allows) is read as the next minute's start.
            leap = int(second) == 60
            when = datetime(
                int(year),
                int(month),
                int(day),
                int(hour),
                int(minute),
                int(second) - leap,
                tzinfo=zone,
            ) + timedelta(seconds=leap)
            # Rounded up to the microsecond: times are stored to the millisecond, and on that
            # grid "at or after t" and "before t" mean the same for t and its ceiling.
            nanos = int((fraction or "0").ljust(9, "0"))
            when += timedelta(microseconds=-(-nanos // 1000))
        return when.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        raise InvalidRequest(
            f"{name} is not a real date and time: {value[:40]!r}.", field=name
        ) from None


# Up to this many memories pass: BM25 ranks them by id (a few lookups per query term) rather
# than checking each posting it reads.
FEW = 2000


def restriction(conn: Connection, owner: str, only: Filters) -> Among | None:
    """The filters as BM25 applies them to one owner's postings (None: no filter)."""
    if not only:
        return None
    probe, members, params = store_filters.restrict(conn, owner, only, "memory_term.memory_id")
    return Among(
        probe,
        params,
        lambda: store_filters.few(conn, owner, only, FEW),
        members,
        lambda column: _probe(conn, owner, only, column),
        lambda docs, share: _broad(conn, owner, only, docs, share),
    )


def _broad(conn: Connection, owner: str, only: Filters, docs: int, share: int) -> bool:
    """Whether the engine estimates that at least 1 in `share` of the owner's memories pass
    (no estimate, as on SQLite: no)."""
    passing = store_filters.estimate(conn, owner, only)
    return passing is not None and passing * share >= docs


def _probe(conn: Connection, owner: str, only: Filters, column: str) -> tuple[str, list[Any]]:
    """The filters as a lookup of each row's memory, on another column than the postings'."""
    probe, _, params = store_filters.restrict(conn, owner, only, column)
    return probe, params


def keep(conn: Connection, owner: str, matrix: Matrix, only: Filters) -> np.ndarray | None:
    """Which rows of one owner's vector matrix pass the filters (None: no filter). Times and
    source come from the matrix's facts, tags from the owner's tag rows."""
    if not only:
        return None
    facts = matrix.facts
    if facts is None:
        # A matrix loaded without facts: the owner's memories that pass, read from their rows.
        stmt, _, key = store_filters.driven(conn, owner, only)
        return matrix.among(conn.execute(stmt.with_only_columns(key)).scalars())
    kept = facts.passing(only.created_after, only.created_before, only.updated_after, only.source)
    forms = store_filters.tag_forms(conn, owner, only)
    if forms:
        kept &= matrix.among(store_filters.tagged(conn, owner, forms))
    return kept
