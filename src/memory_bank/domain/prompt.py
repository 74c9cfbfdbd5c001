"""The "## Memory Bank" instructions snippet for agent hosts without MCP, built from the spec."""

from __future__ import annotations

from typing import Any

from memory_bank.spec import operations

# The operations the snippet's how-to refers to; each must exist in the spec.
SAVE, SEARCH, LIST, FETCH, EDIT, HISTORY, RESTORE, DELETE = (
    "postMemory",
    "getMemorySearch",
    "getMemory",
    "getMemoryById",
    "patchMemoryById",
    "getMemoryRevisions",
    "postMemoryRestore",
    "deleteMemoryById",
)
NEEDED = (SAVE, SEARCH, LIST, FETCH, EDIT, HISTORY, RESTORE, DELETE)


def render_prompt(spec: dict[str, Any], base_url: str) -> str:
    """The snippet as Markdown, with calls spelled against base_url."""
    ops = {op.id: (op.method.upper(), op.path, op.definition) for op in operations(spec)}
    missing = [name for name in NEEDED if name not in ops]
    if missing:
        raise ValueError(f"the spec lacks operation(s) the prompt needs: {', '.join(missing)}")
    base = base_url.rstrip("/")

    def call(name: str) -> str:
        method, route, _ = ops[name]
        return f"`{name}` (`{method} {base}{route}`)"

    lines = [
        "## Memory Bank",
        "",
        "You can keep and recall this user's memories in memory-bank. Send "
        "`Authorization: Bearer <API key>` with every call; JSON in, JSON out. With MCP the "
        "tools have the same names.",
        "",
        "### Save",
        "- When the user asks you to remember something, or states a fact, decision or "
        "preference worth keeping, draft ONE crisp, self-contained sentence.",
        "- Show the draft and ask the user to confirm or edit it. Save only what they confirm.",
        "- Never store secrets, credentials, passwords, API keys, tokens or personal data "
        "(health, finances, government ids, other people's contact details).",
        f'- Save with {call(SAVE)}, body `{{"content": "...", "tags": ["..."]}}`. '
        "A 202 answer means a person must review it first: tell the user it is pending.",
        '- To share a memory with the user\'s team, add `"scope": "org"`: only team knowledge '
        "the user asks to share (a runbook step, a customer's preference), never secrets or "
        "personal matters. Without an org or the `org:write` scope this is a 403 "
        "`org_scope_forbidden`: tell the user, and do not save it as personal instead.",
        "- A 201 answer lists `similar`: memories already kept on the same subject. If the new "
        "fact updates one of them (a date moved, a decision changed), edit that one instead of "
        'keeping both; send `"dedupe": "skip"` to get the existing memory back rather '
        "than a second copy of the same words.",
        "",
        "### Edit",
        f"- When a fact changed or a memory is wrong, correct it in place: {call(EDIT)} with "
        'only the fields that change, e.g. `{"content": "..."}` (a list replaces the whole '
        "list). It keeps its id and its history. Send the `ETag` you read as `If-Match`: a 412 "
        "`revision_conflict` means it changed meanwhile: fetch it, show the user, then retry.",
        f"- Its history: {call(HISTORY)}; to bring an earlier state back: {call(RESTORE)}.",
        "",
        "### Recall",
        f"- Before answering anything that may depend on earlier conversations, search with "
        f"the user's own words: {call(SEARCH)} with `q=<their words>`. Results come best "
        "first with a `score`, the chance it is relevant; an empty list means nothing "
        "relevant was saved: say so rather than guess. Each has a `scope`: "
        '`"org"` ones are shared by the team (`created_by` says who saved them).',
        f"- To fetch one memory by id: {call(FETCH)}.",
        "",
        "### List",
        f"- To browse everything: {call(LIST)}, newest first; pass `next_cursor` as `cursor` "
        "for the next page.",
        "",
        "### Delete",
        f"- When the user asks you to forget something, find its id with a search, confirm "
        f"with the user, then {call(DELETE)}. Deleting cannot be undone.",
        "",
        "### Operations",
    ]
    for name, (method, route, op) in ops.items():
        if op.get("x-mcp") is False:
            continue
        title = op.get("x-mcp-title") or name
        lines.append(f"- {title}: `{method} {route}` (`{name}`): {op.get('summary', '').strip()}")
    return "\n".join(lines) + "\n"
