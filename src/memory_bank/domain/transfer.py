"""An owner's data lifecycle: export everything a user or an org owns, restore an export, erase
them for good. An owner is a user id or an org's owner key (`org:<id>`, store/owners.py); the
commands keep the two apart (`users …` for users, `orgs …` for orgs)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from memory_bank.domain import org_log
from memory_bank.domain.memories import shape
from memory_bank.ids import iso, utcnow
from memory_bank.search.document import postings_of
from memory_bank.store import memories as store
from memory_bank.store import memory_writes, transfer
from memory_bank.store.database import Database
from memory_bank.store.filters import NONE, Filters
from memory_bank.store.owners import Owner, is_org, org_of
from memory_bank.store.sealing import data_keys

# The first line of every export names its format and version; import reads no other.
FORMAT = "memory-bank-export"
VERSION = 1
PAGE = 200


def header(owner: str) -> dict[str, Any]:
    """The export's first line: it names the user, or the org, whose export it is."""
    org_id = org_of(owner)
    whose = {"user_id": owner} if org_id is None else {"org_id": org_id}
    return {"format": FORMAT, "version": VERSION, **whose, "exported_at": iso(utcnow())}


def export_lines(db: Database, owner: str, found: Filters = NONE) -> Iterator[str]:
    """The owner's export as ndjson lines: the header, then one memory per line, newest first
    (only those that pass the filters, when given); an org memory names its author
    (`created_by`).

    Read a page per transaction, so a large export neither holds one long read open nor
    keeps every memory in memory.
    """
    yield json.dumps(header(owner), ensure_ascii=False) + "\n"
    before: tuple[datetime, str] | None = None
    while True:
        with db.reading() as conn:
            rows = store.list_memories(conn, owner, PAGE, before, found)
        for row in rows:
            yield json.dumps(shape(row), ensure_ascii=False) + "\n"
        if len(rows) < PAGE:
            return
        before = (rows[-1].created_at, rows[-1].id)


@dataclass(frozen=True)
class Restored:
    """One exported memory, checked, ready to write back; created_by is its author (an org
    memory's, None when the line names none)."""

    id: str
    content: str
    tags: list[str]
    source: str
    created_at: datetime
    updated_at: datetime
    contexts: list[store.NewContext]
    context_ids: list[str]
    context_times: list[datetime]
    created_by: str | None = None


@dataclass
class Plan:
    """What an import will do: the memories to write, how many are there already, and the
    lines (number, problem) whose ids collide with stored rows or with earlier lines."""

    new: list[Restored] = field(default_factory=list)
    already: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)


def plan(
    db: Database,
    owner: str,
    lines: Sequence[tuple[int, Restored]],
    author: str | None = None,
) -> Plan:
    """Sort checked lines into new, already imported (this owner's ids) and colliding: a memory
    id of another owner or seen on an earlier line, a context id stored already (whoever owns
    it) or seen earlier. What it passes can be written without breaking a key.

    An org memory needs its author: the line's `created_by`, else author; a line with neither
    is a problem (an authorless org memory could be changed by no member but an admin, and its
    audit entry would name nobody)."""
    with db.reading() as conn:
        owners = transfer.existing_ids(conn, [m.id for _, m in lines])
        contexts = transfer.existing_context_ids(
            conn, [cid for _, m in lines for cid in m.context_ids]
        )
    result = Plan()
    memory_lines: dict[str, int] = {}
    context_lines: dict[str, int] = {}
    for number, m in lines:
        problem = _memory_problem(m, owner, owners, memory_lines)
        if problem is None and owners.get(m.id) == owner:
            memory_lines[m.id] = number
            result.already += 1  # imported before: its contexts came with it
            continue
        problem = problem or _context_problem(m, contexts, context_lines)
        if problem is None and is_org(owner):
            m = replace(m, created_by=m.created_by or author)
            if m.created_by is None:
                problem = (
                    "'created_by' is missing: an org memory needs its author "
                    "(--author names one for the lines without)."
                )
        if problem is not None:
            result.problems.append((number, problem))
            continue
        memory_lines[m.id] = number
        context_lines.update((cid, number) for cid in m.context_ids)
        result.new.append(m)
    return result


def _memory_problem(
    m: Restored, owner: str, owners: dict[str, str], seen: dict[str, int]
) -> str | None:
    """Why a memory id cannot be imported for the owner, if it cannot."""
    if m.id in seen:
        return f"'id' {m.id} is also on line {seen[m.id]}."
    holder = owners.get(m.id)
    if holder is not None and holder != owner:
        return f"'id' {m.id} belongs to another {'org' if is_org(holder) else 'user'}."
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
    owner: str,
    memories: Sequence[Restored],
    progress: Callable[[int], None] = lambda done: None,
) -> int:
    """Write these memories for the owner, all in one transaction (none when any write fails),
    skipping ids already there; returns how many were written. An org memory keeps its author
    and gets its `created` entry in the org's audit log, in the same transaction. progress(n)
    follows the rows written so far (from 0 again should the transaction be retried)."""
    org_id = org_of(owner)

    def work(conn: Connection) -> int:
        progress(0)
        there = transfer.existing_ids(conn, [m.id for m in memories])
        written = 0
        for done, m in enumerate(memories, start=1):
            if there.get(m.id) != owner:
                if org_id is not None and m.created_by is None:
                    raise ValueError(f"org memory {m.id} has no author")  # plan() gives one
                index = postings_of(m.content, m.tags, [c.snippet for c in m.contexts])
                memory_writes.insert_memory(
                    conn,
                    Owner(owner, org_id, m.source, m.created_by if org_id else None),
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
                if org_id is not None and m.created_by is not None:
                    org_log.record_import(conn, org_id, m.id, m.created_by, m.source)
                written += 1
            if done % PAGE == 0 or done == len(memories):
                progress(done)
        return written

    return db.writing(work)


def erase(db: Database, owner: str) -> dict[str, int]:
    """Erase a user or an org: its data key first, in its own transaction (crypto-shredding:
    from then on no copy of its sealed rows can be read), then every row of it in every table
    (an org's: its memories, drafts, revisions and audit log)."""
    shredded = db.writing(lambda conn: data_keys.destroy(conn, owner))
    done = db.writing(lambda conn: transfer.erase_rows(conn, owner))
    done["owner_key"] = int(shredded) + done.get("owner_key", 0)
    return done


def kept_for_orgs(db: Database, user_id: str) -> dict[str, int]:
    """What the user wrote that erase keeps because it is an org's (memories, drafts, audit)."""
    with db.reading() as conn:
        return transfer.org_rows_written_by(conn, user_id)


def remaining(db: Database, owner: str) -> dict[str, int]:
    """The owner's rows left in each table (all zero after erase)."""
    with db.reading() as conn:
        return transfer.count_rows(conn, owner)
