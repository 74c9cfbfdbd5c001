"""Fixtures for the reliability suite: measured figures and users in two organisations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reliability_figures import Figures


@pytest.fixture(scope="session")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Figures]:
    """This process's figures; written when the session ends (summed by the root conftest)."""
    found = Figures()
    yield found
    found.write(tmp_path_factory.getbasetemp())
