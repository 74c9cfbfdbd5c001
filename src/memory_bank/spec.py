"""The OpenAPI document: where it is, loading it once, the one walk over its operations, and the
one walk over its schemas ($refs inlined, OpenAPI 3.0 spelled as plain JSON Schema)."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml

_PACKAGED = Path(__file__).with_name("spec") / "memory-bank.yaml"
_REPO = Path(__file__).resolve().parents[2] / "openapi" / "memory-bank.yaml"
METHODS = ("get", "put", "post", "patch", "delete")
# libyaml's parser when PyYAML was built with it (about 10x faster on this document).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The JSON Schema a schema is written out as: 2020-12 for MCP, draft 4 as Connexion reads it.
Draft = Literal["2020-12", "draft-04"]
# OpenAPI 3.0 keywords with no JSON Schema meaning (or none an agent needs).
_OPENAPI_ONLY = frozenset(
    {"example", "xml", "externalDocs", "discriminator", "nullable", "deprecated"}
)
# Extensions the server's own error wording reads (http/validation.describe): every schema
# written keeps them (mcp/portable drops them from what hosts see).
WORDING = frozenset({"x-format", "x-other-ids"})
# Keywords whose value is a schema or a list of schemas, and those mapping names to schemas.
_SUBSCHEMA = frozenset(
    {"items", "additionalItems", "additionalProperties", "not", "allOf", "anyOf", "oneOf"}
)
_SUBSCHEMA_MAP = frozenset({"properties", "patternProperties", "definitions", "dependencies"})


class SpecError(ValueError):
    """The spec cannot be read as the server needs it (a broken $ref, a name clash, a long text)."""


@dataclass(frozen=True)
class Operation:
    """One operation of the spec, with the path-level parameters it shares."""

    id: str
    method: str
    path: str
    definition: dict[str, Any]
    shared_parameters: list[dict[str, Any]]


def spec_path() -> Path:
    """Where the spec is: the repo copy when developing, else the one inside the wheel."""
    if _REPO.is_file():
        return _REPO
    if _PACKAGED.is_file():
        return _PACKAGED
    raise FileNotFoundError("openapi/memory-bank.yaml is missing from this installation")


def load_spec(path: Path | None = None) -> dict[str, Any]:
    """The spec as a dict: a fresh copy each call, since Connexion mutates what it is given."""
    return copy.deepcopy(_read(str(path or spec_path())))


@lru_cache(maxsize=4)
def _read(path: str) -> dict[str, Any]:
    """Parse a YAML spec file (once per path and process)."""
    with open(path, encoding="utf-8") as handle:
        loaded = yaml.load(handle, Loader=_LOADER)
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} is not an OpenAPI document")
    return loaded


def operations(spec: dict[str, Any]) -> Iterator[Operation]:
    """Every operation in spec order (YAML keeps key order)."""
    for route, item in spec.get("paths", {}).items():
        shared = item.get("parameters", [])
        for method, op in item.items():
            if method in METHODS and isinstance(op, dict):
                yield Operation(op.get("operationId", ""), method, route, op, shared)


def resolve(spec: dict[str, Any], node: Any, seen: tuple[str, ...] = ()) -> Any:
    """A node with its local $ref (#/components/...) followed, until it is not a reference."""
    ref = node.get("$ref") if isinstance(node, dict) else None
    if ref is None:
        return node
    if not isinstance(ref, str) or not ref.startswith("#/"):
        raise SpecError(f"only local $refs are supported, not {ref!r}")
    if ref in seen:
        raise SpecError(f"recursive $ref {ref} cannot be inlined")
    target: Any = spec
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            raise SpecError(f"$ref {ref} does not resolve")
        target = target[part]
    return resolve(spec, target, (*seen, ref))


def path_parameters(spec: dict[str, Any], template: str) -> list[dict[str, Any]]:
    """The path parameters a path template declares, at path level and on its operations."""
    item = spec.get("paths", {}).get(template, {})
    declared = list(item.get("parameters", []))
    for method in METHODS:
        declared += item.get(method, {}).get("parameters", []) if method in item else []
    found = [resolve(spec, p) for p in declared]
    return [p for p in found if isinstance(p, dict) and p.get("in") == "path"]


def scopes(spec: dict[str, Any], op: Operation) -> tuple[str, ...]:
    """The scopes an operation's bearerAuth security requirement lists."""
    found: list[str] = []
    for requirement in op.definition.get("security", spec.get("security", [])):
        found.extend(requirement.get("bearerAuth", []))
    return tuple(found)


# Marks an operation the kill switches cover; the caller's own switches are read with the key.
SWITCHES = "x-user-switches"


@dataclass(frozen=True)
class Requirement:
    """What an operation needs of its caller, as its spec entry says."""

    scopes: tuple[str, ...] = ()
    # The kill switches apply, and the user's own switches are read with the key.
    switches: bool = False


def requirements(spec: dict[str, Any]) -> dict[str, Requirement]:
    """operationId -> its Requirement (read once, at start-up)."""
    return {
        op.id: Requirement(scopes(spec, op), op.definition.get(SWITCHES) is True)
        for op in operations(spec)
    }


def spec_methods(spec: dict[str, Any], url_path: str) -> list[str]:
    """The HTTP methods the spec declares for the path template matching a request path."""
    # Literal routes first: /v1/memory/search is not /v1/memory/{id}.
    for route, item in sorted(spec.get("paths", {}).items(), key=lambda kv: kv[0].count("{")):
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(route)) + "$"
        if re.match(pattern, url_path):
            return sorted(m.upper() for m, op in item.items() if m in METHODS and op)
    return []


