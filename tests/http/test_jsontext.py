"""Reading request JSON: what breaks the parser is located by field, without recursion."""

from __future__ import annotations

from typing import Any

import pytest

from memory_bank.errors import InvalidRequest
from memory_bank.http import jsontext
from memory_bank.http.jsontext import lone_surrogate, parse
from memory_bank.spec import inline, load_spec, operations


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


def _depth(schema: Any) -> int:
    """How deep a value of this schema nests (a scalar is 0, an object of scalars 1)."""
    if not isinstance(schema, dict):
        return 0
    inner = [
        *schema.get("properties", {}).values(),
        *([schema["items"]] if isinstance(schema.get("items"), dict) else []),
        *schema.get("oneOf", []),
        *schema.get("anyOf", []),
        *schema.get("allOf", []),
    ]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        inner.append(extra)
    nests = schema.get("type") in {"object", "array"} or "properties" in schema
    deepest = max((_depth(s) for s in inner), default=0)
    return deepest + (1 if nests else 0)


def test_the_depth_limit_is_above_every_request_body_of_the_spec():
    spec = load_spec()
    deepest = 0
    for op in operations(spec):
        body = op.definition.get("requestBody")
        if body is None:
            continue
        for media in inline(spec, body)["content"].values():
            deepest = max(deepest, _depth(media.get("schema")))
    assert 0 < deepest < jsontext.MAX_DEPTH
