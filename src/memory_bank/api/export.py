"""Handler for /v1/memory/export: everything the caller owns, streamed as ndjson."""

from __future__ import annotations

from starlette.responses import StreamingResponse

from memory_bank import state as app_state
from memory_bank.api.context import current_principal
from memory_bank.domain import transfer

NDJSON = "application/x-ndjson"


def getMemoryExport() -> StreamingResponse:
    """Stream the caller's memories: a header line with the format version, then one per line."""
    state = app_state.current()
    lines = transfer.export_lines(state.db, current_principal().user_id)
    return StreamingResponse(
        lines,
        media_type=NDJSON,
        headers={"Content-Disposition": 'attachment; filename="memories.jsonl"'},
    )
