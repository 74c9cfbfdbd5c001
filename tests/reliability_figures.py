"""Figures the reliability tests measure, written per test process and summed at the end."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

DIR_NAME = "reliability-figures"


class Figures:
    """Counters one test process adds to (keys like 'fuzz.sqlite.cases')."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.notes: dict[str, Any] = {}

    def add(self, key: str, amount: int = 1) -> None:
        """Add to one counter."""
        self.counts[key] += amount

    def note(self, key: str, value: Any) -> None:
        """Keep one measured value (the last one wins)."""
        self.notes[key] = value

    def write(self, basetemp: Path) -> None:
        """Save this process's figures under the session's temporary directory."""
        out = basetemp / DIR_NAME
        out.mkdir(parents=True, exist_ok=True)
        doc = {"counts": dict(self.counts), "notes": self.notes}
        (out / f"{os.getpid()}.json").write_text(json.dumps(doc, indent=1, sort_keys=True))


def collect(basetemp: Path) -> dict[str, Any]:
    """Sum the figures every test process of this session wrote."""
    counts: Counter[str] = Counter()
    notes: dict[str, Any] = {}
    for path in sorted(basetemp.rglob(f"{DIR_NAME}/*.json")):
        doc = json.loads(path.read_text())
        counts.update(doc.get("counts", {}))
        notes.update(doc.get("notes", {}))
    return {"counts": dict(sorted(counts.items())), "notes": dict(sorted(notes.items()))}
