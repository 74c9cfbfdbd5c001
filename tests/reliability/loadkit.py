"""The load driver and the server starter of benchmarks/ (one implementation for tests and
bench): pytest puts benchmarks/ on the import path (pyproject.toml's pythonpath), as running
a benchmark as a script does."""

from __future__ import annotations

import common
import load
import org_load

__all__ = ["common", "load", "org_load"]
