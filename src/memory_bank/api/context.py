"""What a handler knows of its request beyond its arguments: the caller."""

from __future__ import annotations

from connexion.context import context as connexion_context
from connexion.context import request as connexion_request

from memory_bank.auth import Principal
from memory_bank.errors import Unauthorized
from memory_bank.http.security import Caller
from memory_bank.store.user_settings import UserSettings


def current_caller() -> Caller:
    """The authenticated caller of the request being handled."""
    info = connexion_context.get("token_info") or {}
    caller = info.get("caller")
    if not isinstance(caller, Caller):
        raise Unauthorized("No credential.")
    return caller


def current_principal() -> Principal:
    """The principal of the request being handled."""
    return current_caller().principal


def current_user_settings() -> UserSettings:
    """The caller's own settings, read with the key (operations marked x-user-switches)."""
    found = current_caller().user_settings
    if found is None:
        raise RuntimeError("this operation is not marked x-user-switches in the spec")
    return found


def current_header(name: str) -> str | None:
    """A request header of the request being handled (None when absent); a header sent on
    several field lines is their values joined by commas, as RFC 9110 (5.3) reads them."""
    values: list[str] = connexion_request.headers.getlist(name)
    return ", ".join(values) if values else None
