"""The MCP server: tools from the manifest plus the two search-first tools, on the SDK's Server."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from memory_bank import __version__, errors
from memory_bank.mcp import capabilities
from memory_bank.mcp.executor import Executor, error_result, structured_result
from memory_bank.mcp.manifest import Manifest

INSTRUCTIONS = (
    "memory-bank keeps the user's memories. Search with the user's own words before answering "
    "anything that may depend on earlier conversations. To save, draft one crisp sentence, ask "
    "the user to confirm or edit it, then save; never store secrets, credentials, tokens or "
    "personal data. Delete when the user asks you to forget something."
)


def build_server(manifest: Manifest, executor: Executor) -> Server[Any]:
    """A low-level MCP server whose tools are the manifest's capabilities."""
    search = capabilities.search_tool()
    execute = capabilities.execute_tool(manifest)
    tools = [c.tool() for c in manifest.capabilities] + [
        types.Tool.model_validate(search),
        types.Tool.model_validate(execute),
    ]

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await dispatch(manifest, executor, params.name, params.arguments or {})

    return Server(
        "memory-bank",
        version=__version__,
        title="memory-bank",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def dispatch(
    manifest: Manifest, executor: Executor, name: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    """Run one tool call: a manifest capability, or one of the two search-first tools."""
    if name == capabilities.SEARCH:
        problem = executor.check(name, capabilities.search_tool()["inputSchema"], arguments)
        if problem is not None:
            return error_result(problem)
        found = capabilities.search_results(manifest, arguments["query"], arguments.get("limit", 3))
        return structured_result(found)
    if name == capabilities.EXECUTE:
        problem = executor.check(
            name, capabilities.execute_tool(manifest)["inputSchema"], arguments
        )
        if problem is not None:
            return error_result(problem)
        name, arguments = arguments["name"], arguments.get("arguments") or {}
    capability = manifest.get(name)
    if capability is None:
        detail = f"No tool named {name!r}; try {capabilities.SEARCH}."
        return error_result(errors.UnknownTool(detail, field="name").document())
    return await executor.call(capability, arguments)
