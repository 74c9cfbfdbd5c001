"""The command that tunes the ranking's constants (tuning.json):

    PYTHONPATH=src python -m memory_bank.mcp.ranking.tune NAME VALUE [VALUE ...]

prints, for each value of one constant, rank-1 on every 'tune' half and probe set in
tests/mcp (never a 'holdout' half), lexically: the figures a constant is chosen by.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from memory_bank.mcp.ranking import tuning

# Where a checkout keeps the phrasing sets (the command runs from one, not from a wheel).
PHRASINGS = Path(__file__).resolve().parents[4] / "tests" / "mcp"


def tune_sets() -> dict[str, list[dict[str, Any]]]:
    """The phrasings a constant may be tuned on: each set's 'tune' entries (all of a probe set)."""
    found = {}
    for path in sorted(PHRASINGS.glob("phrasings_*.json")):
        entries = json.loads(path.read_text(encoding="utf-8")).get("phrasings", [])
        tune = [e for e in entries if e.get("split") == "tune"]
        if tune:
            found[path.name] = tune
    return found


def expected(entry: dict[str, Any]) -> list[str]:
    """The capabilities right first for a phrasing: its `expected` (one name, or a list of
    them), none for a declined save ("none", [])."""
    found = entry["expected"]
    if isinstance(found, str):
        return [] if found == "none" else [found]
    return list(found)


def measure(name: str, candidate: float) -> Counter[str]:
    """Right-first counts per tune set with one constant set to a candidate value."""
    from memory_bank.mcp import manifest
    from memory_bank.mcp.ranking import blend, capability_index, learned, nearest, rules

    modules = {"capability_index": capability_index, "rules": rules, "blend": blend}
    module = {**modules, "nearest": nearest, "learned": learned}[
        tuning.constants()[name]["read_by"]
    ]
    saved = getattr(module, name)
    setattr(module, name, candidate)
    capability_index.forget_indexes()  # the index's weights are read when it is made
    try:
        tools = manifest.load()
        passed: Counter[str] = Counter()
        for set_name, entries in tune_sets().items():
            for entry in entries:
                ranked = rules.rank(tools, entry["text"], 1)
                wanted = expected(entry)
                if not wanted:
                    good = not ranked or ranked[0][0].method == "GET"
                else:
                    good = bool(ranked) and ranked[0][0].name in wanted
                passed[set_name] += good
                passed["all"] += good
        return passed
    finally:
        setattr(module, name, saved)
        capability_index.forget_indexes()


def main(argv: list[str]) -> int:
    """Print rank-1 on the tune sets for each candidate value of one constant."""
    if len(argv) < 2 or argv[0] not in tuning.constants():
        print(__doc__.strip(), "\nconstants:", " ".join(tuning.constants()), file=sys.stderr)
        return 2
    name, candidates = argv[0], [float(v) for v in argv[1:]]
    total = sum(len(e) for e in tune_sets().values())
    for candidate in candidates:
        passed = measure(name, candidate)
        sets = "  ".join(f"{s}: {n}" for s, n in passed.items() if s != "all")
        print(f"{name}={candidate}: {passed['all']}/{total}  ({sets})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
