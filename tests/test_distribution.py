"""How memory-bank is distributed: its name, its commands, and an install that works today.

It is not on a package index yet, so nothing may send a user or an agent host to one: no
registry listing, no project URL, and the docs install from a clone.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# On PyPI, `memory-bank` is an unrelated project; ours must never be installed by that name.
TAKEN = "memory-bank"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_distribution_name_is_ours_and_the_command_stays():
    project = _pyproject()["project"]
    name = project["name"]
    assert name == "memory-bank-server" != TAKEN
    assert project["scripts"] == {
        "memory-bank": "memory_bank.cli:main",
        name: "memory_bank.cli:main",
    }
    installed = metadata.distribution(name)
    assert {e.name for e in installed.entry_points if e.group == "console_scripts"} >= {
        "memory-bank",
        name,
    }


def test_nothing_points_at_a_repository_or_listing_that_does_not_exist():
    # No public repository yet: a project URL would send people to a page nobody can reach.
    assert "urls" not in _pyproject()["project"]
    # A registry listing would send hosts to a package no index has.
    assert not (ROOT / "server.json").exists()
    assert "mcp-name:" not in (ROOT / "README.md").read_text(encoding="utf-8")


def test_docs_install_from_a_clone_not_from_an_index():
    # `pip install .` (or '.[extra]') works from a clone; an install by the distribution's name
    # asks an index that does not have it.
    name = _pyproject()["project"]["name"]
    fetch = re.compile(
        rf"(pip install|pipx install|uv tool install|uvx( --from)?) '?({name}|{TAKEN})\b"
    )
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            assert not fetch.search(line), f"{doc.relative_to(ROOT)}:{number}: {line.strip()}"


def test_the_readme_gives_the_install_that_works_here():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("### Installing the package", 1)[1].split("\n## ", 1)[0]
    assert "pip install ." in install and "memory-bank serve" in install
    assert "memory-bank mcp" in readme
