"""The repository's scripts under tools/, imported as modules for the tests that run their
functions (each script once per test process)."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load(name: str) -> ModuleType:
    """tools/<name>.py as a fresh module (its globals its own)."""
    found = importlib.util.spec_from_file_location(f"tools_{name}", TOOLS / f"{name}.py")
    assert found is not None and found.loader is not None, name
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


@cache
def gen_mcp() -> ModuleType:
    """tools/gen_mcp.py, which writes the MCP manifest and measures the figures docs/mcp.md
    quotes (shared: the tests only call its functions)."""
    return load("gen_mcp")
