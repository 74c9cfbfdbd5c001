"""What the search index is made from: a user's memories as documents (content, tags and
context snippets, opened), and the counts a rebuild needs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select

from memory_bank.store.schema import memory, memory_context
from memory_bank.store.sealing import data_keys


def count(conn: Connection, user_id: str) -> int:
    """How many memories the user has, counted from the rows themselves."""
    stmt = select(func.count()).select_from(memory).where(memory.c.user_id == user_id)
    return int(conn.execute(stmt).scalar() or 0)


def count_all(conn: Connection) -> int:
    """How many memories there are: a cross-user read, for the operator's maintenance only."""
    return int(conn.execute(select(func.count()).select_from(memory)).scalar() or 0)


def owners(conn: Connection) -> list[str]:
    """Every user with memories: a cross-user read, for the operator's maintenance only."""
    return sorted(conn.execute(select(memory.c.user_id).distinct()).scalars())


@dataclass(frozen=True)
class Document:
    """What the index is made from: a memory's content, tags and context snippets."""

    id: str
    content: str
    tags: list[str]
    snippets: list[str]


def documents(conn: Connection, user_id: str, after: str, size: int) -> list[Document]:
    """The user's next size memories with ids after `after`, as index documents, by id."""
    rows = next_by_id(conn, user_id, after, size, memory.c.content, memory.c.tags)
    return _opened(conn, user_id, rows)


def next_by_id(conn: Connection, user_id: str, after: str, size: int, *columns: Any) -> list[Any]:
    """The owner's next size memory rows by id after `after` (id and these columns): how
    maintenance walks an owner (reindex, tag rebuilds)."""
    return list(
        conn.execute(
            select(memory.c.id, *columns)
            .where(memory.c.user_id == user_id, memory.c.id > after)
            .order_by(memory.c.id)
            .limit(size)
        ).all()
    )


def documents_by_id(conn: Connection, user_id: str, ids: Sequence[str]) -> list[Document]:
    """The owner's memories among these ids (deleted ones are absent), as documents."""
    if not ids:
        return []
    rows = conn.execute(
        select(memory.c.id, memory.c.content, memory.c.tags).where(
            memory.c.user_id == user_id, memory.c.id.in_(list(ids))
        )
    ).all()
    return _opened(conn, user_id, rows)


def _opened(conn: Connection, user_id: str, rows: Sequence[Any]) -> list[Document]:
    """Memory rows (id, content, tags) opened with their context snippets, in row order."""
    seal = data_keys.sealer(conn, user_id)
    snippets: dict[str, list[str]] = {r.id: [] for r in rows}
    if rows:
        for cid, mid, snippet in conn.execute(
            select(memory_context.c.id, memory_context.c.memory_id, memory_context.c.snippet)
            .where(
                memory_context.c.user_id == user_id,
                memory_context.c.memory_id.in_(list(snippets)),
            )
            .order_by(memory_context.c.memory_id, memory_context.c.position)
        ):
            snippets[mid].append(seal.open("memory_context.snippet", cid, snippet))
    return [
        Document(
            r.id,
            seal.open("memory.content", r.id, r.content),
            json.loads(seal.open("memory.tags", r.id, r.tags)),
            snippets[r.id],
        )
        for r in rows
    ]
