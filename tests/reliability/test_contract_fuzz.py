"""Schemathesis over every operation of the spec (the org ones included, with a key of an org),
with good, missing and wrong credentials."""

from __future__ import annotations

import re
from typing import Any

import hypothesis
import pytest
import schemathesis
from reliability_figures import Figures
from schemathesis.specs.openapi.checks import positive_data_acceptance

from memory_bank.domain.filters import instant
from memory_bank.errors import InvalidRequest
from memory_bank.spec import load_spec

# Small per-operation budgets keep the whole suite within minutes on two cores; every
# phase (examples, coverage, fuzzing) and every built-in check stays on.
MAX_EXAMPLES = 25
MAX_EXAMPLES_NO_KEY = 8
STATEFUL_STEPS = 12
STATEFUL_EXAMPLES = 15
CREDENTIALS = ["valid", "missing", "wrong"]
# Query parameters whose valid values only the server can mint (signed cursors).
OPAQUE_PARAMETERS = {"cursor"}
# Query parameters whose pattern gives a date's shape, not its calendar (filters.instant).
TIME_PARAMETERS = {"created_after", "created_before", "updated_after"}
IF_MATCH_PATTERN = load_spec()["components"]["parameters"]["IfMatch"]["schema"]["pattern"]


def _config(credential: str) -> schemathesis.Config:
    """Schemathesis settings: positive and negative data, all checks."""
    checks: dict[str, Any] = {"enabled": True}
    phases: dict[str, Any] = {"stateful": {"max-steps": STATEFUL_STEPS}}
    if credential == "valid":
        # A well-formed If-Match naming another revision than the memory's is a 412 by design
        # (the state decides, as a 409 does), so valid data may meet it.
        checks["positive_data_acceptance"] = {
            "expected-statuses": ["2XX", "3XX", "401", "403", "404", "409", "412", "429", "5XX"]
        }
    else:
        # Without a usable key every secured operation must answer 401, valid data or not;
        # the request shapes were covered with a valid key, so fewer of them suffice here.
        checks["positive_data_acceptance"] = {"expected-statuses": ["2XX", "401"]}
        phases["coverage"] = {"enabled": False}
    return schemathesis.Config.from_dict(
        {
            "generation": {"mode": "all", "max-examples": _examples(credential)},
            "checks": checks,
            "phases": phases,
            "suppress-health-check": ["all"],
        }
    )


def _examples(credential: str) -> int:
    """Fuzzing examples per operation for a credential kind."""
    return MAX_EXAMPLES if credential == "valid" else MAX_EXAMPLES_NO_KEY


@pytest.fixture(params=CREDENTIALS)
def credential(request: pytest.FixtureRequest) -> str:
    """Which credential the fuzzer sends."""
    return str(request.param)


@pytest.fixture
def auth_headers(service: Any, credential: str) -> dict[str, str]:
    """Headers for the credential kind under test."""
    if credential == "valid":
        # A member and administrator of an org, so the org operations (saves with
        # "scope": "org", the audit log, deleting org memories) run for real.
        scopes = ("mcp:read", "mcp:write", "memory:review", "org:write", "org:admin")
        return service.auth("fuzzer", org="fuzz-org", scopes=scopes)
    if credential == "wrong":
        return {"Authorization": "Bearer mb_" + "x" * 43}
    return {}


@pytest.fixture
def service(make_service: Any) -> Any:
    """The service, without the limit on failed authentications: schemathesis sends wrong keys
    to every operation on purpose (tests/http/test_ratelimit.py covers the limit)."""
    return make_service(auth_failures_per_minute=0)


@pytest.fixture
def api_schema(service: Any, credential: str) -> Any:
    """The served spec, loaded through the app itself."""
    return schemathesis.openapi.from_asgi("/openapi.json", service.app, config=_config(credential))


