"""The OpenAPI document: where it is, loading it once, and the one walk over its operations."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

_PACKAGED = Path(__file__).with_name("spec") / "memory-bank.yaml"
_REPO = Path(__file__).resolve().parents[2] / "openapi" / "memory-bank.yaml"
METHODS = ("get", "put", "post", "patch", "delete")
# libyaml's parser when PyYAML was built with it (about 10x faster on this document).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def resolve(spec: dict[str, Any], node: Any) -> Any:
    """A node with its local $ref (#/components/...) followed, until it is not a reference."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


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
