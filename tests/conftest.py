"""Shared fixtures: real SQLite files and a throw-away MariaDB database, one parametrized app."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import secrets
import shutil
import sqlite3
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from databases import MARIADB_ADMIN_URL, SPIDER_HEAD_URL, wipe
from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.store import api_keys
from memory_bank.store.database import Database
from memory_bank.store.engine import writing
from memory_bank.store.migrate import signing_secret
from reliability_figures import collect

# Semantic search is on by default; the suite turns it on only where it is under test (by
# setting, or the live servers' own environment), so processes started here read it off too.
os.environ.setdefault("MEMORY_BANK_EMBEDDINGS", "off")

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
    """A fresh MariaDB database for this test session (worker), dropped at the end; or the
    Spider head that make test-spider brings up, as it is."""
    if SPIDER_HEAD_URL:
        yield SPIDER_HEAD_URL
        return
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
    return Settings(
        database_url=database_url,
        validate_responses=True,
        allowed_hosts="testserver",
        embeddings="off",
    )


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


@pytest.fixture(scope="session", autouse=True)
def spec_checked_once() -> Iterator[None]:
    """Connexion checks the OpenAPI document against the OpenAPI schema whenever an app is
    built: most of a test service's start once it skips the migrations (below), and the same
    few documents every time. In this process each document that passes is checked once (by
    its content); one that fails is checked, and fails, every time."""
    from connexion.spec import Specification

    check = Specification._validate_spec
    passed: set[bytes] = set()

    def checked_once(cls: type[Specification], spec: dict[str, Any]) -> None:
        digest = hashlib.sha256(json.dumps(spec, sort_keys=True, default=repr).encode()).digest()
        if digest not in passed:
            check.__func__(cls, spec)  # type: ignore[attr-defined]
            passed.add(digest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Specification, "_validate_spec", classmethod(checked_once))
        yield


class PreparedSQLite:
    """A SQLite database the app prepared once (schema at head, search index current, a signing
    secret): copied for each service that starts on a file not made yet, which then starts
    without migrating. Running the migrations took most of a service's start."""

    def __init__(self, path: Path) -> None:
        app = create_app(Settings(database_url=f"sqlite:///{path}", embeddings="off"))
        self.secret = signing_secret(state_of(app).db.engine).decode()
        app_state.dispose(state_of(app))
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.path = path

    def copy_to(self, url: str) -> bool:
        """Copy the prepared database to url's file if url is a SQLite file that does not
        exist yet, with a signing secret of its own (as a new database gets); whether it did."""
        parsed = sa.engine.make_url(url)
        if parsed.get_backend_name() != "sqlite" or parsed.query or not parsed.database:
            return False
        target = Path(parsed.database)
        if parsed.database == ":memory:" or target.exists() or not target.parent.is_dir():
            return False
        shutil.copyfile(self.path, target)
        with contextlib.closing(sqlite3.connect(target)) as conn, conn:
            conn.execute(
                "UPDATE service_state SET value = ? WHERE value = ?",
                (secrets.token_urlsafe(32), self.secret),
            )
        return True


@pytest.fixture(scope="session")
def prepared_sqlite(tmp_path_factory: pytest.TempPathFactory) -> PreparedSQLite:
    """This session's (worker's) prepared SQLite database."""
    return PreparedSQLite(tmp_path_factory.mktemp("prepared") / "memory-bank.db")


@pytest.fixture
def make_service(
    settings: Settings, prepared_sqlite: PreparedSQLite
) -> Iterator[Callable[..., Service]]:
    """Build services with optional setting changes (all on the parametrized database). A
    service on a SQLite file not made yet starts from a copy of the prepared database (made
    before any test's own fixtures run, so nothing a test patches is in it)."""
    built: list[Service] = []

    def build(**changes: Any) -> Service:
        wanted = settings.replace(**changes)
        copied = prepared_sqlite.copy_to(wanted.database_url.reveal())
        app = create_app(wanted, run_migrations=not copied)
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


