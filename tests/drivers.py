"""The optional C driver for MySQL/MariaDB, as the tests need it (importable: conftest is not)."""

from __future__ import annotations

import importlib.util
import os

import pytest


def require_mysqlclient() -> None:
    """Skip without the optional C driver; in CI, where make test installs it, fail instead."""
    if importlib.util.find_spec("MySQLdb") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("mysqlclient is required in CI (make test installs it)")
        pytest.skip("mysqlclient is not installed (make mysqlclient)")
