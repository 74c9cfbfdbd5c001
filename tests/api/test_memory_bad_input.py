"""Bad input: each a clear 4xx problem that changes nothing, never a 500."""

from __future__ import annotations

import base64
import json

import pytest

from contract import assert_problem, row_counts

OPERATORS = ["+", "-", "<", ">", "(", ")", "~", "*", '"', "@"]


@pytest.fixture
def seeded(service):
    """The service with one saved memory for alice, and alice's headers."""
    headers = service.auth()
    r = service.client.post(
        "/v1/memory",
        json={"content": "Acme is our preferred vendor", "tags": ["vendors"]},
        headers=headers,
    )
    assert r.status_code == 201
    return service, headers


def _post_raw(service, headers, body: bytes, content_type: str | None):
    extra = {"Content-Type": content_type} if content_type else {}
    return service.client.post("/v1/memory", content=body, headers={**headers, **extra})


@pytest.mark.parametrize(
    "body",
    [b"{bad", b'{"content": "x",}', b"", b"\xff\xfe\x00", b'{"content": "x"} trailing'],
    ids=["unquoted", "trailing-comma", "empty", "not-utf8", "extra-data"],
)
def test_malformed_json_is_400(seeded, body):
    service, headers = seeded
    before = row_counts(service.engine)
    r = _post_raw(service, headers, body, "application/json")
    assert_problem(r, 400, "invalid_request")
    assert row_counts(service.engine) == before


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_or_missing_content_type_is_415(seeded, content_type):
    service, headers = seeded
    before = row_counts(service.engine)
    r = _post_raw(service, headers, json.dumps({"content": "x"}).encode(), content_type)
    assert_problem(r, 415, "unsupported_media_type")
    assert row_counts(service.engine) == before


def test_json_with_charset_is_fine(seeded):
    service, headers = seeded
    r = _post_raw(service, headers, b'{"content": "charset ok"}', "application/json; charset=utf-8")
    assert r.status_code == 201


def test_body_over_the_cap_is_413(make_service):
    service = make_service(max_body_bytes=2048)
    headers = service.auth()
    before = row_counts(service.engine)
    r = service.client.post("/v1/memory", json={"content": "x" * 4000}, headers=headers)
    assert_problem(r, 413, "payload_too_large")
    assert row_counts(service.engine) == before
    # Just under the cap is still fine.
    r = service.client.post("/v1/memory", json={"content": "x" * 1900}, headers=headers)
    assert r.status_code == 201


def test_default_cap_is_one_mebibyte(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    padding = " " * (1024 * 1024)
    r = _post_raw(
        service, headers, ('{"content": "x"' + padding + "}").encode(), "application/json"
    )
    assert_problem(r, 413, "payload_too_large")
    assert row_counts(service.engine) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "a\x00b"}, "content"),
        ({"content": "ok", "tags": ["a\x00"]}, "tags.0"),
        ({"content": "ok", "contexts": [{"snippet": "\x00"}]}, "contexts.0.snippet"),
        (
            {"content": "ok", "contexts": [{"snippet": "s", "conversation_id": "c\x00"}]},
            "contexts.0.conversation_id",
        ),
        (
            {"content": "ok", "contexts": [{"snippet": "s", "message_id": "\x00m"}]},
            "contexts.0.message_id",
        ),
    ],
)
def test_nul_bytes_in_a_body_are_400(seeded, body, field):
    service, headers = seeded
    before = row_counts(service.engine)
    r = service.client.post("/v1/memory", json=body, headers=headers)
    doc = assert_problem(r, 400, "invalid_request", field)
    assert "NUL" in doc["detail"]
    assert row_counts(service.engine) == before


def test_nul_byte_in_query_is_400(seeded):
    service, headers = seeded
    r = service.client.get("/v1/memory/search", params={"q": "acme\x00"}, headers=headers)
    assert_problem(r, 400, "invalid_request", "q")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "colour": "red"}, "colour"),
        ({"content": "x", "contexts": [{"snippet": "s", "url": "u"}]}, "contexts.0.url"),
        ({"content": "x", "id": "mem_forced"}, "id"),
    ],
)
def test_unknown_body_fields_are_400(seeded, body, field):
    service, headers = seeded
    before = row_counts(service.engine)
    r = service.client.post("/v1/memory", json=body, headers=headers)
    assert_problem(r, 400, "invalid_request", field)
    assert row_counts(service.engine) == before