def inline(spec: dict[str, Any], node: Any, seen: tuple[str, ...] = ()) -> Any:
    """A copy of node with every local $ref replaced by what it names; a schema that
    refers to itself has no inlined form and is refused."""
    if isinstance(node, list):
        return [inline(spec, item, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return inline(spec, resolve(spec, node, seen), (*seen, node["$ref"]))
    return {key: inline(spec, value, seen) for key, value in node.items()}


def json_schema(spec: dict[str, Any], node: Any, draft: Draft = "2020-12") -> Any:
    """An OpenAPI 3.0 schema as standalone JSON Schema: $refs inlined, nullable spelled as null.

    "2020-12" (MCP tool schemas): OpenAPI-only keywords and extensions go (but WORDING),
    boolean exclusive bounds become numbers, an allOf of plain objects becomes one object, and
    a nullable schema without a type becomes anyOf it or null.
    "draft-04" (the compiled body check, the export check): every keyword stays, and null joins
    type and enum only, which is all Connexion's nullable relaxes.
    """
    return _written(inline(spec, node), draft)


def _written(node: Any, draft: Draft) -> Any:
    """One inlined schema node (and those below it) in the draft's spelling."""
    if isinstance(node, list):
        return [_written(item, draft) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if draft == "2020-12" and (
            key in _OPENAPI_ONLY or (key.startswith("x-") and key not in WORDING)
        ):
            continue
        if key in _SUBSCHEMA_MAP and isinstance(value, dict):
            out[key] = {name: _written(sub, draft) for name, sub in value.items()}
        elif key in _SUBSCHEMA:
            out[key] = _written(value, draft)
        else:
            out[key] = value  # data (enum, default, ...): inline() made it a fresh copy
    if draft == "2020-12":
        out = _exclusive_bounds(node, out)
        if "allOf" in out:
            out = _merge_all_of(out)
    if node.get("nullable") is True or node.get("x-nullable") is True:
        out = _with_null(out, wrap_untyped=draft == "2020-12")
    return out


def _exclusive_bounds(node: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0's boolean exclusiveMinimum/Maximum -> JSON Schema's numeric form."""
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if node.get(exclusive) is True and bound in out:
            out[exclusive] = out.pop(bound)
        elif node.get(exclusive) is False:
            out.pop(exclusive, None)
    return out


def _merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Fold an allOf of plain object schemas into one object (MCP hosts read those best)."""
    parts = schema["allOf"]
    simple = {"type", "properties", "required", "description"}
    if not all(
        isinstance(p, dict) and set(p) <= simple and p.get("type") == "object" for p in parts
    ):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    merged["type"] = "object"
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        properties.update(part.get("properties", {}))
        required.extend(r for r in part.get("required", []) if r not in required)
    if required:
        merged["required"] = required
    merged["properties"] = properties
    return merged


def _with_null(schema: dict[str, Any], wrap_untyped: bool) -> dict[str, Any]:
    """A schema that also accepts null: null joins its type and enum. One without a type is
    wrapped (anyOf it or null) when wrap_untyped, else only its enum gains null."""
    kind = schema.get("type")
    if not isinstance(kind, str | list) and wrap_untyped:
        return {"anyOf": [schema, {"type": "null"}]}
    out = dict(schema)
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out
