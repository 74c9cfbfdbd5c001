"""Load the generated tool manifest and turn its entries into MCP tool definitions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

MANIFEST_PATH = Path(__file__).with_name("manifest.json")
_BINDING = "x-memory-bank"


@dataclass(frozen=True)
class Capability:
    """One operation as a tool: its MCP definition, its HTTP binding and the full schema its
    arguments are validated against (hosts see a portable form of it, mcp/portable.py)."""

    name: str
    definition: dict[str, Any]
    input_schema: dict[str, Any]
    scopes: tuple[str, ...]
    method: str
    path: str
    arguments: dict[str, dict[str, Any]]
    success: dict[str, str]
    # False: not in tools/list; reached through search_capabilities and execute_capability.
    listed: bool = True


@dataclass(frozen=True)
class Manifest:
    """Every capability, in spec order."""

    capabilities: tuple[Capability, ...]
    api_version: str
    _views: dict[tuple[str, ...], Manifest] = field(default_factory=dict, compare=False, repr=False)

    def get(self, name: str) -> Capability | None:
        """The capability with this name, if any."""
        return next((c for c in self.capabilities if c.name == name), None)

    def for_scopes(self, scopes: tuple[str, ...] | frozenset[str]) -> Manifest:
        """The capabilities a key with these scopes may use (made once per set of scopes)."""
        held = tuple(sorted(set(scopes)))
        view = self._views.get(held)
        if view is None:
            usable = tuple(c for c in self.capabilities if set(c.scopes) <= set(held))
            view = self._views[held] = Manifest(usable, self.api_version)
        return view

    def only(self, names: frozenset[str]) -> Manifest:
        """The capabilities with these names, in manifest order."""
        return Manifest(tuple(c for c in self.capabilities if c.name in names), self.api_version)

    @property
    def names(self) -> list[str]:
        """Tool names in order."""
        return [c.name for c in self.capabilities]


def parse(data: dict[str, Any]) -> Manifest:
    """A manifest from its JSON document."""
    capabilities = []
    for entry in data["tools"]:
        binding = entry[_BINDING]
        http = binding["http"]
        capabilities.append(
            Capability(
                name=entry["name"],
                definition={k: v for k, v in entry.items() if k != _BINDING},
                input_schema=binding["inputSchema"],
                scopes=tuple(binding["scopes"]),
                method=http["method"],
                path=http["path"],
                arguments=http["arguments"],
                success=http["success"],
                listed=binding.get("listed", True),
            )
        )
    return Manifest(capabilities=tuple(capabilities), api_version=data.get("api_version", ""))


def load(path: Path | str | None = None) -> Manifest:
    """The manifest at a path (default: the one shipped in the package)."""
    return _load(str(path or MANIFEST_PATH))


@lru_cache(maxsize=8)
def _load(path: str) -> Manifest:
    """Read and parse a manifest file once per path."""
    with open(path, encoding="utf-8") as handle:
        return parse(json.load(handle))
