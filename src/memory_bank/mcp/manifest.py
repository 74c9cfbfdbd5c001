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
    # False: no tool at all (x-mcp: false); search_capabilities names it, with its REST route.
    reachable: bool = True
    # The spec's example phrasings (x-mcp-examples), which search_capabilities ranks by.
    examples: tuple[str, ...] = ()
    # Where a phrase naming no action goes (x-mcp-fallback: "zebra quantum" is a search).
    fallback: bool = False


@dataclass(frozen=True)
class Manifest:
    """Every capability, in spec order, and the operations that are no tool."""

    capabilities: tuple[Capability, ...]
    api_version: str
    elsewhere: tuple[Capability, ...] = ()
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
            view = self._views[held] = Manifest(usable, self.api_version, self.elsewhere)
        return view

    def only(self, names: frozenset[str]) -> Manifest:
        """The capabilities with these names, in manifest order."""
        chosen = tuple(c for c in self.capabilities if c.name in names)
        return Manifest(chosen, self.api_version, self.elsewhere)

    @property
    def names(self) -> list[str]:
        """Tool names in order."""
        return [c.name for c in self.capabilities]


def parse(data: dict[str, Any]) -> Manifest:
    """A manifest from its JSON document."""
    capabilities = tuple(_capability(entry) for entry in data["tools"])
    elsewhere = tuple(_capability(entry, reachable=False) for entry in data.get("elsewhere", []))
    return Manifest(capabilities, data.get("api_version", ""), elsewhere)


def _capability(entry: dict[str, Any], reachable: bool = True) -> Capability:
    """One manifest entry: a tool, or (reachable False) an operation that is no tool."""
    binding = entry[_BINDING]
    http = binding["http"]
    return Capability(
        name=entry["name"],
        definition={k: v for k, v in entry.items() if k != _BINDING},
        input_schema=binding.get("inputSchema", {}),
        scopes=tuple(binding["scopes"]),
        method=http["method"],
        path=http["path"],
        arguments=http.get("arguments", {}),
        success=http.get("success", {}),
        listed=binding.get("listed", True) and reachable,
        reachable=reachable,
        examples=tuple(binding.get("examples", ())),
        fallback=binding.get("fallback", False),
    )


def load(path: Path | str | None = None) -> Manifest:
    """The manifest at a path (default: the one shipped in the package)."""
    return _load(str(path or MANIFEST_PATH))


@lru_cache(maxsize=8)
def _load(path: str) -> Manifest:
    """Read and parse a manifest file once per path."""
    with open(path, encoding="utf-8") as handle:
        return parse(json.load(handle))
