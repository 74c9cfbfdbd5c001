"""Connexion's bearer hook: what the spec says an operation needs, enforced per request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from memory_bank import auth
from memory_bank import state as app_state
from memory_bank.domain import switches
from memory_bank.settings import Settings
from memory_bank.spec import Requirement
from memory_bank.store import keys
from memory_bank.store.engine import reading
from memory_bank.store.user_settings import UserSettings


@dataclass(frozen=True)
class Caller:
    """An authenticated request's caller: the principal, and their switches when read."""

    principal: auth.Principal
    switches: UserSettings | None


def identify(engine: Engine, settings: Settings, token: str, requirement: Requirement) -> Caller:
    """Authenticate a key and enforce what the requirement asks (401, 403 or 503 otherwise)."""
    # One statement for the key and, where the operation needs them, the user's switches:
    # each round trip counts on MySQL/MariaDB, and this runs on every request.
    with reading(engine) as conn:
        if requirement.switches:
            found = keys.find_key_and_switches(conn, token)
            record, mine = found if found is not None else (None, None)
        else:
            record, mine = keys.find_key(conn, token), None
    principal = auth.principal_of(record)
    if mine is not None:
        # Before the scopes, so a switched-off user learns that whatever the key may do.
        switches.check(settings, mine)
    # Connexion 3.3 ignores scopes on http/bearer schemes, so they are enforced here, from
    # the same security requirements the spec lists for each operation.
    auth.require(principal, requirement.scopes)
    return Caller(principal, mine)


def bearer_info(token: str, request: Any) -> dict[str, Any]:
    """Connexion's hook for bearerAuth: the caller of this request, or a problem."""
    state = app_state.from_scope(request.scope)
    routing = request.scope.get("extensions", {}).get("connexion_routing", {})
    requirement = state.requirements.get(routing.get("operation_id") or "", Requirement())
    caller = identify(state.auth_engine, state.settings, token, requirement)
    # The access log names the key and (hashed) user of every authenticated request.
    request.scope.setdefault("state", {})["principal"] = caller.principal
    return {
        "sub": caller.principal.user_id,
        "caller": caller,
        "scope": list(caller.principal.scopes),
    }
