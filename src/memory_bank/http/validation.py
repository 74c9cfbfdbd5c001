"""Connexion's validators, with every error raised as an InvalidRequest naming its field.

The field comes from the jsonschema error itself (its path, and for `required` and
`additionalProperties` the property concerned), never from parsing a message, so a library
upgrade that rewords its messages cannot lose it. Request bodies are also checked by a schema
compiled once, in front of Connexion's own check.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import AsyncGenerator, Callable
from typing import Any

import fastjsonschema
from connexion.lifecycle import ConnexionRequest
from connexion.utils import is_null, is_nullable
from connexion.validators import JSONRequestBodyValidator, ParameterValidator
from jsonschema import Draft4Validator, ValidationError
from starlette.types import Scope

from memory_bank.caches import PerObject
from memory_bank.errors import InvalidCursor, InvalidRequest
from memory_bank.http import jsontext
from memory_bank.spec import SpecError, json_schema

DRAFT4 = "http://json-schema.org/draft-04/schema#"


def field_of(error: ValidationError) -> str | None:
    """The dotted path of the value an error is about (contexts.0.snippet), None for the root."""
    parts = [str(step) for step in error.absolute_path]
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        missing = [name for name in error.validator_value if name not in instance]
        parts += missing[:1]
    elif error.validator == "additionalProperties" and isinstance(instance, dict):
        known = error.schema.get("properties", {})
        parts += [name for name in instance if name not in known][:1]
    return ".".join(parts) or None


def _elsewhere(schema: dict[str, Any], value: Any) -> str:
    """Where an id of another kind is read (the spec's x-other-ids), when the value is one."""
    others = schema.get("x-other-ids")
    if not isinstance(others, dict) or not isinstance(value, str):
        return ""
    for prefix, operation in others.items():
        if value.startswith(prefix):
            return f" An id starting {prefix} is read with {operation}."
    return ""


def describe(error: ValidationError, field: str | None) -> str:
    """A plain message for an error, naming the field and never echoing the value sent.

    The one table of wording for REST and MCP alike (the MCP executor uses it too).
    """
    subject = f"'{field}'" if field else "The body"
    keyword, limit, value = error.validator, error.validator_value, error.instance
    if keyword == "maxLength":
        return f"{subject} must be at most {limit} characters."
    if keyword == "minLength" and limit == 1:
        return f"{subject} must not be empty."
    if keyword == "minLength":
        return f"{subject} must be at least {limit} characters."
    if keyword == "maxItems":
        return f"{subject} must have at most {limit} items."
    if keyword == "minItems":
        return f"{subject} must have at least {limit} items."
    if keyword == "pattern":
        if isinstance(value, str) and "\x00" in value:
            return f"{subject} must not contain NUL characters."
        if isinstance(value, str) and not value.strip():
            return f"{subject} must not be blank."
        schema = error.schema if isinstance(error.schema, dict) else {}
        if isinstance(schema.get("x-format"), str):
            return f"{subject} must be {schema['x-format']}.{_elsewhere(schema, value)}"
        example = schema.get("example")
        shape = f", like {example}" if isinstance(example, str) else ""
        return f"{subject} is not in the expected format{shape}."
    if keyword == "type":
        return f"{subject} must be {_kinds(limit)}."
    if keyword == "enum":
        return f"{subject} must be one of: {', '.join(_shown(v) for v in limit)}."
    if keyword == "maximum":
        return f"{subject} must be at most {limit}."
    if keyword == "minimum":
        return f"{subject} must be at least {limit}."
    if keyword == "uniqueItems":
        return f"{subject} must not repeat an item."
    if keyword == "required":
        return f"{subject} is required."
    if keyword == "additionalProperties":
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        missing = [
            name
            for name in (error.schema.get("required", []) if isinstance(error.schema, dict) else [])
            if isinstance(value, dict) and name not in value
        ]
        unknown = (field or "").rpartition(".")[2]
        return f"{subject} is not a known field{suggestion(unknown, list(known), missing)}"
    return f"{subject} is not valid ({keyword})."


def suggestion(unknown: str, known: list[str], missing: list[str]) -> str:
    """How a message about an unknown name ends: "; did you mean 'content'?", the names that
    are known, or a plain full stop.

    A required name that is missing is the likeliest intent (`text` sent for `content`,
    `query` for `q`); else the closest spelling; else the whole list.
    """
    if len(missing) == 1:
        return f"; did you mean '{missing[0]}'?"
    close = difflib.get_close_matches(unknown.lower(), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f"; expected one of {', '.join(repr(k) for k in known)}." if known else "."


def _kinds(kind: Any) -> str:
    """'a string', 'an integer or null' for a type keyword's value."""
    kinds = kind if isinstance(kind, list) else [kind]
    words = {"integer": "an integer", "array": "an array", "object": "an object", "null": "null"}
    return " or ".join(words.get(str(k), f"a {k}") for k in kinds)


def _shown(value: Any) -> str:
    """An enum value as JSON spells it."""
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def invalid(error: ValidationError, prefix: str | None = None) -> InvalidRequest:
    """The InvalidRequest for a validation error; prefix places the value (a parameter name)."""
    field = field_of(error)
    if prefix is not None:
        field = f"{prefix}.{field}" if field else prefix
    return InvalidRequest(describe(error, field), field=field)


class NamingParameterValidator(ParameterValidator):
    """Connexion's parameter checks, raising an InvalidRequest that names the parameter."""

    def validate_request(self, request: ConnexionRequest) -> None:
        """Check the request's parameters in Connexion's order; the first error wins."""
        if self.strict_validation:
            extra = self.validate_query_parameter_list(
                request, security_params=self.security_query_params
            )
            if extra:
                name = sorted(extra)[0]
                known = [p["name"] for p in self.parameters.get("query", [])]
                missing = [
                    p["name"]
                    for p in self.parameters.get("query", [])
                    if p.get("required") and p["name"] not in request.query_params
                ]
                raise InvalidRequest(
                    f"'{name}' is not a known query parameter{suggestion(name, known, missing)}",
                    field=name,
                )
        readers = {
            "query": lambda name: request.query_params.get(name),
            "path": lambda name: request.path_params.get(name.replace("-", "_")),
            "header": lambda name: request.headers.get(name),
            "cookie": lambda name: request.cookies.get(name),
        }
        for where, read in readers.items():
            for param in self.parameters.get(where, []):
                _check_parameter(where, read(param["name"]), param)


def _check_parameter(where: str, value: Any, param: dict[str, Any]) -> None:
    """One parameter against its schema (as Connexion checks it)."""
    name = param["name"]
    if is_nullable(param) and is_null(value):
        return
    if value is None:
        if param.get("required"):
            raise InvalidRequest(f"'{name}' is required (a {where} parameter).", field=name)
        return
    schema = param.get("schema", param)
    error = next(iter(Draft4Validator(copy.deepcopy(schema)).iter_errors(value)), None)
    if error is not None:
        if name == "cursor":
            # Any cursor but one this server issued is the same mistake, with its own code.
            raise InvalidCursor(
                "The cursor is malformed; pass `next_cursor` from the previous page as it is.",
                field=name,
            )
        raise invalid(error, prefix=name)


class CompiledJSONBodyValidator(JSONRequestBodyValidator):
    """Connexion's JSON body validator with a compiled check of the same schema in front.

    jsonschema walks the schema anew for every request (a measurable share of a save);
    fastjsonschema turns it into Python code once. A body the compiled check accepts is
    accepted; anything else goes to Connexion's own validator, which decides, and whose first
    error becomes the answer. So the compiled check can make acceptance faster but never
    change an answer, as long as it accepts nothing Connexion rejects: draft4_schema() keeps it
    to that, and tests/http/test_validation.py checks it on every request body in the spec.
    """

    async def _parse(self, stream: AsyncGenerator[bytes, None], scope: Scope) -> Any:
        """The body as JSON; 400 when it is not."""
        raw = b"".join([message async for message in stream]).decode(self._encoding)
        if not raw:
            return None
        return jsontext.parse(raw)

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
        if not self._nullable and body is None:
            raise InvalidRequest("Request body must not be empty")
        error = next(iter(self._validator.iter_errors(body)), None)
        if error is not None:
            raise invalid(error)
        return None


# Connexion builds a validator per request but passes the same schema object each time (the
# operation's resolved spec), so checks are kept per schema object: one per operation body.
_compiled: PerObject[Callable[[Any], Any] | None] = PerObject(bound=256)


def compiled_check(schema: dict[str, Any]) -> Callable[[Any], Any] | None:
    """The compiled check for a request body schema, or None where it could not be exact."""
    return _compiled.get(schema, lambda: _compile(schema))


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
    null through `type` and `enum`; spec.json_schema adds null to both, which says the same in
    draft 4. `format` is checked by Connexion and not by the compiled check, so a schema using
    it gets none. References are followed in the `components` Connexion attaches beside the
    schema (it passes them resolved already); one that does not resolve, or refers to itself,
    gets no compiled check.
    """
    body = {k: v for k, v in schema.items() if k != "components"}
    try:
        converted = json_schema(schema, body, "draft-04")
    except SpecError:
        return None
    if not isinstance(converted, dict) or _uses(converted, {"format"}):
        return None
    converted["$schema"] = DRAFT4
    return converted


def _uses(node: Any, keywords: set[str]) -> bool:
    """Whether any object in node has one of these keys (a property so named counts too)."""
    if isinstance(node, dict):
        return any(k in keywords for k in node) or any(_uses(v, keywords) for v in node.values())
    if isinstance(node, list):
        return any(_uses(v, keywords) for v in node)
    return False
