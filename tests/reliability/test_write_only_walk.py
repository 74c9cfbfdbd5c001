"""Every operation of the spec, called with a key that may write but not read: no answer
carries a word of what other keys stored (docs/acl.md), on both engines, with review off and
on. An operation the walk does not call fails the test, so a new one is walked too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from memory_bank.mcp import manifest
from memory_bank.spec import load_spec, operations

# Words only stored content holds: the memory's, its earlier wording's, the org memory's,
# the draft's. None of them is ever sent by the walking key.
MINE, EARLIER, ORG, DRAFT = "zqwalkmine", "zqwalkearlier", "zqwalkorg", "zqwalkdraft"
MARKERS = (MINE, EARLIER, ORG, DRAFT)
# The walking key: every scope but the two that read content (mcp:read, memory:review).
WALKER = ("mcp:write", "org:write", "org:admin")
READER = ("mcp:read", "mcp:write", "org:write", "memory:review")


@dataclass
class Stored:
    """What other keys stored before the walk: ids the walker is handed (ids are no secret)."""

    memory: str
    org_memory: str
    draft: str


# operationId -> the requests that call it: (method, path, keyword arguments of the client).
Request = tuple[str, str, dict[str, Any]]
CALLS: dict[str, Callable[[Stored], list[Request]]] = {
    "postMemory": lambda s: [
        ("POST", "/v1/memory", {"json": {"content": "shared walk words", "tags": ["w"]}}),
        ("POST", "/v1/memory", {"json": {"content": "shared walk words", "dedupe": "skip"}}),
        ("POST", "/v1/memory", {"json": {"content": "shared org words", "scope": "org"}}),
    ],
    "getMemory": lambda s: [("GET", "/v1/memory", {"params": {"limit": 100}})],
    "getMemorySearch": lambda s: [
        ("GET", "/v1/memory/search", {"params": {"q": "shared walk words"}})
    ],
    "getMemoryExport": lambda s: [("GET", "/v1/memory/export", {})],
    "getMemoryPrompt": lambda s: [("GET", "/v1/memory/prompt", {})],
    "getMemoryDrafts": lambda s: [("GET", "/v1/memory/drafts", {})],
    "getMemoryDraftById": lambda s: [("GET", f"/v1/memory/drafts/{s.draft}", {})],
    "postMemoryDraftConfirm": lambda s: [
        ("POST", f"/v1/memory/drafts/{s.draft}/confirm", {"json": {}})
    ],
    "postMemoryDraftReject": lambda s: [("POST", f"/v1/memory/drafts/{s.draft}/reject", {})],
    "getMemorySettings": lambda s: [("GET", "/v1/memory/settings", {})],
    "putMemorySettings": lambda s: [
        ("PUT", "/v1/memory/settings", {"json": {"review_required": False}})
    ],
    "getMemoryById": lambda s: [
        ("GET", f"/v1/memory/{s.memory}", {}),
        ("GET", f"/v1/memory/{s.org_memory}", {}),
    ],
    "patchMemoryById": lambda s: [
        ("PATCH", f"/v1/memory/{mid}", {"json": body})
        for mid in (s.memory, s.org_memory)
        for body in ({}, {"tags": ["probe"]}, {"content": "walker wording"})
    ],
    "getMemoryRevisions": lambda s: [("GET", f"/v1/memory/{s.memory}/revisions", {})],
    "postMemoryRestore": lambda s: [
        ("POST", f"/v1/memory/{mid}/revisions/1/restore", {}) for mid in (s.memory, s.org_memory)
    ],
    "postPanelSession": lambda s: [("POST", "/v1/panel/session", {"json": {"code": "nope"}})],
    "getOrgAudit": lambda s: [("GET", "/v1/org/audit", {})],
    "getHealthz": lambda s: [("GET", "/healthz", {})],
    "getReadyz": lambda s: [("GET", "/readyz", {})],
    # Last: it deletes what the others read.
    "deleteMemoryById": lambda s: [
        ("DELETE", f"/v1/memory/{s.memory}", {}),
        ("DELETE", f"/v1/memory/{s.org_memory}", {}),
    ],
}


def _store(service: Any, review: bool) -> Stored:
    """alice's memory (edited once, so its history holds an earlier wording), bob's memory in
    their org acme, and a draft of alice's waiting for review: all saved by other keys."""
    client = service.client
    alice = service.auth("alice", org="acme", scopes=READER)
    bob = service.auth("bob", org="acme", scopes=READER)

    def save(headers: dict[str, str], body: dict[str, Any]) -> str:
        r = client.post("/v1/memory", json=body, headers=headers)
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    def full(marker: str) -> dict[str, Any]:
        return {
            "content": f"{marker} shared walk words",
            "tags": [f"{marker}tag"],
            "contexts": [{"snippet": f"{marker} snippet", "conversation_id": f"{marker}c"}],
        }

    memory = save(alice, full(EARLIER))
    edited = client.patch(f"/v1/memory/{memory}", json=full(MINE), headers=alice)
    assert edited.status_code == 200, edited.text
    org_memory = save(bob, {**full(ORG), "scope": "org"})
    client.put("/v1/memory/settings", json={"review_required": True}, headers=alice)
    agent = service.auth("alice", org="acme")
    r = client.post("/v1/memory", json=full(DRAFT), headers=agent)
    assert r.status_code == 202, r.text
    client.put("/v1/memory/settings", json={"review_required": review}, headers=alice)
    return Stored(memory, org_memory, r.json()["draft"]["id"])


