"""A user's data lifecycle: export everything they own, restore an export, erase them for good."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from memory_bank.domain.memories import shape
from memory_bank.ids import iso, utcnow
from memory_bank.search.document import postings_of
from memory_bank.store import data_keys, transfer
from memory_bank.store import memories as store
from memory_bank.store.database import Database
from memory_bank.store.filters import NONE, Filters
from memory_bank.store.owners import Owner

# The first line of every export names its format and version; import reads no other.
FORMAT = "memory-bank-export"
VERSION = 1
PAGE = 200


def header(user_id: str) -> dict[str, Any]:
    """The export's first line."""
    return {"format": FORMAT, "version": VERSION, "user_id": user_id, "exported_at": iso(utcnow())}


def export_lines(db: Database, user_id: str, found: Filters = NONE) -> Iterator[str]:
    """The user's export as ndjson lines: the header, then one memory per line, newest first
    (only those that pass the filters, when given).

    Read a page per transaction, so a large export neither holds one long read open nor
    keeps every memory in memory.
    """
    yield json.dumps(header(user_id), ensure_ascii=False) + "\n"
    before: tuple[datetime, str] | None = None
    while True:
        with db.reading() as conn:
            rows = store.list_memories(conn, user_id, PAGE, before, found)
        for row in rows:
            yield json.dumps(shape(row), ensure_ascii=False) + "\n"
        if len(rows) < PAGE:
            return
        before = (rows[-1].created_at, rows[-1].id)


@dataclass(frozen=True)
class Restored:
    """One exported memory, checked, ready to write back."""

    id: str
    content: str
    tags: list[str]
    source: str
    created_at: datetime
    updated_at: datetime
    contexts: list[store.NewContext]
    context_ids: list[str]
    context_times: list[datetime]


@dataclass
class Plan:
    """What an import will do: the memories to write, how many are there already, and the
    lines (number, problem) whose ids collide with stored rows or with earlier lines."""

    new: list[Restored] = field(default_factory=list)
    already: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)


def plan(db: Database, user_id: str, lines: Sequence[tuple[int, Restored]]) -> Plan:
    """Sort checked lines into new, already imported (this user's ids) and colliding: a memory
    id of another user or seen on an earlier line, a context id stored already (whoever owns
    it) or seen earlier. What it passes can be written without breaking a key."""
    with db.reading() as conn:
        owners = transfer.existing_ids(conn, [m.id for _, m in lines])
        contexts = transfer.existing_context_ids(
            conn, [cid for _, m in lines for cid in m.context_ids]
        )
    result = Plan()
    memory_lines: dict[str, int] = {}
    context_lines: dict[str, int] = {}
    for number, m in lines:
        problem = _memory_problem(m, user_id, owners, memory_lines)
        if problem is None and owners.get(m.id) == user_id:
            memory_lines[m.id] = number
            result.already += 1  # imported before: its contexts came with it
            continue
        problem = problem or _context_problem(m, contexts, context_lines)
        if problem is not None:
            result.problems.append((number, problem))
            continue
        memory_lines[m.id] = number
        context_lines.update((cid, number) for cid in m.context_ids)
        result.new.append(m)
    return result


def _memory_problem(
    m: Restored, user_id: str, owners: dict[str, str], seen: dict[str, int]
) -> str | None:
    """Why a memory id cannot be imported for the user, if it cannot."""
    if m.id in seen:
        return f"'id' {m.id} is also on line {seen[m.id]}."
    owner = owners.get(m.id)
    if owner is not None and owner != user_id:
        return f"'id' {m.id} belongs to another user."
    return None


def _context_problem(m: Restored, stored: dict[str, str], seen: dict[str, int]) -> str | None:
    """Why a memory's context ids cannot be imported (a context id is a primary key too)."""
    for pos, cid in enumerate(m.context_ids):
        if cid in m.context_ids[:pos]:
            return f"'contexts.{pos}.id' {cid} is also contexts.{m.context_ids.index(cid)}.id."
        if cid in seen:
            return f"'contexts.{pos}.id' {cid} is also on line {seen[cid]}."
        if cid in stored:
            return f"'contexts.{pos}.id' {cid} belongs to another memory already stored."
    return None


def restore(
    db: Database,
    user_id: str,
    memories: Sequence[Restored],
    progress: Callable[[int], None] = lambda done: None,
) -> int:
    """Write these memories for the user, all in one transaction (none when any write fails),
    skipping ids already there; returns how many were written. progress(n) follows the rows
    written so far (from 0 again should the transaction be retried)."""

    def work(conn: Connection) -> int:
        progress(0)
        there = transfer.existing_ids(conn, [m.id for m in memories])
        written = 0
        for done, m in enumerate(memories, start=1):
            if there.get(m.id) != user_id:
                index = postings_of(m.content, m.tags, [c.snippet for c in m.contexts])
                store.insert_memory(
                    conn,
                    Owner(user_id, None, m.source),
                    m.content,
                    m.tags,
                    m.contexts,
                    index,
                    memory_id=m.id,
                    created_at=m.created_at,
                    updated_at=m.updated_at,
                    context_ids=m.context_ids,
                    context_times=m.context_times,
                )
                written += 1
            if done % PAGE == 0 or done == len(memories):
                progress(done)
        return written

    return db.writing(work)


def erase(db: Database, user_id: str) -> dict[str, int]:
    """Erase a user: their data key first, in its own transaction (crypto-shredding: from then
    on no copy of their sealed rows can be read), then every row of theirs in every table."""
    shredded = db.writing(lambda conn: data_keys.destroy(conn, user_id))
    done = db.writing(lambda conn: transfer.erase_rows(conn, user_id))
    done["owner_key"] = int(shredded) + done.get("owner_key", 0)
    return done


def kept_for_orgs(db: Database, user_id: str) -> dict[str, int]:
    """What the user wrote that erase keeps because it is an org's (memories, drafts, audit)."""
    with db.reading() as conn:
        return transfer.org_rows_written_by(conn, user_id)


def remaining(db: Database, user_id: str) -> dict[str, int]:
    """The user's rows left in each table (all zero after erase)."""
    with db.reading() as conn:
        return transfer.count_rows(conn, user_id)
