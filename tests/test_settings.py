"""Settings: read from MEMORY_BANK_* once, typed, and every one documented in the README."""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import re
from pathlib import Path

import pytest

from memory_bank.settings import Secret, Settings, documented

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
    assert s.database_url.reveal() == "sqlite:///x.db"
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


def test_secrets_never_show_in_repr_str_or_logs(caplog):
    url = "mysql+pymysql://memory_bank:hunter2-s3cret@db.example/memory_bank"
    for settings in (
        Settings(database_url=url),
        Settings.from_env({"MEMORY_BANK_DATABASE_URL": url}),
    ):
        assert isinstance(settings.database_url, Secret)
        assert settings.database_url.reveal() == url
        for shown in (repr(settings), str(settings), f"{settings}", repr(settings.database_url)):
            assert "hunter2" not in shown and "db.example" not in shown, shown
        logging.getLogger("test").warning("settings: %s %r", settings, settings)
    assert caplog.records and all("hunter2" not in r.getMessage() for r in caplog.records)
    # Equal values compare equal, so settings still compare as values.
    assert Settings(database_url=url) == Settings(database_url=Secret(url))
    # The README shows the default, which is no secret.
    assert documented()[0][:2] == ("MEMORY_BANK_DATABASE_URL", "sqlite:///memory-bank.db")


def test_no_module_reads_a_setting_from_the_environment_itself():
    # Every MEMORY_BANK_* variable is a typed Settings field, read once by from_env; a module
    # that reads one itself is a setting no table, --help or test knows about.
    reads = re.compile(r"""(?:environ\.get|getenv|environ\[)\(?\s*["']MEMORY_BANK_""")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "src" / "memory_bank").rglob("*.py"))
        if path.name != "settings.py" or path.parent.name != "memory_bank"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []
    assert reads.search('key = os.environ.get("MEMORY_BANK_MCP_KEY")')


def test_the_mcp_key_and_model_hub_are_settings():
    env = {"MEMORY_BANK_MCP_KEY": "mb_secret", "MEMORY_BANK_MODEL_HUB": "http://mirror.test"}
    settings = Settings.from_env(env)
    assert settings.mcp_key.reveal() == "mb_secret" and "mb_secret" not in repr(settings)
    assert settings.model_hub == "http://mirror.test"
    assert Settings().model_hub == "https://huggingface.co" and not Settings().mcp_key
