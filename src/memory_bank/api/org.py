"""Handlers for /v1/org: the organisation's audit log."""

from __future__ import annotations

from memory_bank import state as app_state
from memory_bank.api.context import current_principal
from memory_bank.api.respond import Reply, json_reply
from memory_bank.domain import org_log


def getOrgAudit(limit: int = 20, cursor: str | None = None) -> Reply:
    """One page of the caller's org audit log, newest first."""
    state = app_state.current()
    return json_reply(org_log.page(state.db, state.secret, current_principal(), limit, cursor))
