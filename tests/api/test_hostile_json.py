"""Hostile JSON: deep nesting, endless integers and lone UTF-16 surrogates are each a 400
naming the field, change nothing, and never bring what was sent into a log line."""

from __future__ import annotations

import json

from contract import assert_problem, captured_logs, row_counts

MARK = "zqhostilemark"
DEEP = "[" * 3_000 + "]" * 3_000
LONG_INT = "7" * 5_000


def _memory(**fields: str) -> str:
    """A save body with these fields as raw JSON text."""
    parts = {"content": json.dumps(f"{MARK} content"), **fields}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in parts.items()) + "}"


CASES = [
    # (method, path, raw body, field)
    ("POST", "/v1/memory", _memory(content=DEEP), "content"),
    ("POST", "/v1/memory", _memory(tags=f"[{DEEP}]"), "tags"),
    ("POST", "/v1/memory", _memory(contexts='[{"snippet": ' + DEEP + "}]"), "contexts.0.snippet"),
    ("POST", "/v1/memory", DEEP, None),
    ("POST", "/v1/memory", '{"a":' * 3_000 + "1" + "}" * 3_000, "a." * 31 + "a"),
    ("POST", "/v1/memory", _memory(tags=f"[{LONG_INT}]"), "tags.0"),
    ("POST", "/v1/memory", _memory(content=LONG_INT), "content"),
    ("POST", "/v1/memory", _memory(content=f'"{MARK} \\ud800 rest"'), "content"),
    ("POST", "/v1/memory", _memory(content=f'"{MARK} \\udfff"'), "content"),
    ("POST", "/v1/memory", _memory(tags=f'["{MARK}\\ud800"]'), "tags.0"),
    (
        "POST",
        "/v1/memory",
        _memory(contexts=f'[{{"snippet": "{MARK} \\udc00"}}]'),
        "contexts.0.snippet",
    ),
    (
        "POST",
        "/v1/memory",
        _memory(contexts=f'[{{"snippet": "s", "message_id": "{MARK}\\ud800"}}]'),
        "contexts.0.message_id",
    ),
    ("POST", "/v1/memory/drafts/{draft}/confirm", f'{{"content": "{MARK}\\ud800"}}', "content"),
    ("POST", "/v1/memory/drafts/{draft}/confirm", f'{{"tags": ["{MARK}", "\\udbff"]}}', "tags.1"),
    ("POST", "/v1/panel/session", f'{{"code": "{MARK}\\ud800.x"}}', "code"),
    ("PUT", "/v1/memory/settings", '{"review_required": ' + DEEP + "}", "review_required"),
    # Edits are sent as application/merge-patch+json: the same parser and checks.
    ("PATCH", "/v1/memory/{memory}", f'{{"content": "{MARK}\\ud800"}}', "content"),
    ("PATCH", "/v1/memory/{memory}", '{"tags": [' + DEEP + "]}", "tags"),
    ("PATCH", "/v1/memory/{memory}", '{"content": ' + LONG_INT + "}", "content"),
    ("PATCH", "/v1/memory/{memory}", DEEP, None),
]
MEDIA = {"PATCH": "application/merge-patch+json"}


def test_hostile_json_is_a_400_that_names_the_field(make_service):
    service = make_service(auth_failures_per_minute=0)
    owner = service.auth("alice", scopes=("mcp:read", "mcp:write", "memory:review"))
    agent = service.auth("alice")
    assert service.client.put(
        "/v1/memory/settings", json={"review_required": True}, headers=owner
    ).json()["review_required"]
    draft = service.client.post("/v1/memory", json={"content": "waiting"}, headers=agent)
    assert draft.status_code == 202, draft.text
    draft_id = draft.json()["draft"]["id"]
    kept = service.client.post("/v1/memory", json={"content": "kept as is"}, headers=owner)
    memory_id = kept.json()["memory"]["id"]
    before = row_counts(service.engine)
    with captured_logs() as logs:
        for method, path, raw, field in CASES:
            r = service.client.request(
                method,
                path.format(draft=draft_id, memory=memory_id),
                content=raw.encode(),
                headers={**owner, "Content-Type": MEDIA.get(method, "application/json")},
            )
            doc = assert_problem(r, 400, "invalid_request", field)
            assert doc.get("field") == field, (path, raw[:60], doc)
            assert MARK not in r.text, r.text
            assert row_counts(service.engine) == before, (path, raw[:60])
        # A valid pair of surrogates is one character: accepted as ever.
        ok = service.client.post(
            "/v1/memory",
            content=_memory(tags='["\\ud83d\\ude00"]').encode(),
            headers={**owner, "Content-Type": "application/json"},
        )
        assert ok.status_code == 201 and ok.json()["memory"]["tags"] == ["😀"], ok.text
    logs.assert_never_shows(MARK)
    assert logs.lines, "nothing was logged at all"


def test_a_path_integer_past_its_maximum_routes_nowhere(service):
    owner = service.auth("alice")
    memory_id = service.client.post("/v1/memory", json={"content": "x"}, headers=owner).json()[
        "memory"
    ]["id"]
    before = row_counts(service.engine)
    with captured_logs() as logs:
        for number in ("9" * 4301, "9" * 40, "2147483648", "+" + "1" * 5000, "-" + "9" * 4400):
            for headers in ({}, owner):  # without a key as with one: never a 500
                r = service.client.post(
                    f"/v1/memory/{memory_id}/revisions/{number}/restore", headers=headers
                )
                # The same 404 as `-1` or `1.5` (no route), key or not: it names no one's data.
                assert r.status_code == 404, (number[:12], r.text)
                if number.isdigit():
                    assert_problem(r, 404, "not_found", "revision")
                assert number not in r.text
    assert row_counts(service.engine) == before
    assert "Traceback" not in "\n".join(logs.lines)
