"""Find and load the OpenAPI document (from the repo, or from the installed package)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

_PACKAGED = Path(__file__).with_name("spec") / "memory-bank.yaml"
_REPO = Path(__file__).resolve().parents[2] / "openapi" / "memory-bank.yaml"


def spec_path() -> Path:
    """Where the spec is: the repo copy when developing, else the one inside the wheel."""
    if _REPO.is_file():
        return _REPO
    if _PACKAGED.is_file():
        return _PACKAGED
    raise FileNotFoundError("openapi/memory-bank.yaml is missing from this installation")


def load_spec(path: Path | None = None) -> dict[str, Any]:
    """The spec as a dict (a fresh copy each call; Connexion mutates what it is given)."""
    return _read(str(path or spec_path()))


def _read(path: str) -> dict[str, Any]:
    """Parse a YAML spec file."""
    with open(path, encoding="utf-8") as handle:
        loaded = yaml.safe_load(handle)
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} is not an OpenAPI document")
    return loaded


@lru_cache(maxsize=4)
def operations(path: str | None = None) -> dict[str, dict[str, Any]]:
    """operationId -> {method, path, operation} for every operation in the spec."""
    spec = load_spec(Path(path) if path else None)
    found: dict[str, dict[str, Any]] = {}
    for route, item in spec["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                found[op["operationId"]] = {"method": method, "path": route, "operation": op}
    return found


def spec_methods(spec: dict[str, Any], url_path: str) -> list[str]:
    """The HTTP methods the spec declares for the path template matching a request path."""
    # Literal routes first: /v1/memory/search is not /v1/memory/{id}.
    for route, item in sorted(spec.get("paths", {}).items(), key=lambda kv: kv[0].count("{")):
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(route)) + "$"
        if re.match(pattern, url_path):
            return sorted(m.upper() for m, op in item.items() if m != "parameters" and op)
    return []
