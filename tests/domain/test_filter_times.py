"""The domain's reading of a filter's time: RFC 3339 in ASCII only, whatever the spec's pattern
lets through (a regex's \\d takes any script's digits, its $ a trailing newline)."""

from __future__ import annotations

from datetime import datetime

import pytest

from memory_bank.domain import filters
from memory_bank.errors import InvalidRequest


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-12-01", datetime(2026, 12, 1)),
        ("2026-12-01T09:30:00Z", datetime(2026, 12, 1, 9, 30)),
        ("2026-12-01t09:30:00.5+01:00", datetime(2026, 12, 1, 8, 30, 0, 500_000)),
        ("2026-12-01 09:30:00z", datetime(2026, 12, 1, 9, 30)),
    ],
)
def test_rfc_3339_in_ascii_is_read(value, expected):
    assert filters.instant(value, "created_after") == expected


@pytest.mark.parametrize(
    "value",
    [
        "２０２６-１２-０１",  # full-width digits
        "٢٠٢٦-١٢-٠١",  # Arabic-Indic digits
        "2026-12-0１",  # one full-width digit
        "2026-12-01T09:30:0０Z",
        "2026-12-01T09:30:00.５Z",
        "2026-12-01T09:30:00+0１:00",
        "2026-12-01\n",  # a trailing newline
        "2026-12-01T09:30:00Z\n",
        "2026-12-01\r\n",
        " 2026-12-01",
        "2026-12-01 ",
        "\t2026-12-01",
        "2026-12-01T09:30:00Z ",
    ],
)
def test_anything_else_is_a_400_naming_the_field(value):
    with pytest.raises(InvalidRequest) as refused:
        filters.instant(value, "updated_after")
    assert refused.value.field == "updated_after"
    assert "updated_after" in refused.value.detail


def test_parse_names_the_field_that_is_wrong():
    with pytest.raises(InvalidRequest) as refused:
        filters.parse(created_after="2026-12-01", created_before="2026-12-01\n")
    assert refused.value.field == "created_before"
