"""The ranking's tuned constants, read from tuning.json beside this module (each with what it
does and the module that reads it); tune.py is the command that tunes them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("tuning.json")


@cache
def constants() -> dict[str, Any]:
    """Every constant's entry in tuning.json."""
    constants: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))["constants"]
    return constants


def value(name: str) -> float:
    """A tuned constant's value."""
    return float(constants()[name]["value"])
