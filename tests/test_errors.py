"""The one error renderer: every failure is problem+json with a stable code and no leaks."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from contract import assert_problem, row_counts
from memory_bank import errors


def _all_classes(cls=errors.ApiError):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_classes(sub)


def test_every_problem_class_renders_the_problem_shape_with_a_code_of_its_own():
    classes = [c for c in _all_classes() if c is not errors.InsufficientScope]
    codes = {}
    for cls in classes:
        doc = cls("Something went wrong.", field="content").document()
        assert set(doc) == {"type", "title", "status", "detail", "code", "field"}
        assert doc["status"] == cls.status and 400 <= cls.status < 600
        assert doc["type"].endswith("/" + doc["code"]) and doc["title"]
        assert doc["code"] not in codes, (cls, codes.get(doc["code"]))  # one code, one meaning
        codes[doc["code"]] = cls
    assert errors.Unauthorized("x").headers["WWW-Authenticate"].startswith("Bearer")
    scope = errors.InsufficientScope("mcp:write")
    assert scope.status == 403 and scope.document()["required_scope"] == "mcp:write"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 409, 413, 415, 429, 500, 503])
def test_every_status_the_service_answers_has_its_class(status):
    cls = errors.for_status(status)
    assert cls.status == status
    assert cls.__base__ is errors.ApiError  # the plain class of the status, not a special case


async def _sent(problem):
    messages = []

    async def send(message):
        messages.append(message)

    await errors.send(send, problem)
    return messages


def test_middleware_sends_the_same_document_the_app_renders():
    import asyncio
    import json

    problem = errors.RateLimited("Slow down.", headers={"Retry-After": "3"})
    start, body = asyncio.run(_sent(problem))
    assert start["status"] == 429
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"retry-after"] == b"3"
    assert int(headers[b"content-length"]) == len(body["body"])
    assert json.loads(body["body"]) == problem.document()


LONG = "x" * 8001


@pytest.mark.parametrize(
    ("body", "field", "detail"),
    [
        ({"content": LONG}, "content", "'content' must be at most 8000 characters."),
        ({"content": "  \n "}, "content", "'content' must not be blank."),
        ({"content": ""}, "content", "'content' must not be empty."),
        (
            {"content": "ok", "tags": ["a\x00"]},
            "tags.0",
            "'tags.0' must not contain NUL characters.",
        ),
        ({"content": "ok", "tags": ["t"] * 33}, "tags", "'tags' must have at most 32 items."),
        ({"content": 5}, "content", "'content' must be a string."),
        (
            {"content": "ok", "contexts": [{"snippet": "s", "origin": "elsewhere"}]},
            "contexts.0.origin",
            "'contexts.0.origin' must be one of: 'active_conversation', "
            "'searched_conversation', null.",
        ),
        # An unknown key is named with the one the caller most likely meant.
        ({"text": "Likes tea"}, "text", "'text' is not a known field; did you mean 'content'?"),
        (
            {"memory": "Likes tea"},
            "memory",
            "'memory' is not a known field; did you mean 'content'?",
        ),
        (
            {"content": "ok", "tag": ["a"]},
            "tag",
            "'tag' is not a known field; did you mean 'tags'?",
        ),
        ({"content": "ok", "colour": "red"}, "colour", None),
        ({"content": "ok", "contexts": [{"snippet": "s", "url": "u"}]}, "contexts.0.url", None),
        ({"content": "ok", "contexts": [{"origin": None}]}, "contexts.0.snippet", None),
        ({"tags": ["a"]}, "content", "'content' is required."),
        (["x"], None, "The body must be an object."),
    ],
)
def test_body_errors_name_the_field_the_validator_found(service, body, field, detail):
    r = service.client.post("/v1/memory", json=body, headers=service.auth())
    doc = assert_problem(r, 400, "invalid_request")
    assert doc.get("field") == field
    if detail is not None:
        assert doc["detail"] == detail
    assert LONG[:100] not in r.text  # the value sent is never echoed back
    # Plain words, never a raw regular expression or a validator's keyword.
    assert "^[" not in doc["detail"] and "breaks" not in doc["detail"]


@pytest.mark.parametrize(
    ("query", "field", "detail"),
    [
        ("q=x&limit=51", "limit", "'limit' must be at most 50."),
        ("q=x&limit=0", "limit", "'limit' must be at least 1."),
        ("q=%20%20", "q", "'q' must not be blank."),
        ("limit=5", "q", "'q' is required (a query parameter)."),
        ("query=tea", "query", "'query' is not a known query parameter; did you mean 'q'?"),
        ("q=x&page=2", "page", None),
    ],
)
def test_parameter_errors_name_the_parameter(service, query, field, detail):
    r = service.client.get(f"/v1/memory/search?{query}", headers=service.auth())
    doc = assert_problem(r, 400, "invalid_request", field)
    if detail is not None:
        assert doc["detail"] == detail


def test_unknown_route_and_wrong_method_are_problems(service):
    headers = service.auth()
    assert_problem(service.client.get("/v2/memory", headers=headers), 404, "not_found")
    assert_problem(service.client.put("/v1/memory", headers=headers), 405, "method_not_allowed")
    assert_problem(
        service.client.put("/v1/memory/mem_x", headers=headers), 405, "method_not_allowed"
    )


def test_unexpected_error_is_a_logged_generic_500_that_leaks_nothing(service, caplog):
    headers = service.auth()

    def explode(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("INSERT INTO MEMORY_CONTEXT"):
            raise RuntimeError("boom: secret internal detail")

    before = row_counts(service.engine)
    # A save runs on the batch pool (MariaDB), which is the same engine on SQLite.
    engine = service.db.saves
    sa.event.listen(engine, "before_cursor_execute", explode)
    try:
        with caplog.at_level(logging.ERROR, logger="memory_bank"):
            r = service.client.post(
                "/v1/memory",
                json={"content": "half written?", "contexts": [{"snippet": "s"}]},
                headers=headers,
            )
    finally:
        sa.event.remove(engine, "before_cursor_execute", explode)
    doc = assert_problem(r, 500, "internal_error")
    assert "boom" not in r.text and "secret" not in r.text
    assert doc["detail"] == "The server hit an unexpected error."
    # The log says what failed and where (type and frames), not the message: a message can
    # carry what the user sent.
    assert "builtins.RuntimeError" in caplog.text and "in explode" in caplog.text
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