def _run_all_operations(api_schema: Any, check: Any, examples: int) -> dict[str, str]:
    """Run schemathesis' generated test for every operation; operation label -> failure."""
    # schemathesis' own pytest wrapper (from_fixture/parametrize) rewrites a private pytest node
    # attribute that pytest 9.2 no longer has, so this drives the same per-operation test
    # builder directly: examples, coverage and fuzzing phases, all checks.
    from schemathesis.pytest.lazy import get_all_tests

    settings = hypothesis.settings(
        deadline=None,
        max_examples=examples,
        derandomize=True,
        suppress_health_check=list(hypothesis.HealthCheck),
        database=None,
    )
    failures: dict[str, str] = {}
    tests = list(
        get_all_tests(schema=api_schema, test_func=check, settings=settings, given_kwargs={})
    )
    assert tests, "the spec has no operations"
    for result in tests:
        operation, test = result.ok()
        try:
            test()
        except (Exception, BaseExceptionGroup) as exc:  # report every operation's failure
            failures[operation.label] = _describe(exc)
    return failures


def _forget_everything(engine: Any) -> None:
    """Delete every memory, draft and index row (keys and settings stay)."""
    from memory_bank.store.schema import metadata

    kept = {"api_key", "service_state", "user_settings"}
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            if table.name not in kept:
                conn.execute(table.delete())


def _engine(database_url: str) -> str:
    """'sqlite' or 'mariadb', for figure names."""
    return "sqlite" if database_url.startswith("sqlite") else "mariadb"


def _path_negative(case: Any) -> bool:
    """Whether schemathesis generated this case's path parameters to break the schema."""
    from schemathesis.generation.meta import ParameterLocation

    info = case.meta.components.get(ParameterLocation.PATH) if case.meta is not None else None
    return info is not None and info.mode.is_negative


def _off_pattern_headers(case: Any) -> list[str]:
    """Header values schemathesis sent as valid that the spec's pattern refuses.

    Its coverage phase keeps header values to letters and digits, so for a pattern that needs
    other characters (If-Match's quoted entity tags) it sends values such as `0` and still
    calls them schema-valid; the server rightly answers those 400.
    """
    sent = {name.lower(): value for name, value in (case.headers or {}).items()}
    value = sent.get("if-match")
    if value is None or re.search(IF_MATCH_PATTERN, value):
        return []
    return ["If-Match"]


def _impossible_times(case: Any) -> list[str]:
    """Time filters sent as valid that name no real time (month 33, offset +00:85, year 0):
    the spec's pattern can only state their shape, so the server rightly answers those 400."""
    found = []
    for name in TIME_PARAMETERS & set(case.query or {}):
        value = case.query[name]
        try:
            instant(value if isinstance(value, str) else str(value), name)
        except InvalidRequest:
            found.append(name)
    # Hypothesis reads the Tag pattern's \s as ECMA does; Python's re (Connexion's) also counts
    # \x1c-\x1f and \x85 as space, so a tag of only those is blank to the server, a 400.
    tags = (case.query or {}).get("tag")
    for pos, tag in enumerate(tags if isinstance(tags, list) else [tags] if tags else []):
        if isinstance(tag, str) and not re.search(r"[^\x00\s]", tag):
            found.append(f"tag.{pos}" if isinstance(tags, list) else "tag")
    return found


def _validate(case: Any, response: Any, credential: str, headers: dict[str, str]) -> None:
    """Run every schemathesis check on a response, plus this service's own rules."""
    opaque = sorted(OPAQUE_PARAMETERS & set(case.query or {}))
    off_pattern = _off_pattern_headers(case) + _impossible_times(case)
    # A schema-valid string is not a cursor this server issued: a 400 invalid_cursor is the
    # right answer there, so only that check is relaxed, and only for those requests; so is a
    # header value outside the spec's pattern, which must be the 400 that names it.
    excluded = [positive_data_acceptance] if opaque or off_pattern else []
    case.validate_response(
        response, excluded_checks=excluded, headers=headers, transport_kwargs={"headers": headers}
    )
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    refused_shape = positive and response.status_code == 400 and off_pattern
    if opaque and positive and response.status_code == 400 and not refused_shape:
        assert response.json()["code"] == "invalid_cursor", response.text
    if off_pattern and positive and response.status_code == 400:
        assert response.json()["field"] in [*off_pattern, *opaque], response.text
    secured = case.operation.definition.raw.get("security", [{}]) != []
    if credential != "valid" and secured:
        # No key, no data: 401, or a refusal that needs no identity (a method the path
        # lacks, a body over the cap, or, for a path parameter built to break the schema, a
        # URL that routes nowhere: `revisions/1.5/restore` is no operation's path, so the
        # router answers 404 before any identity or data is consulted).
        refusals = {401, 405, 413} | ({404} if _path_negative(case) else set())
        assert response.status_code in refusals, f"{case.formatted_path}: {response.text}"
        if response.status_code == 401:
            assert response.headers["www-authenticate"][0].startswith("Bearer")


