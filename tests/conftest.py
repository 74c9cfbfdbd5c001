"""Shared fixtures: real SQLite files and a throw-away MariaDB database, one parametrized app."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from databases import wipe
from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.store import api_keys
from memory_bank.store.database import Database
from memory_bank.store.engine import writing

MARIADB_ADMIN_URL = os.environ.get(
    "MEMORY_BANK_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
)
ENGINES = ["sqlite", "mariadb"]


def _mariadb_available() -> str | None:
    """None when MariaDB answers, else why not."""
    try:
        engine = sa.create_engine(MARIADB_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.fixture(scope="session")
def mariadb_url() -> Iterator[str]:
    """A fresh MariaDB database for this test session (worker), dropped at the end."""
    problem = _mariadb_available()
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"MariaDB is required in CI but unreachable: {problem}")
        pytest.skip(f"MariaDB unreachable: {problem}")
    name = f"mbtest_{os.getpid()}_{secrets.token_hex(4)}"
    admin = sa.create_engine(MARIADB_ADMIN_URL)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    url = sa.engine.make_url(MARIADB_ADMIN_URL).set(database=name)
    yield url.render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
    admin.dispose()


@pytest.fixture(params=ENGINES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL: a new SQLite file, or the session's MariaDB database emptied."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'memory-bank.db'}"
        return
    url = request.getfixturevalue("mariadb_url")
    with contextlib.suppress(sa.exc.ProgrammingError):  # not migrated yet
        wipe(url)
    yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Test settings: the parametrized database, response validation on, and the test client's
    host name allowed (Starlette's TestClient sends Host: testserver)."""
    return Settings(database_url=database_url, validate_responses=True, allowed_hosts="testserver")


@dataclass
class Service:
    """An app under test with a client and a way to mint keys."""

    app: Any
    client: TestClient
    # The app's database (its pools and write policy) and its main pool, for inspecting rows.
    db: Database
    engine: sa.Engine

    def key(
        self,
        user: str = "alice",
        scopes: tuple[str, ...] = ("mcp:read", "mcp:write"),
        source: str = "test-suite",
        org: str | None = None,
        expires_at: Any = None,
    ) -> str:
        """Create an API key and return its secret."""
        secret, _ = writing(
            self.engine,
            lambda conn: api_keys.create_key(conn, user, scopes, source, org, expires_at),
        )
        return secret

    def auth(self, user: str = "alice", **kwargs: Any) -> dict[str, str]:
        """Authorization headers for a fresh key of this user."""
        return {"Authorization": f"Bearer {self.key(user, **kwargs)}"}


@pytest.fixture
def make_service(settings: Settings) -> Iterator[Callable[..., Service]]:
    """Build services with optional setting changes (all on the parametrized database)."""
    built: list[Service] = []

    def build(**changes: Any) -> Service:
        app = create_app(settings.replace(**changes))
        db = state_of(app).db
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        service = Service(app=app, client=client, db=db, engine=db.engine)
        built.append(service)
        return service

    yield build
    for service in built:
        service.client.__exit__(None, None, None)
        app_state.dispose(state_of(service.app))


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    """The service with default test settings."""
    return make_service()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print (and optionally save) the figures the reliability tests measured."""
    import json

    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    sys.path.insert(0, str(Path(__file__).parent / "reliability"))
    from reliability_figures import collect

    found = collect(base)
    if not found["counts"] and not found["notes"]:
        return
    terminalreporter.section("reliability figures")
    for key, value in {**found["counts"], **found["notes"]}.items():
        terminalreporter.write_line(f"{key}: {value}")
    out = os.environ.get("MEMORY_BANK_FIGURES_OUT")
    if out:
        Path(out).write_text(json.dumps(found, indent=1) + "\n")
