"""The compiled body check accepts nothing Connexion's validator rejects, on every request body."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from connexion.json_schema import Draft4RequestValidator, resolve_refs
from jsonschema import Draft4Validator

from memory_bank.http.validation import compiled_check, draft4_schema
from memory_bank.spec import load_spec

SAVE = {
    "content": "We dropped Acme as a vendor after the Q3 price change",
    "tags": ["vendors", "2023-05-01"],
    "contexts": [
        {"snippet": "Melanie: drop Acme", "conversation_id": "c1", "message_id": "D1:2"},
        {"snippet": "Caroline: agreed", "conversation_id": None, "origin": None},
        {"snippet": "Caroline: agreed", "origin": "active_conversation"},
    ],
}

# Values dropped into bodies at random: every JSON type, and the strings and numbers that sit
# on the schema's edges (empty, blank, NUL, a trailing newline, too long, non-integral).
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    1.5,
    10**20,
    "",
    " ",
    "\n",
    "x\n",
    "x\x00",
    "\x00",
    "ok",
    "ü" * 65,
    "x" * 129,
    "x" * 8001,
    "active_conversation",
    "nope",
    [],
    [None],
    ["x"],
    ["x"] * 33,
    {},
    {"snippet": "s"},
    {"snippet": ""},
    {"x": 1},
]


def _request_schemas() -> dict[str, dict[str, Any]]:
    """operationId -> its JSON request body schema, as Connexion hands it to the validator."""
    spec = resolve_refs(load_spec())
    found = {}
    for item in spec["paths"].values():
        for op in item.values():
            if not isinstance(op, dict) or "requestBody" not in op:
                continue
            content = op["requestBody"]["content"]
            schema = next(v["schema"] for k, v in content.items() if "json" in k)
            found[op["operationId"]] = {**schema, "components": spec.get("components", {})}
    return found


SCHEMAS = _request_schemas()


def _connexion_accepts(schema: dict[str, Any], body: Any) -> bool:
    """What Connexion's own request validator says."""
    validator = Draft4RequestValidator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)
    return bool(validator.is_valid(body))


def _compiled_accepts(schema: dict[str, Any], body: Any) -> bool:
    """What the compiled check says (False where there is none: Connexion decides then)."""
    check = compiled_check(schema)
    if check is None:
        return False
    try:
        check(copy.deepcopy(body))
    except Exception:
        return False
    return True


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    found = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*prefix, i))
    return found


