"""Every documented limit at its bound (accepted) and one past it (400, nothing saved)."""

from __future__ import annotations

import pytest

from contract import assert_problem, row_counts

WIDE = "🍣"  # four bytes in UTF-8: limits count characters, not bytes.


def _post(service, headers, body):
    return service.client.post("/v1/memory", json=body, headers=headers)


def _accepted(service, headers, body):
    r = _post(service, headers, body)
    assert r.status_code == 201, r.text
    mid = r.json()["memory"]["id"]
    got = service.client.get(f"/v1/memory/{mid}", headers=headers)
    assert got.status_code == 200
    return got.json()["memory"]


def _rejected(service, headers, body, field):
    before = row_counts(service.engine)
    assert_problem(_post(service, headers, body), 400, "invalid_request", field)
    assert row_counts(service.engine) == before


def test_content_at_8000_characters_is_kept_whole(service):
    headers = service.auth()
    text = WIDE * 8000
    assert _accepted(service, headers, {"content": text})["content"] == text


def test_content_of_8001_characters_is_rejected(service):
    headers = service.auth()
    _rejected(service, headers, {"content": "a" * 8001}, "content")


def test_content_is_trimmed_and_must_not_be_blank(service):
    headers = service.auth()
    assert _accepted(service, headers, {"content": "\n\t  x  \n"})["content"] == "x"
    _rejected(service, headers, {"content": " \n\t "}, "content")
    _rejected(service, headers, {"content": ""}, "content")


def test_content_limit_applies_to_the_text_as_sent(service):
    # The schema caps the raw string (what an agent reads in the spec); trimming comes after.
    headers = service.auth()
    _rejected(service, headers, {"content": " " + "a" * 8000}, "content")


def test_32_tags_accepted_33_rejected(service):
    headers = service.auth()
    tags = [f"t{i}" for i in range(32)]
    assert _accepted(service, headers, {"content": "tags", "tags": tags})["tags"] == tags
    _rejected(service, headers, {"content": "tags", "tags": [*tags, "t32"]}, "tags")


def test_tag_of_64_characters_accepted_65_rejected(service):
    headers = service.auth()
    tag = WIDE * 64
    assert _accepted(service, headers, {"content": "long tag", "tags": [tag]})["tags"] == [tag]
    _rejected(service, headers, {"content": "long tag", "tags": ["ok", "t" * 65]}, "tags.1")


def test_empty_or_blank_tag_rejected(service):
    headers = service.auth()
    _rejected(service, headers, {"content": "x", "tags": [""]}, "tags.0")
    _rejected(service, headers, {"content": "x", "tags": ["  "]}, "tags.0")


def test_duplicate_tags_are_kept_once(service):
    headers = service.auth()
    saved = _accepted(service, headers, {"content": "dup", "tags": ["a", " a ", "b", "a"]})
    assert saved["tags"] == ["a", "b"]


def test_16_contexts_accepted_17_rejected(service):
    headers = service.auth()
    contexts = [{"snippet": f"s{i}"} for i in range(16)]
    saved = _accepted(service, headers, {"content": "ctx", "contexts": contexts})
    assert [c["snippet"] for c in saved["contexts"]] == [f"s{i}" for i in range(16)]
    _rejected(
        service, headers, {"content": "ctx", "contexts": [*contexts, {"snippet": "x"}]}, "contexts"
    )


def test_snippet_of_4000_characters_accepted_4001_rejected(service):
    headers = service.auth()
    snippet = WIDE * 4000
    saved = _accepted(service, headers, {"content": "snip", "contexts": [{"snippet": snippet}]})
    assert saved["contexts"][0]["snippet"] == snippet
    _rejected(
        service,
        headers,
        {"content": "snip", "contexts": [{"snippet": "s" * 4001}]},
        "contexts.0.snippet",
    )


@pytest.mark.parametrize("name", ["conversation_id", "message_id"])
def test_citation_ids_of_128_characters_accepted_129_rejected(service, name):
    headers = service.auth()
    ref = WIDE * 128
    saved = _accepted(
        service, headers, {"content": "cite", "contexts": [{"snippet": "s", name: ref}]}
    )
    assert saved["contexts"][0]["citation"][name] == ref
    _rejected(
        service,
        headers,
        {"content": "cite", "contexts": [{"snippet": "s", name: "c" * 129}]},
        f"contexts.0.{name}",
    )


def test_query_of_512_characters_accepted_513_rejected(service):
    headers = service.auth()
    _accepted(service, headers, {"content": "needle in the haystack"})
    q = ("needle " * 80)[:512]
    r = service.client.get("/v1/memory/search", params={"q": q}, headers=headers)
    assert r.status_code == 200 and len(r.json()["results"]) == 1
    r = service.client.get("/v1/memory/search", params={"q": "n" * 513}, headers=headers)
    assert_problem(r, 400, "invalid_request", "q")


@pytest.mark.parametrize("q", ["", "   ", "\t\n"])
def test_empty_or_blank_query_rejected(service, q):
    r = service.client.get("/v1/memory/search", params={"q": q}, headers=service.auth())
    assert_problem(r, 400, "invalid_request", "q")


def test_missing_query_rejected(service):
    r = service.client.get("/v1/memory/search", headers=service.auth())
    assert_problem(r, 400, "invalid_request", "q")


def test_search_limit_bounds(service):
    headers = service.auth()
    for i in range(51):
        _post(service, headers, {"content": f"apple number {i}"})
    for limit, expected in ((1, 1), (50, 50)):
        r = service.client.get(
            "/v1/memory/search", params={"q": "apple", "limit": limit}, headers=headers
        )
        assert r.status_code == 200 and len(r.json()["results"]) == expected
    r = service.client.get("/v1/memory/search", params={"q": "apple"}, headers=headers)
    assert len(r.json()["results"]) == 20  # the default
    for bad in (0, 51, -1, "ten", "1.5", ""):
        r = service.client.get(
            "/v1/memory/search", params={"q": "apple", "limit": bad}, headers=headers
        )
        assert_problem(r, 400, "invalid_request", "limit")


def test_list_limit_bounds(service):
    headers = service.auth()
    for i in range(101):
        _post(service, headers, {"content": f"memory {i}"})
    for limit, expected in ((1, 1), (100, 100)):
        r = service.client.get("/v1/memory", params={"limit": limit}, headers=headers)
        assert r.status_code == 200 and len(r.json()["memories"]) == expected
        assert r.json()["next_cursor"] is not None
    r = service.client.get("/v1/memory", headers=headers)
    assert len(r.json()["memories"]) == 20  # the default
    for bad in (0, 101, -5, "all", "2.0", ""):
        r = service.client.get("/v1/memory", params={"limit": bad}, headers=headers)
        assert_problem(r, 400, "invalid_request", "limit")
