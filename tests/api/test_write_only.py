"""A key with mcp:write but not mcp:read writes without reading (docs/acl.md), on both engines:
each road that once answered with stored content (an empty edit, a restore, an edit's draft,
a tool call, an org memory) answers with a receipt; and a tag with a comma is refused where a
tag is set, while one stored before still lists, shows and can be renamed."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from starlette.responses import Response, StreamingResponse

from contract import assert_problem, row_counts
from mcp import Client, StdioServerParameters
from memory_bank.http import withhold
from memory_bank.search.document import postings_of
from memory_bank.store import memory_writes
from memory_bank.store.owners import Owner
from memory_bank.store.schema import metadata

MARKER = "zqstoredmarker"
WRITE = ("mcp:write",)
RECEIPT = {"id", "source", "scope", "created_at", "updated_at", "revision"}
DRAFT_RECEIPT = {"id", "status", "source", "scope", "created_at", "expires_at"}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
    "Mcp-Method": "tools/call",
}


def _stored(service: Any, headers: dict[str, str], **extra: Any) -> dict[str, Any]:
    """A memory with the marker in its content, tags and context, saved by a reading key."""
    body = {
        "content": f"{MARKER} content",
        "tags": [f"{MARKER}tag"],
        "contexts": [{"snippet": f"{MARKER} snippet"}],
        **extra,
    }
    r = service.client.post("/v1/memory", json=body, headers=headers)
    assert r.status_code == 201, r.text
    memory: dict[str, Any] = r.json()["memory"]
    return memory


def _assert_receipt(memory: dict[str, Any], extra: set[str] = frozenset()) -> None:
    """Only the fields a receipt carries: no content, tags or contexts."""
    assert set(memory) == RECEIPT | extra, memory


def test_an_empty_edit_answers_a_receipt_and_changes_nothing(service):
    kept = _stored(service, service.auth())
    writer = service.auth(scopes=WRITE)
    r = service.client.patch(f"/v1/memory/{kept['id']}", json={}, headers=writer)
    assert r.status_code == 200, r.text
    assert MARKER not in r.text
    _assert_receipt(r.json()["memory"])
    assert r.json()["memory"]["id"] == kept["id"] and r.headers["etag"] == '"1"'
    # An edit that sends new tags is answered without the stored content either.
    r = service.client.patch(f"/v1/memory/{kept['id']}", json={"tags": ["probe"]}, headers=writer)
    assert r.status_code == 200 and MARKER not in r.text, r.text
    _assert_receipt(r.json()["memory"])
    assert r.json()["memory"]["revision"] == 2
    # The same key cannot read it back.
    assert_problem(
        service.client.get(f"/v1/memory/{kept['id']}", headers=writer), 403, "insufficient_scope"
    )


def test_a_restore_answers_a_receipt(service):
    reader = service.auth()
    kept = _stored(service, reader)
    edited = service.client.patch(
        f"/v1/memory/{kept['id']}", json={"content": "reworded"}, headers=reader
    )
    assert edited.status_code == 200
    writer = service.auth(scopes=WRITE)
    r = service.client.post(f"/v1/memory/{kept['id']}/revisions/1/restore", headers=writer)
    assert r.status_code == 200, r.text
    assert MARKER not in r.text
    _assert_receipt(r.json()["memory"])
    assert r.json()["memory"]["revision"] == 3
    back = service.client.get(f"/v1/memory/{kept['id']}", headers=reader).json()["memory"]
    assert back["content"] == f"{MARKER} content" and back["revision"] == 3


def test_an_edit_for_review_answers_a_draft_receipt(make_service):
    service = make_service(review_required=True)
    # A reviewer's key saves without review; the agent's write-only key proposes an edit.
    reviewer = service.auth(scopes=("mcp:read", "mcp:write", "memory:review"))
    kept = _stored(service, reviewer)
    writer = service.auth(scopes=WRITE)
    r = service.client.patch(f"/v1/memory/{kept['id']}", json={"tags": ["probe"]}, headers=writer)
    assert r.status_code == 202, r.text
    assert MARKER not in r.text
    draft = r.json()["draft"]
    assert set(draft) == DRAFT_RECEIPT | {"memory_id", "base_revision"}, draft
    assert draft["memory_id"] == kept["id"]
    # The review queue is the reviewer's to read: there the draft shows what it would store.
    queue = service.client.get("/v1/memory/drafts", headers=reviewer).json()["drafts"]
    assert [d["content"] for d in queue] == [f"{MARKER} content"]
    assert queue[0]["tags"] == ["probe"]


def test_a_save_answers_a_receipt_and_skip_is_refused_before_review(make_service):
    service = make_service(review_required=True)
    reviewer = service.auth(scopes=("mcp:read", "mcp:write", "memory:review"))
    _stored(service, reviewer)
    writer = service.auth(scopes=WRITE)
    before = row_counts(service.engine)
    # dedupe "skip" answers with the memory kept: a read, 403, and no draft is stored.
    body = {"content": f"{MARKER} content", "dedupe": "skip"}
    r = service.client.post("/v1/memory", json=body, headers=writer)
    problem = assert_problem(r, 403, "insufficient_scope")
    assert problem["required_scope"] == "mcp:read" and MARKER not in r.text
    assert row_counts(service.engine) == before
    # A plain save waits for review; its answer is a receipt of the draft.
    r = service.client.post("/v1/memory", json={"content": "new fact"}, headers=writer)
    assert r.status_code == 202, r.text
    assert set(r.json()["draft"]) == DRAFT_RECEIPT, r.json()


def test_a_save_without_review_answers_a_receipt_with_ids_of_similar(service):
    reader = service.auth()
    kept = _stored(service, reader)
    writer = service.auth(scopes=WRITE)
    r = service.client.post(
        "/v1/memory", json={"content": f"{MARKER} content again"}, headers=writer
    )
    assert r.status_code == 201, r.text
    assert MARKER not in r.text
    _assert_receipt(r.json()["memory"])
    assert [set(s) for s in r.json()["similar"]] == [{"id", "score"}]
    assert r.json()["similar"][0]["id"] == kept["id"]


def test_a_tool_call_over_mcp_answers_a_receipt(service):
    kept = _stored(service, service.auth())
    writer = service.auth(scopes=WRITE)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "execute_capability",
            "arguments": {"name": "patchMemoryById", "arguments": {"id": kept["id"]}},
        },
    }
    r = service.client.post("/mcp", json=call, headers={**MCP_HEADERS, **writer})
    assert r.status_code == 200, r.text
    assert MARKER not in r.text
    result = r.json()["result"]
    assert not result.get("isError"), result
    _assert_receipt(result["structuredContent"]["memory"])
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_org_memories_answer_receipts_to_a_write_only_key(service):
    # acme's memory saved by alice's reading key; her write-only keys with org:write (her own
    # org memories) and org:admin (any of acme's) change it and are not shown it.
    reader = service.auth("alice", org="acme", scopes=("mcp:read", "mcp:write", "org:write"))
    mine = _stored(service, reader, scope="org")
    bobs = _stored(
        service,
        service.auth("bob", org="acme", scopes=("mcp:read", "mcp:write", "org:write")),
        scope="org",
    )
    author = service.auth("alice", org="acme", scopes=("mcp:write", "org:write"))
    admin = service.auth("carol", org="acme", scopes=("mcp:write", "org:admin"))
    for headers, memory in ((author, mine), (admin, mine), (admin, bobs)):
        r = service.client.patch(f"/v1/memory/{memory['id']}", json={}, headers=headers)
        assert r.status_code == 200, r.text
        assert MARKER not in r.text
        _assert_receipt(r.json()["memory"], {"created_by"})
        assert r.json()["memory"]["scope"] == "org"
    # bob's memory is not alice's to change with org:write: 403, and nothing of it shown.
    r = service.client.patch(f"/v1/memory/{bobs['id']}", json={}, headers=author)
    assert_problem(r, 403, "insufficient_scope")
    assert MARKER not in r.text


def test_a_reading_key_still_gets_the_whole_memory(service):
    reader = service.auth()
    kept = _stored(service, reader)
    r = service.client.patch(f"/v1/memory/{kept['id']}", json={}, headers=reader)
    assert r.status_code == 200
    assert r.json()["memory"]["content"] == f"{MARKER} content"
    assert r.json()["memory"]["contexts"][0]["snippet"] == f"{MARKER} snippet"


def test_a_tag_with_a_comma_is_refused_where_a_tag_is_set(make_service):
    service = make_service(review_required=True)
    reviewer = service.auth(scopes=("mcp:read", "mcp:write", "memory:review"))
    kept = _stored(service, reviewer)
    before = row_counts(service.engine)
    r = service.client.post(
        "/v1/memory", json={"content": "x", "tags": ["ok", "a,b"]}, headers=reviewer
    )
    problem = assert_problem(r, 400, "invalid_request", "tags.1")
    assert "comma" in problem["detail"]
    r = service.client.patch(f"/v1/memory/{kept['id']}", json={"tags": ["a,b"]}, headers=reviewer)
    assert_problem(r, 400, "invalid_request", "tags.0")
    assert row_counts(service.engine) == before
    # A reviewer's changes at confirm are held to the same rule; the draft stays.
    agent = service.auth()
    draft = service.client.post("/v1/memory", json={"content": "pending"}, headers=agent)
    assert draft.status_code == 202
    draft_id = draft.json()["draft"]["id"]
    r = service.client.post(
        f"/v1/memory/drafts/{draft_id}/confirm", json={"tags": ["a,b"]}, headers=reviewer
    )
    assert_problem(r, 400, "invalid_request", "tags.0")
    assert service.client.get(f"/v1/memory/drafts/{draft_id}", headers=reviewer).status_code == 200


def test_a_tag_stored_with_a_comma_lists_shows_and_is_renamed(service):
    reader = service.auth()
    row = service.db.writing(
        lambda conn: memory_writes.insert_memory(
            conn,
            Owner("alice", None, "test-suite"),
            "kept before the rule",
            ["a,b", "plain"],
            [],
            postings_of("kept before the rule", ["a,b", "plain"], []),
        )
    )
    listed = service.client.get("/v1/memory", headers=reader)
    assert listed.status_code == 200, listed.text
    assert listed.json()["memories"][0]["tags"] == ["a,b", "plain"]
    shown = service.client.get(f"/v1/memory/{row.id}", headers=reader)
    assert shown.status_code == 200 and shown.json()["memory"]["tags"] == ["a,b", "plain"]
    found = service.client.get("/v1/memory/search", params={"q": "kept rule"}, headers=reader)
    assert found.status_code == 200 and found.json()["results"][0]["tags"] == ["a,b", "plain"]
    renamed = service.client.patch(
        f"/v1/memory/{row.id}", json={"tags": ["a-b", "plain"]}, headers=reader
    )
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["memory"]["tags"] == ["a-b", "plain"]
    with service.engine.connect() as conn:
        memory = metadata.tables["memory"]
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 1


def test_a_tool_call_over_stdio_answers_a_receipt(service, database_url):
    kept = _stored(service, service.auth())
    env = {**os.environ, "MEMORY_BANK_DATABASE_URL": database_url}
    env["MEMORY_BANK_LOG_LEVEL"] = "warning"
    env["MEMORY_BANK_MCP_KEY"] = service.key(scopes=WRITE)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_bank.cli", "mcp"], env=env
    )

    async def run() -> Any:
        async with Client(params) as client:
            return await client.call_tool(
                "execute_capability", {"name": "patchMemoryById", "arguments": {"id": kept["id"]}}
            )

    result = anyio.run(run)
    assert not result.is_error, result.content
    assert MARKER not in result.content[0].text
    _assert_receipt(result.structured_content["memory"])


def test_an_answer_that_cannot_be_looked_into_fails_closed():
    assert withhold.withheld({"memory": {"id": "m", "tags": ["t"], "x": [{"snippet": "s"}]}}) == {
        "memory": {"id": "m", "x": [{}]}
    }
    assert withhold.withheld_reply(({"content": "c", "id": "m"}, 200, {})) == ({"id": "m"}, 200, {})
    assert withhold.withheld_reply(Response(status_code=204)).status_code == 204
    for reply in (StreamingResponse(iter([b"{}"])), ("text", 200, {}), Response(b"{}")):
        with pytest.raises(RuntimeError):
            withhold.withheld_reply(reply)


def test_date_filters_take_ascii_rfc_3339_only(service):
    # Not this file's subject, but the same spec change: the Instant pattern takes [0-9] only
    # (Python's \d takes other scripts' digits) and no trailing newline (Python's $ allows one).
    reader = service.auth()
    for value in ("２０２６-12-01", "2026-12-01\n", "2026-12-01T09:30:00Z\n", "2026-1２-01"):
        r = service.client.get("/v1/memory", params={"created_after": value}, headers=reader)
        assert_problem(r, 400, "invalid_request", "created_after")
    for value in ("2026-12-01", "2026-12-01T09:30:00.123+02:00"):
        r = service.client.get("/v1/memory", params={"created_after": value}, headers=reader)
        assert r.status_code == 200, r.text
