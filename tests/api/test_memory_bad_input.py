"""Bad input: each a clear 4xx problem that changes nothing, never a 500.

Cases are looped inside a test (one service per engine) rather than parametrized, to keep
the suite quick; each assertion names its case.
"""

from __future__ import annotations

import base64
import json

import pytest

from contract import assert_problem, row_counts
from memory_bank.ids import new_id

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


def _unchanged(service, before, case):
    assert row_counts(service.engine) == before, case


def test_malformed_json_is_400(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    for body in (b"{bad", b'{"content": "x",}', b"", b"\xff\xfe\x00", b'{"content": "x"} tail'):
        r = _post_raw(service, headers, body, "application/json")
        assert_problem(r, 400, "invalid_request")
        _unchanged(service, before, body)


def test_wrong_or_missing_content_type_is_415(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    body = json.dumps({"content": "x"}).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "text/json", None):
        r = _post_raw(service, headers, body, content_type)
        assert_problem(r, 415, "unsupported_media_type")
        _unchanged(service, before, content_type)


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


def test_nul_bytes_are_400(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    cases = [
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
    ]
    for body, field in cases:
        r = service.client.post("/v1/memory", json=body, headers=headers)
        doc = assert_problem(r, 400, "invalid_request", field)
        assert "NUL" in doc["detail"], field
        _unchanged(service, before, field)
    r = service.client.get("/v1/memory/search", params={"q": "acme\x00"}, headers=headers)
    assert_problem(r, 400, "invalid_request", "q")


def test_unknown_body_fields_are_400(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    cases = [
        ({"content": "x", "colour": "red"}, "colour"),
        ({"content": "x", "contexts": [{"snippet": "s", "url": "u"}]}, "contexts.0.url"),
        ({"content": "x", "id": "mem_forced"}, "id"),
        ({"content": "x", "user_id": "bob"}, "user_id"),
    ]
    for body, field in cases:
        r = service.client.post("/v1/memory", json=body, headers=headers)
        assert_problem(r, 400, "invalid_request", field)
        _unchanged(service, before, field)


def test_wrong_json_types_are_400(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    bodies = [
        ["content"],
        "content",
        42,
        None,
        {"content": 5},
        {"content": "x", "tags": "a"},
        {"content": "x", "contexts": [{"snippet": "s", "origin": "made_up"}]},
    ]
    for body in bodies:
        r = _post_raw(service, headers, json.dumps(body).encode(), "application/json")
        assert_problem(r, 400, "invalid_request")
        _unchanged(service, before, body)


def test_unknown_query_params_are_400(seeded):
    service, headers = seeded
    for path, params, field in (
        ("/v1/memory", {"page": "2"}, "page"),
        ("/v1/memory/search", {"q": "acme", "user_id": "bob"}, "user_id"),
    ):
        r = service.client.get(path, params=params, headers=headers)
        assert_problem(r, 400, "invalid_request", field)


def test_fulltext_operators_in_query_are_plain_text(seeded):
    service, headers = seeded
    for op in OPERATORS:
        for q in (op, f"{op}acme", f"acme {op}vendor{op}", op * 20):
            r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
            assert r.status_code == 200, (q, r.text)
            found = [m["content"] for m in r.json()["results"]]
            assert found == (["Acme is our preferred vendor"] if "acme" in q else []), q
    q = '+acme -"vendor" <pre>ferred (our) ~x* @home'
    r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
    assert [m["content"] for m in r.json()["results"]] == ["Acme is our preferred vendor"]


def test_stopword_or_punctuation_query_is_empty_200(seeded):
    service, headers = seeded
    for q in ("the of and a", "is it?", "?!...", "---", "((()))", "🙂", "。、"):
        r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
        assert r.status_code == 200, (q, r.text)
        assert r.json() == {"results": [], "mode": "lexical"}, q


def test_forged_cursor_is_400(seeded):
    service, headers = seeded
    # Malformed (the spec's pattern refuses them) or well-formed but never issued: the same
    # problem code either way.
    for cursor in ("abc.def", "!!!", "bWVtXzAx", "bWVtXzAx.AAAAAAAAAAAAAAAA", ".", "é.é", "0"):
        r = service.client.get("/v1/memory", params={"cursor": cursor}, headers=headers)
        assert_problem(r, 400, "invalid_cursor", "cursor")
    r = service.client.get("/v1/memory", params={"cursor": "x" * 257}, headers=headers)
    assert_problem(r, 400, "invalid_cursor", "cursor")


def test_cursor_edited_or_from_another_user_is_400(seeded):
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
    r = service.client.get("/v1/memory", params={"cursor": cursor}, headers=service.auth("bob"))
    assert_problem(r, 400, "invalid_cursor", "cursor")
    # The genuine cursor still works for its owner.
    r = service.client.get("/v1/memory", params={"cursor": cursor}, headers=headers)
    assert r.status_code == 200


def test_unknown_ids_are_404_and_delete_changes_nothing(seeded):
    service, headers = seeded
    before = row_counts(service.engine)
    # Not an id at all: the spec's pattern refuses it before anything is routed or read.
    for mid in ("nope", "mem_", "MEM_01ABC", "m" * 64, "mem_%00", "m" * 65, "mem_" + "z" * 26):
        for method in ("get", "delete"):
            r = getattr(service.client, method)(f"/v1/memory/{mid}", headers=headers)
            assert_problem(r, 400, "invalid_request", "id")
        _unchanged(service, before, mid)
    # An id of the right form that no one holds: 404, naming the field.
    for mid in ("mem_" + "Z" * 26, new_id("mem")):
        for method in ("get", "delete"):
            r = getattr(service.client, method)(f"/v1/memory/{mid}", headers=headers)
            assert_problem(r, 404, "memory_not_found", "id")
        _unchanged(service, before, mid)


def test_media_types_compare_case_insensitively(seeded):
    service, headers = seeded
    for content_type in ("Application/JSON", "APPLICATION/json; Charset=UTF-8"):
        r = _post_raw(service, headers, b'{"content": "any case"}', content_type)
        assert r.status_code == 201, (content_type, r.text)
    memory_id = r.json()["memory"]["id"]
    r = service.client.patch(
        f"/v1/memory/{memory_id}",
        content=b'{"content": "patched in any case"}',
        headers={**headers, "Content-Type": "Application/Merge-Patch+JSON"},
    )
    assert r.status_code == 200 and r.json()["memory"]["content"] == "patched in any case", r.text


def test_a_cursor_is_bound_to_its_listing(seeded):
    service, headers = seeded
    memory_id = service.client.get("/v1/memory", headers=headers).json()["memories"][0]["id"]
    for i in range(2):
        service.client.post("/v1/memory", json={"content": f"second {i}"}, headers=headers)
        r = service.client.patch(
            f"/v1/memory/{memory_id}",
            json={"content": f"Acme wording {i}"},
            headers={**headers, "Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text
    revisions_url = f"/v1/memory/{memory_id}/revisions"
    from_revisions = service.client.get(revisions_url, params={"limit": 1}, headers=headers)
    from_memories = service.client.get("/v1/memory", params={"limit": 1}, headers=headers)
    issued = {
        revisions_url: from_revisions.json()["next_cursor"],
        "/v1/memory": from_memories.json()["next_cursor"],
    }
    assert all(issued.values()), issued
    # Each listing takes its own cursor, and refuses every other listing's.
    headers = service.auth(scopes=("mcp:read", "mcp:write", "memory:review"))
    for url in (revisions_url, "/v1/memory", "/v1/memory/drafts"):
        for origin, issued_cursor in issued.items():
            r = service.client.get(url, params={"cursor": issued_cursor}, headers=headers)
            if origin == url:
                assert r.status_code == 200, (url, r.text)
            else:
                assert_problem(r, 400, "invalid_cursor", "cursor")


def test_a_malformed_id_says_what_the_format_is(seeded):
    service, headers = seeded
    r = service.client.get("/v1/memory/nope", headers=headers)
    detail = assert_problem(r, 400, "invalid_request", "id")["detail"]
    assert "mem_ followed by 26 characters" in detail, detail
    # A draft id where a memory id belongs names the operation that reads drafts.
    draft_id = new_id("mdr")
    r = service.client.get(f"/v1/memory/{draft_id}", headers=headers)
    detail = assert_problem(r, 400, "invalid_request", "id")["detail"]
    assert "getMemoryDraftById" in detail and draft_id not in detail, detail
    review = service.auth(scopes=("mcp:read", "memory:review"))
    r = service.client.get(f"/v1/memory/drafts/{new_id('mem')}", headers=review)
    detail = assert_problem(r, 400, "invalid_request", "id")["detail"]
    assert "mdr_ followed by 26 characters" in detail and "getMemoryById" in detail, detail
