"""Search-first tools: rank the manifest's capabilities for a phrase, and run one by name."""

from __future__ import annotations

import math
import re
from typing import Any

from memory_bank.mcp.manifest import Capability, Manifest
from memory_bank.search.analyzer import terms

SEARCH = "search_capabilities"
EXECUTE = "execute_capability"

# Words agents and people use for the same intent, folded onto one concept.
_SYNONYMS: dict[str, str] = {
    "save": "save post remember store add create keep note record write",
    "find": "find search recall know look lookup query retrieve relevant",
    "list": "list browse all everything page newest recent",
    "fetch": "fetch id open show detail full",
    "delete": "delete forget remove erase drop wrong",
}
# Stemmed like the queries are, so "remembering" and "remember" meet.
_CONCEPT = {term: concept for concept, words in _SYNONYMS.items() for term in terms(words)}
# Field weights: a word in the name or title says more than one deep in the description.
_WEIGHTS = (("name", 3.0), ("title", 3.0), ("summary", 2.0), ("description", 1.0))


def _concepts(text: str) -> set[str]:
    """Stemmed terms of a text plus the concepts they stand for."""
    found: set[str] = set()
    for term in terms(text):
        found.add(term)
        concept = _CONCEPT.get(term)
        if concept:
            found.add("@" + concept)
    return found


def _lead_concept(text: str) -> str | None:
    """The concept of the first word in a text that stands for one."""
    for term in terms(text):
        if term in _CONCEPT:
            return "@" + _CONCEPT[term]
    return None


def _words_of_name(name: str) -> str:
    """postMemory -> 'post Memory'."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")


def _fields(capability: Capability) -> dict[str, set[str]]:
    """The concept sets of a capability's name, title, summary and rest of the description."""
    description = capability.definition.get("description", "")
    summary, _, rest = description.partition(". ")
    return {
        "name": _concepts(_words_of_name(capability.name)),
        "title": _concepts(capability.definition.get("title", "")),
        "summary": _concepts(summary),
        "description": _concepts(rest),
    }


def rank(manifest: Manifest, query: str, limit: int = 3) -> list[tuple[Capability, float]]:
    """Capabilities best matching a phrase, best first, with their scores (ties in spec order)."""
    wanted = _concepts(query)
    if not wanted:
        return []
    fields = {c.name: _fields(c) for c in manifest.capabilities}
    total = len(manifest.capabilities)

    def idf(term: str) -> float:
        df = sum(1 for f in fields.values() if any(term in s for s in f.values()))
        return math.log(1 + total / df) if df else 0.0

    weights = {term: idf(term) * (2.0 if term.startswith("@") else 1.0) for term in wanted}
    # The first intent word usually is the verb ("list everything you remember"): it leads.
    lead = _lead_concept(query)
    if lead:
        weights[lead] *= 2.0
    scored: list[tuple[Capability, float]] = []
    for capability in manifest.capabilities:
        own = fields[capability.name]
        score = sum(
            weights[term] * weight
            for term in wanted
            for field, weight in _WEIGHTS
            if term in own[field]
        )
        if score > 0:
            scored.append((capability, round(score, 3)))
    scored.sort(key=lambda pair: -pair[1])  # stable: equal scores keep spec order
    return scored[:limit]


def search_tool() -> dict[str, Any]:
    """The search_capabilities tool definition."""
    return {
        "name": SEARCH,
        "title": "Find the right memory tool",
        "description": (
            "Find which memory-bank capability fits what you want to do, described in plain "
            'words (e.g. "save a memory", "what do I know about Acme", "forget that"). Returns '
            "the best matches with their input schemas; run one with execute_capability."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 512},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "required": ["results"],
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "title", "description", "score", "inputSchema"],
                        "properties": {
                            "name": {"type": "string"},
                            "title": {"type": "string"},
                            "description": {"type": "string"},
                            "score": {"type": "number"},
                            "inputSchema": {"type": "object"},
                            "annotations": {"type": "object"},
                        },
                    },
                }
            },
        },
        "annotations": {
            "title": "Find the right memory tool",
            "readOnlyHint": True,
            "openWorldHint": False,
        },
    }


def execute_tool(manifest: Manifest) -> dict[str, Any]:
    """The execute_capability tool definition (names come from the manifest)."""
    return {
        "name": EXECUTE,
        "title": "Run a memory tool by name",
        "description": (
            "Run one memory-bank capability by name with its arguments (an object matching the "
            "inputSchema search_capabilities returned). The result is that capability's own "
            "result; errors come back as a problem with a code and, when one is at fault, "
            "the field."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": manifest.names},
                "arguments": {"type": "object", "default": {}},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Run a memory tool by name",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    }


def search_results(manifest: Manifest, query: str, limit: int) -> dict[str, Any]:
    """The structured answer of search_capabilities."""
    results = []
    for capability, score in rank(manifest, query, limit):
        tool = capability.definition
        results.append(
            {
                "name": capability.name,
                "title": tool.get("title", capability.name),
                "description": tool.get("description", ""),
                "score": score,
                "inputSchema": tool["inputSchema"],
                "annotations": tool.get("annotations", {}),
            }
        )
    return {"results": results}
