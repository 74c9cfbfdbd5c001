"""The shipped background sentences are what tools/background.py composes (generated files are
checked, not trusted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from memory_bank.search import background

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "background.py"


def test_shipped_sentences_are_the_tools() -> None:
    """Running the tool would write the sentences background.json holds, in the same order."""
    spec = importlib.util.spec_from_file_location("background_tool", SCRIPT)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules["background_tool"] = tool
    spec.loader.exec_module(tool)
    assert tool.texts() == background.texts()
