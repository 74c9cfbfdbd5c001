"""Counts the docs state in words, checked against what the code does."""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa

from memory_bank.auth import Principal
from memory_bank.domain import search

ROOT = Path(__file__).resolve().parents[1]
WORDS = {"three": 3, "four": 4, "five": 5, "six": 6}
# A transaction's own statements are not the search's.
FRAMING = {"BEGIN", "COMMIT", "ROLLBACK"}


def test_a_search_is_as_many_statements_as_docs_search_md_says(service):
    stated = re.search(
        r"A search is (\w+)\s+statements", (ROOT / "docs" / "search.md").read_text(encoding="utf-8")
    )
    assert stated is not None and stated.group(1) in WORDS
    headers = service.auth("alice")
    for text in ["The deploy runbook drains the queue.", "Deploys happen on Tuesday."]:
        saved = service.client.post("/v1/memory", json={"content": text}, headers=headers)
        assert saved.status_code == 201
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    principal = Principal(
        user_id="alice", org_id=None, scopes=("mcp:read",), source="t", key_id="k"
    )
    sa.event.listen(service.engine, "before_cursor_execute", record)
    try:
        found, mode, _ = search.find(service.db, principal, "deploy runbook", 10)
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", record)
    assert mode == "lexical" and len(found) == 2
    # Statistics and document frequencies, the BM25 ranking (with the query terms each hit
    # holds, its score), the hits, their contexts.
    own = [s for s in statements if s.split()[0].upper() not in FRAMING]
    assert len(own) == WORDS[stated.group(1)], own
