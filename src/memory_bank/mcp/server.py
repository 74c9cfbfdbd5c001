"""The MCP server: tools from the manifest plus the two search-first tools, on the SDK's Server."""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from memory_bank import __version__, errors
from memory_bank.mcp import capabilities, ranking
from memory_bank.mcp.executor import OPERATION_HEADER, Executor, error_result, structured_result
from memory_bank.mcp.manifest import Manifest

log = logging.getLogger("memory_bank.mcp")

INSTRUCTIONS = (
    "memory-bank keeps the user's memories. Search with the user's own words before answering "
    "anything that may depend on earlier conversations. To save, draft one crisp sentence, ask "
    "the user to confirm or edit it, then save; never store secrets, credentials, tokens or "
    "personal data. When a fact changed, edit the memory (patchMemoryById, through "
    "execute_capability) rather than saving it again. Delete when the user asks you to forget "
    "something."
)


# The "## Memory Bank" instructions (`memory-bank prompt`), for hosts that offer prompts.
PROMPT = types.Prompt(
    name="memory-bank",
    title="Memory Bank instructions",
    description=(
        "How to save (after the user confirms), recall, list, edit and delete memories with "
        "this server: the text of `memory-bank prompt`, for an agent's instructions."
    ),
)
# The REST operation that renders it; the prompt is fetched from it like a tool call.
PROMPT_OPERATION = "getMemoryPrompt"
# The Host the current /mcp request was sent to (endpoint.py sets it per request), so the
# prompt spells its calls against the server the host reached, not the in-process loopback.
REQUEST_HOST: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memory_bank_mcp_request_host", default=None
)


async def prompt_result(manifest: Manifest, executor: Executor) -> types.GetPromptResult:
    """The prompt's one message: the instructions as REST renders them for the caller's key."""
    operation = next((c for c in manifest.elsewhere if c.name == PROMPT_OPERATION), None)
    if operation is None:
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {PROMPT.name}")
    headers = {"Accept": "text/markdown", OPERATION_HEADER: PROMPT_OPERATION}
    token = executor.credential()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    host = REQUEST_HOST.get()
    if host:
        headers["Host"] = host
    response = await executor.client.get(operation.path, headers=headers)
    if response.status_code != 200:
        try:
            detail = str(response.json().get("detail", ""))
        except ValueError:
            detail = ""
        raise MCPError(INTERNAL_ERROR, detail or f"The prompt answered {response.status_code}.")
    return types.GetPromptResult(
        description=PROMPT.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=response.text))],
    )


def tools_for(view: Manifest) -> list[types.Tool]:
    """What tools/list shows a caller: the listed capabilities they may use, then the two
    search-first tools over all they may use (nothing at all when they may use none)."""
    if not view.capabilities:
        return []
    definitions = [
        *(c.definition for c in view.capabilities if c.listed),
        capabilities.search_tool(),
        capabilities.execute_tool(view),
    ]
    return [types.Tool.model_validate(d) for d in definitions]


def tools_list_bytes(view: Manifest) -> int:
    """The size of a tools/list answer for this view, serialised as the SDK sends it to a
    client of a handshake protocol version (2026-07-28 adds about 60 bytes of cache hints)."""
    tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools_for(view)]
    response = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"tools": tools})
    return len(response.model_dump_json(by_alias=True, exclude_unset=True).encode())


# What gives search_capabilities an embedding model when one is ready now (None: lexical).
Embedders = Callable[[], ranking.Embedder | None]


def semantic_embedder(semantic: Any, manifest: Manifest) -> Embedders:
    """The app's semantic search model (domain.semantic.Semantic) once it is ready and has
    embedded the manifest's capabilities; none while semantic search is off, its model is
    still being prepared or failed, or the capabilities are being embedded (in a thread of
    their own, started by the first search that finds the model ready: seconds to tens of
    seconds on a CPU, which no search waits for)."""
    started: list[str] = []

    def current() -> ranking.Embedder | None:
        if semantic is None or not semantic.ready:
            return None
        provider: ranking.Embedder = semantic.provider
        if ranking.prepared(manifest, provider):
            return provider
        if provider.model not in started:
            started.append(provider.model)
            threading.Thread(
                target=_prepare, args=(manifest, provider), name="mcp-embed", daemon=True
            ).start()
        return None

    return current


