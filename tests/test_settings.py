"""Settings: read from MEMORY_BANK_* once, typed, and every one documented in the README."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from memory_bank.settings import Settings, documented

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "settings_table", ROOT / "tools/settings_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_setting_has_a_help_line():
    for f in dataclasses.fields(Settings):
        assert f.metadata.get("help", "").strip(), f.name


def test_readme_settings_table_is_current():
    # Regenerate with: python tools/settings_table.py --write
    tool = _tool()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tool.embedded(readme) == tool.table()
    for name, _, _ in documented():
        assert f"`{name}`" in readme, name
    assert tool.main(["--check"]) == 0


def test_from_env_casts_each_type():
    env = {
        "MEMORY_BANK_PORT": "9000",
        "MEMORY_BANK_VALIDATE_RESPONSES": "yes",
        "MEMORY_BANK_PANEL_ENABLED": "off",
        "MEMORY_BANK_DATABASE_URL": "sqlite:///x.db",
        "OTHER_PORT": "1",
    }
    s = Settings.from_env(env)
    assert s.port == 9000
    assert s.validate_responses is True and s.panel_enabled is False
    assert s.database_url == "sqlite:///x.db"
    assert Settings.from_env({}) == Settings()
    assert Settings.from_env(env, port=1).port == 1


@pytest.mark.parametrize(
    ("name", "raw"),
    [("MEMORY_BANK_PORT", "eighty"), ("MEMORY_BANK_METRICS_ENABLED", "maybe")],
)
def test_bad_values_name_the_variable(name, raw):
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: raw})


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().port = 1  # type: ignore[misc]
