"""Credential -> principal, and scope checks derived from the spec."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from connexion.context import context as connexion_context
from sqlalchemy import Connection, Engine

from memory_bank import state as app_state
from memory_bank.errors import (
    InsufficientScope,
    MemoryDisabledForUser,
    MemorySwitchedOff,
    Unauthorized,
)
from memory_bank.ids import utcnow
from memory_bank.store import keys, user_settings
from memory_bank.store.engine import reading


@dataclass(frozen=True)
class Principal:
    """Who is calling: taken from the credential only, never from the request."""

    user_id: str
    org_id: str | None
    scopes: tuple[str, ...]
    source: str
    key_id: str
    # The user's own review opt-in, read together with the credential; None when not read.
    review_opt_in: bool | None = None

    def has(self, scope: str) -> bool:
        """Whether the credential carries a scope."""
        return scope in self.scopes


def authenticate(engine: Engine, token: str) -> Principal:
    """The principal for a presented key, or 401 when missing, unknown, revoked or expired."""
    with reading(engine) as conn:
        return _authenticate(conn, token)


def _authenticate(conn: Connection, token: str) -> Principal:
    """authenticate() on a connection the caller holds."""
    return _principal(keys.find_key(conn, token))


def _principal(record: keys.KeyRecord | None) -> Principal:
    """The principal for a looked-up key, or 401 when missing, unknown, revoked or expired."""
    if record is None:
        raise Unauthorized("The API key is not valid.")
    if not record.usable(utcnow()):
        raise Unauthorized("The API key is revoked or expired.")
    return Principal(
        user_id=record.user_id,
        org_id=record.org_id,
        scopes=record.scopes,
        source=record.source,
        key_id=record.id,
    )


def bearer_info(token: str, request: Any) -> dict[str, Any]:
    """Connexion's bearer hook: authenticate, then enforce the operation's scopes."""
    state = app_state.from_scope(request.scope)
    memory_route = str(request.scope.get("path", "")).startswith(MEMORY_ROUTES)
    # One statement for the key and the user's switches: each round trip counts on
    # MySQL/MariaDB, and this runs on every request.
    with reading(state.auth_engine) as conn:
        if memory_route:
            found = keys.find_key_and_switches(conn, token)
            record, prefs = found if found is not None else (None, None)
        else:
            record, prefs = keys.find_key(conn, token), None
    principal = _principal(record)
    if prefs is not None:
        check_switches(state, prefs)
        principal = dataclasses.replace(principal, review_opt_in=prefs.review_required)
    routing = request.scope.get("extensions", {}).get("connexion_routing", {})
    # Connexion 3.3 ignores scopes on http/bearer schemes, so they are enforced here, from
    # the same security requirements the spec lists for each operation.
    for scope in state.required_scopes.get(routing.get("operation_id") or "", ()):
        if not principal.has(scope):
            raise InsufficientScope(scope)
    request.scope.setdefault("state", {})["principal"] = principal
    return {"sub": principal.user_id, "principal": principal, "scope": list(principal.scopes)}


# The routes the kill switches turn off: every memory, draft and settings operation.
MEMORY_ROUTES = "/v1/memory"


def check_switches(state: app_state.AppState, prefs: user_settings.UserSettings) -> None:
    """The kill switches, checked once per authenticated request: server-wide, then per user."""
    if not state.settings.memory_enabled:
        raise MemorySwitchedOff(
            "Memory is switched off on this server by its operator; nothing can be saved or "
            "recalled until it is switched back on."
        )
    if prefs.memory_disabled:
        raise MemoryDisabledForUser(
            "Memory is switched off for this user by the operator; nothing can be saved or "
            "recalled for this user until it is switched back on."
        )


def current_principal() -> Principal:
    """The principal of the request being handled."""
    info = connexion_context.get("token_info") or {}
    principal = info.get("principal")
    if not isinstance(principal, Principal):
        raise Unauthorized("No credential.")
    return principal


def scopes_from_spec(spec: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """operationId -> scopes listed in its bearerAuth security requirement."""
    default = spec.get("security", [])
    found: dict[str, tuple[str, ...]] = {}
    for item in spec.get("paths", {}).values():
        for method, op in item.items():
            if method not in {"get", "put", "post", "delete", "patch"}:
                continue
            requirements = op.get("security", default)
            scopes: list[str] = []
            for requirement in requirements:
                scopes.extend(requirement.get("bearerAuth", []))
            found[op["operationId"]] = tuple(scopes)
    return found