def _prepare(manifest: Manifest, provider: ranking.Embedder) -> None:
    """Embed the capabilities' texts; a failure leaves search_capabilities lexical."""
    from memory_bank.models.local_model import ModelClosed  # numpy only with embeddings on

    try:
        ranking.prepare(manifest, provider)
    except ModelClosed:  # the process is stopping: nothing to report
        return
    except Exception as exc:  # the model's trouble is logged by semantic search itself
        log.warning("search_capabilities stays lexical: embedding its texts failed (%s)", exc)


def build_server(
    manifest: Manifest,
    executor: Executor,
    view: Callable[[], Manifest] | None = None,
    embedder: Embedders | None = None,
) -> Server[Any]:
    """A low-level MCP server whose tools are the manifest's capabilities (and whose prompt is
    the "## Memory Bank" instructions); `view` gives the part of the manifest the current
    caller's scopes allow (default: all of it); `embedder` the model search_capabilities
    ranks English phrases with too (default: none, lexical ranking alone)."""
    current = view or (lambda: manifest)
    # Tool lists per view; views are made once per set of scopes (Manifest.for_scopes), so
    # this stays small. The view is kept with its list, so its id cannot be reused.
    listed: dict[int, tuple[Manifest, list[types.Tool]]] = {}

    # Every tool of the server: one hidden from this caller's view still answers (with REST's
    # insufficient_scope), only a name the server never had is a protocol error.
    known = {*manifest.names, capabilities.SEARCH, capabilities.EXECUTE}

    async def list_tools(
        _ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # One page holds every tool, so no cursor was ever issued (the spec: -32602).
        if params is not None and params.cursor is not None:
            raise MCPError(INVALID_PARAMS, "Invalid cursor: this server lists all tools at once.")
        seen = current()
        cached = listed.get(id(seen))
        if cached is None or cached[0] is not seen:
            cached = listed[id(seen)] = (seen, tools_for(seen))
        return types.ListToolsResult(tools=cached[1])

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in known:
            # A protocol error (the spec: -32602); a bad name given to execute_capability is
            # that tool's argument error instead (dispatch).
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        model = embedder() if embedder is not None else None
        arguments = params.arguments or {}
        return await dispatch(manifest, executor, params.name, arguments, current(), model)

    async def list_prompts(
        _ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        if params is not None and params.cursor is not None:
            raise MCPError(INVALID_PARAMS, "Invalid cursor: this server lists its one prompt.")
        return types.ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(
        _ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT.name:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        return await prompt_result(manifest, executor)

    return Server(
        "memory-bank",
        version=__version__,
        title="memory-bank",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def dispatch(
    manifest: Manifest,
    executor: Executor,
    name: str,
    arguments: dict[str, Any],
    view: Manifest | None = None,
    embedder: ranking.Embedder | None = None,
) -> types.CallToolResult:
    """Run one tool call: a manifest capability, or one of the two search-first tools.

    Search ranks what the caller may use (view), by meaning too with an embedder; a call runs
    whatever the manifest has, and REST refuses one the key lacks the scope for, naming that
    scope."""
    if name == capabilities.SEARCH:
        problem = executor.check(name, capabilities.SEARCH_INPUT, arguments)
        if problem is not None:
            return error_result(problem)
        query, limit = arguments["query"], arguments.get("limit", 3)
        if embedder is None:
            found = capabilities.search_results(manifest, view or manifest, query, limit)
        else:
            # The model runs on a thread, not on the event loop other requests share.
            found = await anyio.to_thread.run_sync(
                lambda: capabilities.search_results(
                    manifest, view or manifest, query, limit, embedder
                )
            )
        return structured_result(found)
    if name == capabilities.EXECUTE:
        problem = executor.check(name, capabilities.execute_input(manifest), arguments)
        if problem is not None:
            return error_result(problem)
        name, arguments = arguments["name"], arguments.get("arguments") or {}
    capability = manifest.get(name)
    if capability is None:
        detail = f"No tool named {name!r}; try {capabilities.SEARCH}."
        return error_result(errors.UnknownTool(detail, field="name").document())
    return await executor.call(capability, arguments)
