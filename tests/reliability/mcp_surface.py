"""The isolation attacks through MCP: every generated tool, via the official SDK client, on an
in-process MCP server that executes through the same REST handlers with the caller's key."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx

from mcp import Client
from memory_bank.mcp import manifest
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import build_server

INJECTED = ["settings", "drafts", "prompt", "search", ".", "..", "", "../settings", "a/b", "%2e%2e"]
SMUGGLED_ARGUMENTS = {"user_id": "bob", "org_id": "other", "owner": "bob", "source": "admin"}
SPELLINGS = (
    lambda v: v,
    str.upper,
    str.lower,
    str.swapcase,
    lambda v: " " + v,
    lambda v: v + "\n",
    lambda v: v[:-1],
    lambda v: v + "%",
)


def _text(result: Any) -> str:
    """Everything a tool result shows the agent, as one string."""
    parts = [getattr(c, "text", "") for c in result.content]
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, sort_keys=True))
    return "\n".join(parts)


def mcp_attacks(
    world: Any, figures: Any, engine: str, never_existed_like: Any, own_draft: Any
) -> None:
    """Each tool with an id argument, given other users' ids and respelled ones; smuggled
    identity arguments on every tool; nothing of another user's comes back."""
    loaded = manifest.load()
    key = f"isolation.{engine}.mcp"

    async def run() -> None:
        secret = world.keys["alice"]["Authorization"].removeprefix("Bearer ")
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=world.service.app), base_url=IN_PROCESS_BASE
        ) as http:
            server = build_server(loaded, Executor(http, lambda: secret))
            async with Client(server) as client:
                for cap in loaded.capabilities:
                    # The id is attacked; another path argument (a revision number) is valid.
                    path_args = [a for a, b in cap.arguments.items() if b["in"] == "path"]
                    numbers = [a for a in path_args if a != "id"]
                    path_args = [a for a in path_args if a == "id"]
                    required = cap.definition["inputSchema"].get("required", [])
                    base = {a: "shared words" for a in required if a not in path_args}
                    base |= dict.fromkeys(numbers, 1)
                    if "content" in cap.arguments:
                        base["content"] = "attacker note via mcp"
                    for victim in ("bob", "carol", "org:other"):
                        for victim_id in world.ids[victim][:1]:
                            ghost = never_existed_like(victim_id)
                            for spell in SPELLINGS:
                                if not path_args:
                                    break
                                args = {**base, **{a: spell(victim_id) for a in path_args}}
                                ghost_args = {**base, **{a: spell(ghost) for a in path_args}}
                                theirs = await client.call_tool(cap.name, args)
                                never = await client.call_tool(cap.name, ghost_args)
                                figures.add(key + ".attacks")
                                assert theirs.is_error, f"{cap.name} returned {victim}'s memory"
                                seen = _text(theirs)
                                for spelling in {victim_id, spell(victim_id)}:
                                    seen = seen.replace(spelling, "<ID>")
                                expected = _text(never)
                                for spelling in {ghost, spell(ghost)}:
                                    expected = expected.replace(spelling, "<ID>")
                                assert seen == expected, f"{cap.name}: {seen} != {expected}"
                                world.check_no_victim_data(seen)
                    for name, value in SMUGGLED_ARGUMENTS.items():
                        args = {**base, name: value}
                        for a in path_args:
                            args[a] = world.ids["bob"][0]
                        result = await client.call_tool(cap.name, args)
                        figures.add(key + ".attacks")
                        world.check_no_victim_data(_text(result))
                        if path_args:
                            assert result.is_error, f"{cap.name} acted on bob's memory"
                # Ids that are not ids (other routes' names, dot segments, slashes) reach
                # nothing: alice's own draft, settings and prompt included.
                draft, draft_words = own_draft(world)
                for cap in loaded.capabilities:
                    path_args = [a for a, b in cap.arguments.items() if b["in"] == "path"]
                    for value in [*INJECTED, f"drafts/{draft}", f"drafts%2F{draft}"]:
                        if not path_args:
                            break
                        args = {a: value if a == "id" else 1 for a in path_args}
                        for result in (
                            await client.call_tool(cap.name, args),
                            await client.call_tool(
                                "execute_capability", {"name": cap.name, "arguments": args}
                            ),
                        ):
                            figures.add(key + ".attacks")
                            seen = _text(result)
                            assert result.is_error, f"{cap.name}({value!r}) answered: {seen}"
                            problem = json.loads(result.content[0].text)
                            assert problem["status"] == 400 and problem["field"] == "id", seen
                            assert draft_words not in seen and "review_in_effect" not in seen
                            world.check_no_victim_data(seen)
                # The search-first tools reach the same operations.
                result = await client.call_tool(
                    "execute_capability",
                    {"name": "getMemoryById", "arguments": {"id": world.ids["bob"][0]}},
                )
                figures.add(key + ".attacks")
                assert result.is_error
                world.check_no_victim_data(_text(result))

    anyio.run(run)
