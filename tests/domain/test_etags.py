"""If-Match read as RFC 9110 says: `*` or a list of entity tags, compared strongly."""

from __future__ import annotations

import pytest

from memory_bank.domain.etags import IfMatch, etag, parse_if_match
from memory_bank.errors import InvalidRequest, RevisionConflict


@pytest.mark.parametrize(
    ("value", "matches_3"),
    [
        ('"3"', True),
        ("*", True),
        (" * ", True),
        ('"1", "3"', True),
        ('"1",,  , "3" ,', True),
        ('W/"3"', False),
        ('W/"3", "4"', False),
        ('"03"', False),
        ('"3,4"', False),
        ('""', False),
        ('"\x80"', False),
    ],
)
def test_well_formed_values_compare_strongly(value, matches_3):
    parsed = parse_if_match(value)
    assert parsed is not None and parsed.matches(3) is matches_3


@pytest.mark.parametrize(
    "value", ["3", '"3', '3"', "'3'", "W/3", 'w/"3"', 'W/ "3"', '*, "3"', '"3" "4"', "", " ,, "]
)
def test_malformed_values_are_400_naming_the_header(value):
    with pytest.raises(InvalidRequest) as raised:
        parse_if_match(value)
    assert raised.value.field == "If-Match"


def test_absent_header_is_no_precondition():
    assert parse_if_match(None) is None


def test_a_conflict_carries_the_current_revision_and_etag():
    with pytest.raises(RevisionConflict) as raised:
        IfMatch.revision(2).check(5)
    assert raised.value.extra == {"revision": 5}
    assert raised.value.headers == {"ETag": etag(5)} and etag(5) == '"5"'