def _replaced(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of body with the value at path replaced (or body itself for the empty path)."""
    if not path:
        return copy.deepcopy(value)
    out = copy.deepcopy(body)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = copy.deepcopy(value)
    return out


def _variants(base: Any, rng: random.Random, count: int) -> list[Any]:
    """Bodies near base: one value swapped, a key dropped or added, then random pile-ups."""
    out = [base]
    for path in _paths(base):
        for value in ODD_VALUES:
            out.append(_replaced(base, path, value))
        if path and isinstance(path[-1], str):
            dropped = copy.deepcopy(base)
            node = dropped
            for step in path[:-1]:
                node = node[step]
            del node[path[-1]]
            out.append(dropped)
    for path in _paths(base):
        if path == () or isinstance(_replaced(base, path, None), dict):
            added = _replaced(base, path, {"unexpected": 1}) if path else {**base, "unexpected": 1}
            out.append(added)
    for _ in range(count):
        body = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            body = _replaced(body, rng.choice(_paths(body)), rng.choice(ODD_VALUES))
        out.append(body)
    return out


def _sample(schema: dict[str, Any]) -> Any:
    """A body that satisfies the schema: required properties, then the save's own fields."""
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties", {})
        body = {name: _sample(props[name]) for name in schema.get("required", [])}
        for name, value in SAVE.items():
            if name in props and _connexion_accepts(props[name], value):
                body[name] = copy.deepcopy(value)
        return body
    if schema.get("type") == "array":
        return [_sample(schema.get("items", {}))]
    if "enum" in schema:
        return next(v for v in schema["enum"] if v is not None)
    if schema.get("type") in {"integer", "number"}:
        return schema.get("minimum", 1)
    if schema.get("type") == "boolean":
        return True
    return "a plain value"


def test_the_save_body_gets_a_compiled_check():
    schema = SCHEMAS["postMemory"]
    assert compiled_check(schema) is not None
    assert _compiled_accepts(schema, SAVE)
    assert not _compiled_accepts(schema, {**SAVE, "content": ""})


def test_the_check_is_compiled_once_per_schema_object():
    schema = SCHEMAS["postMemory"]
    assert compiled_check(schema) is compiled_check(schema)
    # An equal but distinct object is compiled on its own, never mistaken for another.
    twin = copy.deepcopy(schema)
    assert compiled_check(twin) is not compiled_check(schema)


@pytest.mark.parametrize("operation", sorted(SCHEMAS))
def test_compiled_check_never_accepts_what_connexion_rejects(operation):
    schema = SCHEMAS[operation]
    base = _sample(schema)
    assert _connexion_accepts(schema, base), base
    rng = random.Random(operation)
    bodies = _variants(base, rng, 1500)
    accepted = rejected = 0
    for body in bodies:
        fast = _compiled_accepts(schema, body)
        if fast:
            accepted += 1
            assert _connexion_accepts(schema, body), json.dumps(body)[:300]
        elif _connexion_accepts(schema, body):
            rejected += 1  # Connexion accepts it on the slow path: still the same answer
    if compiled_check(schema) is not None:
        # The fast path is taken for ordinary bodies, not just present.
        assert _compiled_accepts(schema, base)
        assert accepted > 0


def test_nullable_becomes_a_null_type_and_enum():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "nullable": True},
            "b": {"type": "string", "nullable": True, "enum": ["x", None]},
            "c": {"type": "string", "enum": ["x"], "x-nullable": True},
            "d": {"type": "string", "enum": [{"nullable": True, "type": "string"}]},
        },
    }
    converted = draft4_schema(schema)
    assert converted is not None
    props = converted["properties"]
    assert props["a"]["type"] == ["string", "null"]
    assert props["b"]["enum"] == ["x", None]
    assert props["c"] == {"type": ["string", "null"], "enum": ["x", None], "x-nullable": True}
    # Values inside enum are data, not schemas: left as they are.
    assert props["d"]["enum"] == [{"nullable": True, "type": "string"}]


def test_schemas_with_formats_or_broken_references_get_no_compiled_check():
    assert draft4_schema({"type": "string", "format": "date-time"}) is None
    assert draft4_schema({"$ref": "#/components/schemas/X"}) is None
    assert compiled_check({"type": "object", "properties": {"t": {"format": "email"}}}) is None
    # A format behind a reference counts too.
    when = {"schemas": {"When": {"type": "string", "format": "date-time"}}}
    assert draft4_schema({"$ref": "#/components/schemas/When", "components": when}) is None
    tree = {
        "schemas": {
            "T": {"type": "object", "properties": {"t": {"$ref": "#/components/schemas/T"}}}
        }
    }
    assert draft4_schema({"$ref": "#/components/schemas/T", "components": tree}) is None


def test_references_are_followed_in_the_attached_components():
    components = {"schemas": {"Tag": {"type": "string", "maxLength": 3, "nullable": True}}}
    schema = {
        "type": "object",
        "properties": {"tag": {"$ref": "#/components/schemas/Tag"}},
        "components": components,
    }
    converted = draft4_schema(schema)
    assert converted is not None and "components" not in converted
    assert converted["properties"]["tag"] == {
        "type": ["string", "null"],
        "maxLength": 3,
        "nullable": True,
    }
    assert _compiled_accepts(schema, {"tag": None}) and _compiled_accepts(schema, {"tag": "abc"})
    assert not _compiled_accepts(schema, {"tag": "abcd"})
