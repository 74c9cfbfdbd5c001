"""The one error renderer: every failure is problem+json with a stable code and no leaks."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from contract import assert_problem, row_counts
from memory_bank import errors
from memory_bank.http import problems


def test_every_api_error_class_renders_the_problem_shape():
    classes = [
        errors.InvalidRequest,
        errors.InvalidCursor,
        errors.Unauthorized,
        errors.Forbidden,
        errors.NotFound,
        errors.MemoryNotFound,
        errors.PayloadTooLarge,
        errors.UnsupportedMediaType,
        errors.Conflict,
        errors.ServiceUnavailable,
    ]
    codes = set()
    for cls in classes:
        doc = cls("Something went wrong.", field="content").body()
        assert set(doc) == {"type", "title", "status", "detail", "code", "field"}
        assert doc["status"] == cls.status and 400 <= cls.status < 600
        assert doc["type"].endswith("/" + doc["code"])
        codes.add(doc["code"])
    assert len(codes) == len(classes)  # each class has its own stable code
    assert errors.Unauthorized("x").headers["WWW-Authenticate"].startswith("Bearer")
    scope = errors.InsufficientScope("mcp:write")
    assert scope.status == 403 and scope.body()["required_scope"] == "mcp:write"


@pytest.mark.parametrize(
    ("raw", "field", "detail"),
    [
        ("'xxxx' is too long - 'content'", "content", "'content' is too long."),
        ("['a', 'b'] is too long - 'tags'", "tags", "'tags' is too long."),
        (
            "'a\\x00' does not match '^[^\\\\x00]*$' - 'tags.0'",
            "tags.0",
            "'tags.0' must not contain NUL characters.",
        ),
        (
            "51 is greater than the maximum of 50 for query parameter 'limit'",
            "limit",
            "'limit' is greater than the maximum of 50.",
        ),
        ("Missing query parameter 'q'", "q", "Missing query parameter 'q'"),
        ("Additional properties are not allowed ('colour' was unexpected)", "colour", None),
        (
            "Additional properties are not allowed ('url' was unexpected) - 'contexts.0'",
            "contexts.0.url",
            None,
        ),
        ("Extra query parameter(s) page not in spec", "page", None),
        ("['x'] is not of type 'object'", None, "The body is not of type 'object'."),
        # A value that itself contains a predicate does not confuse the rewrite.
        (
            "'this is too long is not of type x' is too short - 'content'",
            "content",
            "'content' is too short.",
        ),
    ],
)
def test_validator_messages_name_the_field_without_echoing_the_value(raw, field, detail):
    assert problems._field_of(raw) == field
    if detail is not None:
        assert problems._clean_detail(raw, field) == detail


def test_unknown_route_and_wrong_method_are_problems(service):
    headers = service.auth()
    assert_problem(service.client.get("/v2/memory", headers=headers), 404, "not_found")
    assert_problem(service.client.put("/v1/memory", headers=headers), 405, "method_not_allowed")
    assert_problem(
        service.client.patch("/v1/memory/mem_x", headers=headers), 405, "method_not_allowed"
    )


def test_unexpected_error_is_a_logged_generic_500_that_leaks_nothing(service, caplog):
    headers = service.auth()

    def explode(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("INSERT INTO MEMORY_CONTEXT"):
            raise RuntimeError("boom: secret internal detail")

    before = row_counts(service.engine)
    sa.event.listen(service.engine, "before_cursor_execute", explode)
    try:
        with caplog.at_level(logging.ERROR, logger="memory_bank"):
            r = service.client.post(
                "/v1/memory",
                json={"content": "half written?", "contexts": [{"snippet": "s"}]},
                headers=headers,
            )
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", explode)
    doc = assert_problem(r, 500, "internal_error")
    assert "boom" not in r.text and "secret" not in r.text
    assert doc["detail"] == "The server hit an unexpected error."
    assert "boom: secret internal detail" in caplog.text
    # The memory row written before the failing context insert was rolled back.
    assert row_counts(service.engine) == before
    r = service.client.get("/v1/memory", headers=headers)
    assert r.json()["memories"] == []


def test_security_headers_on_problems_too(service):
    r = service.client.get("/v1/memory")
    assert r.status_code == 401
    assert r.headers["x-content-type-options"] == "nosniff"


def test_readyz_is_a_503_problem_when_the_schema_is_not_current(service):
    with service.engine.begin() as conn:
        head = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
        conn.execute(sa.text("UPDATE alembic_version SET version_num = 'not-a-revision'"))
    try:
        doc = assert_problem(service.client.get("/readyz"), 503, "service_unavailable")
        assert "migrate" in doc["detail"]
        assert service.client.get("/healthz").status_code == 200
    finally:
        with service.engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": head})
    assert service.client.get("/readyz").status_code == 200
