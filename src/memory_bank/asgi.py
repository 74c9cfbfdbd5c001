"""Entry point for ASGI servers: `uvicorn --factory memory_bank.asgi:app_factory`."""

from __future__ import annotations

from typing import Any

from memory_bank.app import create_app
from memory_bank.settings import Settings


def app_factory() -> Any:
    """Build the app from MEMORY_BANK_* environment settings."""
    return create_app(Settings.from_env())
