"""Exporting an edited memory: its current state and revision; the history stays behind."""

from __future__ import annotations

import json

from memory_bank.domain import transfer


def test_export_has_the_current_state_and_revision_not_the_history(service):
    headers = service.auth("alice")
    saved = service.client.post("/v1/memory", json={"content": "Old words"}, headers=headers)
    mid = saved.json()["memory"]["id"]
    edited = service.client.patch(
        f"/v1/memory/{mid}", json={"content": "New words"}, headers=headers
    )
    assert edited.status_code == 200
    lines = list(transfer.export_lines(service.db, "alice"))
    exported = json.loads(lines[1])
    assert exported == edited.json()["memory"] and exported["revision"] == 2
    assert "Old words" not in "".join(lines)