def _describe(exc: BaseException) -> str:
    """A failure's message with those of the failures grouped in it."""
    parts = [f"{type(exc).__name__}: {exc}"]
    for inner in getattr(exc, "exceptions", ()):
        parts.append(f"  {type(inner).__name__}: {inner}")
    return "\n".join(parts)[:4000]


@pytest.mark.slow
def test_every_operation(
    api_schema: Any,
    auth_headers: dict[str, str],
    credential: str,
    database_url: str,
    figures: Figures,
) -> None:
    key = f"fuzz.{_engine(database_url)}.{credential}"

    def check(case: Any) -> None:
        figures.add(key + ".cases")
        response = case.call(headers=auth_headers)
        _validate(case, response, credential, headers=auth_headers)

    failures = _run_all_operations(api_schema, check, _examples(credential))
    operations = len(list(api_schema.get_all_operations()))
    figures.add(key + ".operations", operations)
    figures.add(key + ".failures", len(failures))
    assert not failures, "\n\n".join(f"{label}: {msg}" for label, msg in failures.items())


@pytest.mark.slow
@pytest.mark.parametrize("credential", ["valid"])
def test_stateful_links(
    service: Any,
    api_schema: Any,
    auth_headers: dict[str, str],
    credential: str,
    database_url: str,
    figures: Figures,
) -> None:
    """Save -> get -> delete -> get (404) and save -> search, along the spec's links."""
    key = f"stateful.{_engine(database_url)}.{credential}"

    class Workflow(api_schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Every example starts from an empty memory bank: with what the example before left
            # behind, the same choices would draw other data (links fill from the responses),
            # which hypothesis reports as a flaky strategy.
            _forget_everything(service.engine)

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": auth_headers}

        def after_call(self, response: Any, case: Any) -> None:
            figures.add(key + ".steps")

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            _validate(case, response, credential, headers=auth_headers)

    Workflow.run(
        settings=hypothesis.settings(
            max_examples=STATEFUL_EXAMPLES,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
            database=None,
        )
    )
    figures.add(key + ".runs")


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.parametrize("credential", ["valid"])
def test_search_with_semantic_search_on(
    make_service: Any, credential: str, database_url: str, figures: Figures
) -> None:
    """getMemorySearch (the operation semantic search changed) fuzzed with embeddings on and
    vectors present: every mode, every check."""
    from memory_bank.app import state_of
    from memory_bank.domain import vector_jobs

    service = make_service(auth_failures_per_minute=0, embeddings="local", embeddings_worker=False)
    headers = service.auth("fuzzer")
    for text in ("Leo has football practice every Saturday", "The repositories live on Gitea"):
        assert service.client.post("/v1/memory", json={"content": text}, headers=headers).is_success
    vector_jobs.drain_once(service.db, state_of(service.app).semantic)
    schema = schemathesis.openapi.from_asgi(
        "/openapi.json", service.app, config=_config(credential)
    ).include(operation_id="getMemorySearch")
    key = f"fuzz.{_engine(database_url)}.semantic"
    modes: set[str] = set()

    def check(case: Any) -> None:
        figures.add(key + ".cases")
        response = case.call(headers=headers)
        _validate(case, response, credential, headers=headers)
        if response.status_code == 200:
            modes.add(response.json()["mode"])

    failures = _run_all_operations(schema, check, MAX_EXAMPLES)
    assert len(list(schema.get_all_operations())) == 1
    assert not failures, "\n\n".join(f"{label}: {msg}" for label, msg in failures.items())
    assert {"hybrid", "semantic", "lexical"} <= modes
