"""Tests of the panel, its sign-in and its routes (memory_bank.web)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_NAME = "memory_bank_tests_root_conftest"


def root_conftest() -> ModuleType:
    """tests/conftest.py as a module (start_server, stop_server, LiveServer).

    Loaded by path: other test folders have a conftest.py of their own, and whichever was
    imported last owns the plain name `conftest`.
    """
    if _NAME not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "conftest.py"
        spec = importlib.util.spec_from_file_location(_NAME, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]