class _SpiderTier:
    """Leaves out the tests marked spider unless the -m expression names them (make
    test-spider runs them against the cluster it brings up), so make test does not run them
    a second time."""

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        if "spider" in (config.option.markexpr or ""):
            return
        left = [item for item in items if item.get_closest_marker("spider") is not None]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [item for item in items if item.get_closest_marker("spider") is None]


def pytest_configure(config: pytest.Config) -> None:
    """Register the spider tier (above)."""
    config.pluginmanager.register(_SpiderTier(), "memory-bank-spider-tier")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print (and optionally save) the figures the reliability tests measured."""
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    found = collect(base)
    if not found["counts"] and not found["notes"]:
        return
    terminalreporter.section("reliability figures")
    for key, value in {**found["counts"], **found["notes"]}.items():
        terminalreporter.write_line(f"{key}: {value}")
    out = os.environ.get("MEMORY_BANK_FIGURES_OUT")
    if out:
        Path(out).write_text(json.dumps(found, indent=1) + "\n")


# Markers for the fast tier (`make test-fast` leaves these out), applied from what a test uses
# so that test files rarely name them: a "mariadb" parameter; the fixtures below, by name; and,
# from the code of the test, of the suite's fixtures it requests and of the suite's functions
# they call (its own module's or a shared helper's), whether it starts another process or builds
# the local model.
FIXTURE_MARKS = {
    "mariadb_url": "mariadb",
    "mariadb_engine": "mariadb",
    "mysqldb_url": "mariadb",
    "own_mariadb": "mariadb",
    "browser": "browser",
    "panel": "browser",
    "semantic": "model",
    "provider": "model",
    "embedding_server": "model",
}
# A live server, a subprocess, or the MCP SDK's stdio transport (a `memory-bank mcp` process).
PROCESS_NAMES = {"start_server", "subprocess", "Popen", "StdioServerParameters"}
# Building the local model (mpnet.ensure) or loading it (local_model.load).
MODEL_CALLS = [{"mpnet", "ensure"}, {"local_model", "load"}]
TESTS = Path(__file__).resolve().parent


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and those nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _names(functions: Iterable[Any]) -> set[str]:
    """The global and attribute names these functions use (dotted imports split), following
    calls into the suite's own functions."""
    todo = [inspect.unwrap(f) for f in functions]
    seen: set[types.CodeType] = set()
    names: set[str] = set()
    while todo:
        function = todo.pop()
        code = getattr(function, "__code__", None)
        if code is None or code in seen:
            continue
        seen.add(code)
        for each in _codes(code):
            for name in each.co_names:
                names.update(name.split("."))
                found = function.__globals__.get(name)
                if inspect.isfunction(found) and _of_the_suite(found):
                    todo.append(found)
    return names


def _of_the_suite(function: Any) -> bool:
    """Whether a function is the suite's own (a test module's or a shared helper's), whose
    calls count as the test's: a helper that starts a process makes its callers slow."""
    return Path(function.__code__.co_filename).resolve().is_relative_to(TESTS)


def _suite_fixtures(item: pytest.Function) -> list[Any]:
    """The functions of the fixtures this test requests that the suite itself defines."""
    found = []
    for name in item.fixturenames:
        for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):
            code = getattr(inspect.unwrap(fixturedef.func), "__code__", None)
            if code is not None and Path(code.co_filename).resolve().is_relative_to(TESTS):
                found.append(fixturedef.func)
    return found


def _marks(item: pytest.Function) -> set[str]:
    """The tier markers what this test uses calls for."""
    marks = {FIXTURE_MARKS[name] for name in item.fixturenames if name in FIXTURE_MARKS}
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    if any(isinstance(value, str) and value == "mariadb" for value in params):
        marks.add("mariadb")
    names = _names([item.function, *_suite_fixtures(item)])
    if names & PROCESS_NAMES:
        marks.add("slow")
    if any(call <= names for call in MODEL_CALLS):
        marks.add("model")
    return marks


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with the tiers it needs (see FIXTURE_MARKS)."""
    for item in items:
        if isinstance(item, pytest.Function):
            for mark in sorted(_marks(item) - {m.name for m in item.iter_markers()}):
                item.add_marker(mark)
