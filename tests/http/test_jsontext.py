"""Reading request JSON: what breaks the parser is located by field, without recursion."""

from __future__ import annotations

import pytest

from memory_bank.errors import InvalidRequest
from memory_bank.http.jsontext import lone_surrogate, parse


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ('{"content": ' + "[" * 5000 + "]" * 5000 + "}", "content", "nested too deeply"),
        ("[" * 100_000, None, "nested too deeply"),
        ('{"a": {"b": [1, ' + "9" * 5000 + "]}}", "a.b.1", "too many digits"),
        ('{"content": "x\\ud800"}', "content", "unpaired UTF-16 surrogate"),
        ('{"tags": ["ok", "\\udfff"]}', "tags.1", "unpaired UTF-16 surrogate"),
        ('{"\\ud800": 1}', None, "unpaired UTF-16 surrogate"),
        ('{"content": "x",}', "body", "not valid JSON"),
    ],
)
def test_hostile_json_names_where_it_breaks(raw, field, words):
    with pytest.raises(InvalidRequest) as caught:
        parse(raw)
    assert caught.value.field == field
    assert words in caught.value.detail
    assert "\ud800" not in caught.value.detail and "\udfff" not in caught.value.detail


def test_valid_json_is_untouched():
    assert parse('{"content": "\\ud83d\\ude00 \\\\ud800 is text", "n": 1.5e300}') == {
        "content": "😀 \\ud800 is text",
        "n": 1.5e300,
    }
    assert lone_surrogate({"a": [{"b": "fine"}]}) is None
