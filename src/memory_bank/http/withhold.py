"""A caller without mcp:read never reads stored content: the one place its answers lose it.

The rule (docs/acl.md, "Writing without reading"): a key without `mcp:read` is never shown
stored content it did not send in that request, unless the operation's own scope grants
reading it (the review queue, with `memory:review`). Content is a memory's or draft's
content, tags and contexts (and a revision's, which is its earlier wording); ids, revisions,
scope, source and times are not. Rather than each handler remembering this, every handler is
wrapped here, and a non-reader's answer is the same answer with those fields left out: a
MemoryReceipt or DraftReceipt in the spec.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from connexion.context import context as connexion_context
from starlette.responses import Response

from memory_bank.domain import acl
from memory_bank.http.security import Caller

# The fields that carry what a person or agent wrote (a context's snippet inside contexts;
# named on its own too, so a snippet shown anywhere else is caught as well).
CONTENT_FIELDS = frozenset({"content", "tags", "contexts", "snippet"})
# Scopes that grant reading content: mcp:read itself, and memory:review for the review queue.
READING_SCOPES = frozenset({acl.READ, acl.REVIEW})


def guarded(handler: Callable[..., Any], scopes: tuple[str, ...]) -> Callable[..., Any]:
    """The handler of an operation needing these scopes, answering a non-reader without content.

    create_app resolves every operation's handler through here, so every answer any operation
    gives passes through this wrapper: REST requests, and MCP tool calls, which run as REST
    requests through the same app and handlers (mcp/executor.py, over /mcp and over stdio).
    Nothing else answers with stored data: problem documents are written from the server's
    own words, never from a row, and the panel's routes serve static files. The wrapper keeps
    the handler's signature (functools.wraps), which Connexion reads to pass its arguments.
    """
    if READING_SCOPES.intersection(scopes):
        # The operation's own scope grants reading (a read, or the review queue).
        return handler

    @functools.wraps(handler)
    def answer(*args: Any, **kwargs: Any) -> Any:
        reply = handler(*args, **kwargs)
        return reply if _may_read() else withheld_reply(reply)

    return answer


def withheld_reply(reply: Any) -> Any:
    """A handler's reply with every content field left out of its JSON body.

    A reply whose body cannot be looked into (a stream, text) fails closed: a generic 500
    rather than an answer nobody checked.
    """
    if isinstance(reply, Response):
        if getattr(reply, "body", None) == b"":
            return reply
        raise RuntimeError("an answer to a key without mcp:read cannot be checked for content")
    if isinstance(reply, tuple):
        body, *rest = reply
        if body is None or isinstance(body, dict | list):
            return (withheld(body), *rest)
    raise RuntimeError("an answer to a key without mcp:read cannot be checked for content")


def withheld(body: Any) -> Any:
    """A JSON value with every content field (CONTENT_FIELDS) left out, at any depth."""
    if isinstance(body, dict):
        return {k: withheld(v) for k, v in body.items() if k not in CONTENT_FIELDS}
    if isinstance(body, list):
        return [withheld(item) for item in body]
    return body


def _may_read() -> bool:
    """Whether the caller of the request being handled reads content (no caller: it does not)."""
    info = connexion_context.get("token_info") or {}
    caller = info.get("caller")
    return isinstance(caller, Caller) and acl.may_read(caller.principal)
