"""Import the load driver and the server starter from benchmarks/ (one implementation for tests
and bench)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import common
import load
import org_load

__all__ = ["common", "load", "org_load"]
