"""Connexion validator tweaks: parameter errors that name the parameter, compiled body checks."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import fastjsonschema
from connexion.validators import JSONRequestBodyValidator, ParameterValidator

DRAFT4 = "http://json-schema.org/draft-04/schema#"
# Keywords whose values are data, not schemas: never rewritten.
_DATA_KEYWORDS = frozenset({"enum", "default", "example", "examples", "const"})


class NamingParameterValidator(ParameterValidator):
    """Like Connexion's, but every error says which parameter it is about."""

    @staticmethod
    def validate_parameter(
        parameter_type: str, value: Any, param: dict[str, Any], param_name: str | None = None
    ) -> str | None:
        """Validate one parameter; the message ends with "for <in> parameter '<name>'"."""
        error = ParameterValidator.validate_parameter(parameter_type, value, param, param_name)
        if error is None or "parameter '" in error:
            return error
        first = error.strip().split("\n", 1)[0]
        return f"{first} for {parameter_type} parameter '{param['name']}'"


class CompiledJSONBodyValidator(JSONRequestBodyValidator):
    """Connexion's JSON body validator with a compiled check of the same schema in front.

    jsonschema walks the schema anew for every request (0.1-0.2 ms of a save here);
    fastjsonschema turns it into Python code once. A body the compiled check accepts is
    accepted; anything else goes to Connexion's own validator, which decides and words the
    error. So the compiled check can make acceptance faster but never change an answer, as
    long as it accepts nothing Connexion rejects: draft4_schema() keeps it to that, and
    tests/http/test_validation.py checks it on every request body in the spec.
    """

    def _validate(self, body: Any) -> dict[str, Any] | None:
        """Accept at once when the compiled check passes; otherwise Connexion's full check."""
        check = compiled_check(self._schema)
        if check is not None and body is not None:
            try:
                check(body)
            except fastjsonschema.JsonSchemaException:
                pass
            else:
                return None
        result: dict[str, Any] | None = super()._validate(body)
        return result


# Connexion builds a validator per request but passes the same schema object each time (the
# operation's resolved spec), so checks are kept per schema object. The entry holds the
# schema too, so its id cannot be reused by another object while the entry exists.
_compiled: dict[int, tuple[dict[str, Any], Callable[[Any], Any] | None]] = {}
_lock = threading.Lock()


def compiled_check(schema: dict[str, Any]) -> Callable[[Any], Any] | None:
    """The compiled check for a request body schema, or None where it could not be exact."""
    hit = _compiled.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    with _lock:
        check = _compile(schema)
        _compiled[id(schema)] = (schema, check)
    return check


def _compile(schema: dict[str, Any]) -> Callable[[Any], Any] | None:
    """Compile the schema as Connexion reads it (draft 4 plus OpenAPI's nullable)."""
    converted = draft4_schema(schema)
    if converted is None:
        return None
    try:
        check: Callable[[Any], Any] = fastjsonschema.compile(
            converted, use_default=False, use_formats=False
        )
    except fastjsonschema.JsonSchemaDefinitionException:
        return None
    return check


def draft4_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """An OpenAPI 3.0 request schema as plain draft 4, or None when it cannot be exactly.

    Connexion checks request bodies with draft 4 where `nullable` (or `x-nullable`) lets a
    null through `type` and `enum`; adding null to both says the same in draft 4. `format`
    is checked by Connexion and not by the compiled check, so a schema using it gets none.
    References are already resolved in the schema Connexion passes; the `components` it
    attaches beside them are dropped.
    """
    body = {k: v for k, v in schema.items() if k != "components"}
    if _uses(body, {"format", "$ref"}):
        return None
    converted = _with_nulls(copy.deepcopy(body))
    converted["$schema"] = DRAFT4
    return converted


def _uses(node: Any, keywords: set[str]) -> bool:
    """Whether any object in node has one of these keys (a property so named counts too)."""
    if isinstance(node, dict):
        return any(k in keywords for k in node) or any(_uses(v, keywords) for v in node.values())
    if isinstance(node, list):
        return any(_uses(v, keywords) for v in node)
    return False


def _with_nulls(node: Any) -> Any:
    """Rewrite nullable schema objects in place: null joins their type and enum."""
    if isinstance(node, list):
        for item in node:
            _with_nulls(item)
        return node
    if not isinstance(node, dict):
        return node
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            _with_nulls(value)
    if node.get("nullable") is True or node.get("x-nullable") is True:
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            node["type"] = [*kind, "null"]
        if isinstance(node.get("enum"), list) and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
    return node
