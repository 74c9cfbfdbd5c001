"""The app factory: a broken spec or a missing handler fails at start-up, not at run time."""

from __future__ import annotations

import pytest
import yaml
from connexion.exceptions import InvalidSpecification

from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.spec import load_spec


@pytest.fixture
def sqlite_settings(tmp_path):
    # Semantic search off: the default loads (or fetches) the embedding model, another tier's.
    return Settings(database_url=f"sqlite:///{tmp_path / 'app.db'}", embeddings="off")


def _write(tmp_path, spec):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_an_operation_without_a_handler_fails_at_start_up(tmp_path, sqlite_settings):
    spec = load_spec()
    spec["paths"]["/v1/extra"] = {
        "get": {
            "operationId": "getExtraThing",
            "security": [{"bearerAuth": ["mcp:read"]}],
            "responses": {"200": {"description": "ok"}},
        }
    }
    with pytest.raises(RuntimeError, match="getExtraThing"):
        create_app(sqlite_settings, spec_file=_write(tmp_path, spec))


def test_an_invalid_spec_fails_at_start_up(tmp_path, sqlite_settings):
    spec = load_spec()
    limit = spec["paths"]["/v1/memory"]["get"]["parameters"][0]
    limit["schema"]["type"] = "whole-number"  # not a JSON Schema type
    with pytest.raises(InvalidSpecification):
        create_app(sqlite_settings, spec_file=_write(tmp_path, spec))


def test_a_spec_that_is_not_openapi_fails_at_start_up(tmp_path, sqlite_settings):
    path = tmp_path / "spec.yaml"
    path.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not an OpenAPI document"):
        create_app(sqlite_settings, spec_file=path)


def test_the_shipped_spec_builds(sqlite_settings):
    app = create_app(sqlite_settings)
    state = state_of(app)
    assert state.requirements["postMemory"].scopes == ("mcp:write",)
    assert state.requirements["postMemory"].switches
    assert not state.requirements["getHealthz"].switches
    app_state.dispose(state)