@pytest.mark.parametrize(
    "body",
    [["content"], "content", 42, None, {"content": 5}, {"content": "x", "tags": "a"}],
    ids=["array", "string", "number", "null", "content-number", "tags-string"],
)
def test_wrong_json_types_are_400(seeded, body):
    service, headers = seeded
    before = row_counts(service.engine)
    r = _post_raw(service, headers, json.dumps(body).encode(), "application/json")
    assert_problem(r, 400, "invalid_request")
    assert row_counts(service.engine) == before


def test_bad_origin_is_400(seeded):
    service, headers = seeded
    r = service.client.post(
        "/v1/memory",
        json={"content": "x", "contexts": [{"snippet": "s", "origin": "made_up"}]},
        headers=headers,
    )
    assert_problem(r, 400, "invalid_request", "contexts.0.origin")


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/memory", {"page": "2"}),
        ("/v1/memory/search", {"q": "acme", "user_id": "bob"}),
    ],
)
def test_unknown_query_params_are_400(seeded, path, params):
    service, headers = seeded
    r = service.client.get(path, params=params, headers=headers)
    assert_problem(r, 400, "invalid_request", next(k for k in params if k not in {"q"}))


@pytest.mark.parametrize("op", OPERATORS)
def test_fulltext_operators_in_query_are_plain_text(seeded, op):
    service, headers = seeded
    for q in (op, f"{op}acme", f"acme {op}vendor{op}", op * 20):
        r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
        assert r.status_code == 200, (q, r.text)
        ids = [m["content"] for m in r.json()["results"]]
        assert ids == (["Acme is our preferred vendor"] if "acme" in q else [])


def test_all_operators_together(seeded):
    service, headers = seeded
    q = '+acme -"vendor" <pre>ferred (our) ~x* @home'
    r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
    assert r.status_code == 200
    assert [m["content"] for m in r.json()["results"]] == ["Acme is our preferred vendor"]


@pytest.mark.parametrize("q", ["the of and a", "is it?", "?!...", "---", "((()))", "🙂", "。、"])
def test_stopword_or_punctuation_query_is_empty_200(seeded, q):
    service, headers = seeded
    r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json() == {"results": []}


@pytest.mark.parametrize(
    "cursor",
    ["abc.def", "!!!", "bWVtXzAx", "bWVtXzAx.AAAAAAAAAAAAAAAA", ".", "x" * 257],
    ids=["garbage", "bad-chars", "unsigned", "bad-mac", "dot", "too-long"],
)
def test_forged_cursor_is_400(seeded, cursor):
    service, headers = seeded
    r = service.client.get("/v1/memory", params={"cursor": cursor}, headers=headers)
    code = "invalid_request" if len(cursor) > 256 else "invalid_cursor"
    assert_problem(r, 400, code, "cursor")


def test_cursor_edited_to_resume_elsewhere_is_400(seeded):
    service, headers = seeded
    for i in range(3):
        service.client.post("/v1/memory", json={"content": f"m{i}"}, headers=headers)
    cursor = service.client.get("/v1/memory", params={"limit": 1}, headers=headers).json()[
        "next_cursor"
    ]
    mac = cursor.partition(".")[2]
    forged = base64.urlsafe_b64encode(b"mem_ZZZZZZZZZZZZZZZZZZZZZZZZZZ").decode().rstrip("=")
    r = service.client.get("/v1/memory", params={"cursor": f"{forged}.{mac}"}, headers=headers)
    assert_problem(r, 400, "invalid_cursor", "cursor")


def test_another_users_cursor_is_400(seeded):
    service, headers = seeded
    for i in range(3):
        service.client.post("/v1/memory", json={"content": f"m{i}"}, headers=headers)
    cursor = service.client.get("/v1/memory", params={"limit": 1}, headers=headers).json()[
        "next_cursor"
    ]
    r = service.client.get("/v1/memory", params={"cursor": cursor}, headers=service.auth("bob"))
    assert_problem(r, 400, "invalid_cursor", "cursor")


@pytest.mark.parametrize("mid", ["nope", "mem_", "mem_" + "Z" * 26, "MEM_01ABC", "m" * 64])
def test_unknown_ids_are_404_and_delete_changes_nothing(seeded, mid):
    service, headers = seeded
    before = row_counts(service.engine)
    assert_problem(
        service.client.get(f"/v1/memory/{mid}", headers=headers), 404, "memory_not_found"
    )
    assert_problem(
        service.client.delete(f"/v1/memory/{mid}", headers=headers), 404, "memory_not_found"
    )
    assert row_counts(service.engine) == before


def test_overlong_id_is_400(seeded):
    service, headers = seeded
    r = service.client.get("/v1/memory/" + "m" * 65, headers=headers)
    assert_problem(r, 400, "invalid_request", "id")
