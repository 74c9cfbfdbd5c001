"""The request bodies that carry a memory's text, each parsed once into what the domain uses:
a save, a merge-patch, and a reviewer's changes to a draft.

Connexion has checked each against the spec (lengths, counts, patterns) before it arrives;
parsing trims text and drops repeated tags, nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_bank.errors import UnsupportedMediaType
from memory_bank.ids import new_id, utcnow
from memory_bank.store.memories import NewContext


@dataclass(frozen=True)
class NewMemory:
    """A save: the memory's text and contexts, and what the caller asked of the save."""

    content: str
    tags: list[str]
    contexts: list[NewContext]
    scope: str | None = None
    dedupe: str | None = None


@dataclass(frozen=True)
class Change:
    """A memory's next state: None keeps a field as it is."""

    content: str | None = None
    tags: list[str] | None = None
    contexts: list[dict[str, Any]] | None = None


def new_memory(body: Any) -> NewMemory:
    """A save body (NewMemory in the spec)."""
    body = _object(body, "application/json")
    return NewMemory(
        content=body["content"].strip(),
        tags=tags(body.get("tags")),
        contexts=contexts(body.get("contexts")),
        scope=body.get("scope"),
        dedupe=body.get("dedupe"),
    )


def patch(body: Any) -> Change:
    """A merge-patch body (MemoryPatch in the spec): only the fields it names change."""
    body = _object(body, "application/merge-patch+json")
    now = utcnow()
    new_contexts = None
    if "contexts" in body:
        # Stored as the memory's contexts at once: they get their ids and time here.
        new_contexts = [
            {
                "id": new_id("mctx"),
                "snippet": c.snippet,
                "conversation_id": c.conversation_id,
                "message_id": c.message_id,
                "origin": c.origin,
                "created_at": now,
            }
            for c in contexts(body["contexts"])
        ]
    return Change(
        content=body["content"].strip() if "content" in body else None,
        tags=tags(body["tags"]) if "tags" in body else None,
        contexts=new_contexts,
    )


def draft_changes(
    changes: dict[str, Any] | None, content: str, tags_: list[str]
) -> tuple[str, list[str]]:
    """A reviewer's changes to a draft (DraftEdits in the spec) over its content and tags:
    the content and tags to confirm; a field left out keeps the draft's."""
    changes = changes or {}
    return (
        changes["content"].strip() if "content" in changes else content,
        tags(changes["tags"]) if "tags" in changes else tags_,
    )


def tags(values: list[str] | None) -> list[str]:
    """Tags trimmed, each once, in the order given."""
    kept: list[str] = []
    for tag in values or []:
        if tag.strip() not in kept:
            kept.append(tag.strip())
    return kept


def contexts(values: list[dict[str, Any]] | None) -> list[NewContext]:
    """Contexts as given, their snippet and citation ids trimmed."""
    return [
        NewContext(
            snippet=ctx["snippet"].strip(),
            conversation_id=_trimmed(ctx.get("conversation_id")),
            message_id=_trimmed(ctx.get("message_id")),
            origin=ctx.get("origin"),
        )
        for ctx in values or []
    ]


def _object(body: Any, media_type: str) -> dict[str, Any]:
    """The body as a JSON object; 415 otherwise."""
    if not isinstance(body, dict):
        # Connexion validates only bodies it can parse; without a JSON content type the raw
        # bytes arrive here.
        raise UnsupportedMediaType(f"Send the body as {media_type}.")
    return body


def _trimmed(value: str | None) -> str | None:
    """An optional id, trimmed."""
    return None if value is None else value.strip()