def test_the_walk_calls_every_operation_of_the_spec():
    assert set(CALLS) == {op.id for op in operations(load_spec())}


@pytest.mark.parametrize("review", [False, True], ids=["review-off", "review-on"])
def test_a_write_only_key_reads_nothing_stored_anywhere(make_service, review):
    service = make_service(review_required=review)
    stored = _store(service, review)
    walker = service.auth("alice", org="acme", scopes=WALKER)
    answered: dict[str, list[int]] = {}
    for op_id, calls in CALLS.items():
        for method, path, kwargs in calls(stored):
            r = service.client.request(method, path, headers=walker, **kwargs)
            answered.setdefault(op_id, []).append(r.status_code)
            seen = r.text + " ".join(f"{k}: {v}" for k, v in r.headers.items())
            for marker in MARKERS:
                assert marker not in seen, f"{op_id} {method} {path}: {r.status_code} {seen[:400]}"
    # The walk reached the writes it was meant to (not only refusals).
    ok = (200, 201, 202, 204)
    for op_id in ("postMemory", "patchMemoryById", "postMemoryRestore", "deleteMemoryById"):
        assert any(status in ok for status in answered[op_id]), (op_id, answered[op_id])
    assert all(status == 403 for status in answered["getMemoryById"]), answered
    if review:
        assert 202 in answered["patchMemoryById"], answered


MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
    "Mcp-Method": "tools/call",
}


@pytest.mark.parametrize("review", [False, True], ids=["review-off", "review-on"])
def test_every_tool_run_by_a_write_only_key_reads_nothing_stored(make_service, review):
    service = make_service(review_required=review)
    stored = _store(service, review)
    walker = service.auth("alice", org="acme", scopes=WALKER)
    # Deletes last, as in the REST walk.
    tools = sorted(manifest.load().capabilities, key=lambda c: c.name == "deleteMemoryById")
    for number, capability in enumerate(tools):
        arguments: dict[str, Any] = {}
        for name, binding in capability.arguments.items():
            if binding["in"] == "path":
                arguments[name] = 1 if name == "revision" else stored.memory
                if "/drafts/" in capability.path and name == "id":
                    arguments[name] = stored.draft
        required = capability.definition["inputSchema"].get("required", [])
        arguments |= {name: "shared walk words" for name in required if name not in arguments}
        call = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {
                "name": "execute_capability",
                "arguments": {"name": capability.name, "arguments": arguments},
            },
        }
        r = service.client.post("/mcp", json=call, headers={**MCP_HEADERS, **walker})
        assert r.status_code == 200, r.text
        for marker in MARKERS:
            assert marker not in r.text, f"{capability.name}: {r.text[:400]}"
