"""How memory-bank is published: its PyPI name, its commands and its MCP registry listing."""

from __future__ import annotations

import json
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# On PyPI, `memory-bank` is an unrelated project; ours must never be installed by that name.
TAKEN = "memory-bank"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _listing() -> dict:
    return json.loads((ROOT / "server.json").read_text(encoding="utf-8"))


def test_the_distribution_name_is_ours_and_the_command_stays():
    project = _pyproject()["project"]
    name = project["name"]
    assert name == "memory-bank-server" != TAKEN
    # `memory-bank` stays the command; one named like the distribution makes `uvx <name>` work.
    assert project["scripts"] == {
        "memory-bank": "memory_bank.cli:main",
        name: "memory_bank.cli:main",
    }
    installed = metadata.distribution(name)
    assert {e.name for e in installed.entry_points if e.group == "console_scripts"} >= {
        "memory-bank",
        name,
    }


def test_the_registry_listing_points_at_this_package_and_repository():
    listing = _listing()
    package = listing["packages"][0]
    assert package["identifier"] == _pyproject()["project"]["name"]
    assert package["registryType"] == "pypi" and package["runtimeHint"] == "uvx"
    repository = listing["repository"]
    assert repository["source"] == "github"
    assert repository["url"].startswith("https://github.com/")
    assert _pyproject()["project"]["urls"]["Repository"] == repository["url"]
    # The registry checks ownership by this marker in the package's README (its PyPI page).
    assert f"mcp-name: {listing['name']}" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_registry_install_keeps_its_database_at_an_absolute_place():
    # A host starts the server from a directory of its own: a relative file would land there.
    env = {e["name"]: e for e in _listing()["packages"][0]["environmentVariables"]}
    default = env["MEMORY_BANK_DATABASE_URL"]["default"]
    assert default.startswith("sqlite:///~/")
    assert Path(default.removeprefix("sqlite:///")).expanduser().is_absolute()


def test_the_listing_offers_the_http_endpoint_too():
    (remote,) = _listing()["remotes"]
    assert remote["type"] == "streamable-http"
    assert remote["url"].startswith("https://") and remote["url"].endswith("/mcp")
    for variable in (v for v in remote.get("variables", {})):
        assert "{" + variable + "}" in remote["url"]
    (header,) = remote["headers"]
    assert header["name"] == "Authorization" and header["isSecret"] is True
    assert header["value"] == "Bearer {api_key}" and "api_key" in header["variables"]


def test_docs_install_the_distribution_by_its_own_name():
    for doc in (ROOT / "README.md", ROOT / "docs" / "mcp.md"):
        text = doc.read_text(encoding="utf-8")
        for command in ("pip install", "pipx install", "uvx", "uv tool install"):
            assert f"{command} {TAKEN} " not in text and f"{command} {TAKEN}\n" not in text, doc
