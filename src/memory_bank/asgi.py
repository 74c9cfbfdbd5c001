"""Entry point for ASGI servers: `uvicorn --factory memory_bank.asgi:app_factory`."""

from __future__ import annotations

import sys
from typing import Any

from memory_bank.app import EmbeddingsMisconfigured, KeyProblem, create_app
from memory_bank.settings import Settings

# The exit code of a process that refuses to start over its master key (as the CLI's).
EXIT_MASTER_KEY = 4
# ... and over a MEMORY_BANK_EMBEDDINGS it cannot use (the CLI's usage error).
EXIT_SETTINGS = 2


def app_factory() -> Any:
    """Build the app from MEMORY_BANK_* environment settings."""
    try:
        return create_app(Settings.from_env())
    except KeyProblem as exc:
        # A message and an exit code, not a traceback, and never a half-working service.
        print(f"memory-bank: cannot start: {exc}", file=sys.stderr)
        sys.exit(EXIT_MASTER_KEY)
    except EmbeddingsMisconfigured as exc:
        print(f"memory-bank: cannot start: {exc}", file=sys.stderr)
        sys.exit(EXIT_SETTINGS)
