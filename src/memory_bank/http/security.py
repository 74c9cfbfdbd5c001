"""Connexion's bearer hook: what the spec says an operation needs, enforced per request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from starlette.types import Scope

from memory_bank import auth
from memory_bank import state as app_state
from memory_bank.domain import switches
from memory_bank.errors import InvalidRequest, Unauthorized
from memory_bank.http import ratelimit
from memory_bank.http.scope import header
from memory_bank.settings import Settings
from memory_bank.spec import Requirement
from memory_bank.store import api_keys
from memory_bank.store.engine import reading
from memory_bank.store.user_settings import UserSettings

# The header a tool call names its operation in (sent by mcp/executor.py).
OPERATION_HEADER = b"x-memory-bank-operation"


@dataclass(frozen=True)
class Caller:
    """An authenticated request's caller: the principal, and their user settings when read."""

    principal: auth.Principal
    user_settings: UserSettings | None


def identify(
    engine: Engine,
    settings: Settings,
    token: str,
    requirement: Requirement,
    admit: Callable[[auth.Principal], None] | None = None,
) -> Caller:
    """Authenticate a key and enforce what the requirement asks (401, 403 or 503 otherwise).

    admit, when given, sees the principal as soon as it is known (the rate limit's turn).
    """
    # One statement for the key and, where the operation needs them, the user's settings:
    # each round trip counts on MySQL/MariaDB, and this runs on every request.
    with reading(engine) as conn:
        if requirement.switches:
            found = api_keys.find_key_and_settings(conn, token)
            record, user_settings = found if found is not None else (None, None)
        else:
            record, user_settings = api_keys.find_key(conn, token), None
    principal = auth.principal_of(record)
    if admit is not None:
        admit(principal)
    if user_settings is not None:
        # Before the scopes, so a switched-off user learns that whatever the key may do.
        switches.check(settings, user_settings)
    # Connexion 3.3 ignores scopes on http/bearer schemes, so they are enforced here, from
    # the same security requirements the spec lists for each operation.
    auth.require(principal, requirement.scopes)
    return Caller(principal, user_settings)


def admitted(
    state: app_state.AppState, scope: Scope, token: str, requirement: Requirement
) -> Caller:
    """identify() within the rate limits: per client for refused keys, per key otherwise."""
    limiter: ratelimit.Limiter = state.limiter
    client = ratelimit.client_address(scope)
    limiter.before_lookup(client, token)
    try:
        return identify(
            state.db.auth,
            state.settings,
            token,
            requirement,
            lambda principal: limiter.succeeded(principal.key_id, token),
        )
    except Unauthorized:
        limiter.failed(client, token)
        raise


def bearer_info(token: str, request: Any) -> dict[str, Any]:
    """Connexion's hook for bearerAuth: the caller of this request, or a problem."""
    state = app_state.from_scope(request.scope)
    # Connexion splits the header once at whitespace; what trails the key is not part of it.
    token = token.strip()
    routing = request.scope.get("extensions", {}).get("connexion_routing", {})
    operation = routing.get("operation_id") or ""
    meant = header(request.scope, OPERATION_HEADER)
    if meant is not None and meant != operation:
        # A tool call (mcp/executor.py) names its operation: whatever its arguments made of
        # the path, it reaches that operation or nothing.
        raise InvalidRequest(f"This request was meant for {meant!r} but reached another route.")
    requirement = state.requirements.get(operation, Requirement())
    caller = admitted(state, request.scope, token, requirement)
    ratelimit.charged.set(caller.principal.key_id)
    # The access log names the key and (hashed) user of every authenticated request.
    request.scope.setdefault("state", {})["principal"] = caller.principal
    return {
        "sub": caller.principal.user_id,
        "caller": caller,
        "scope": list(caller.principal.scopes),
    }
