"""Credential -> principal, and scope checks; nothing else."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from memory_bank.errors import InsufficientScope, Unauthorized
from memory_bank.ids import utcnow
from memory_bank.store import api_keys, owners


@dataclass(frozen=True)
class Principal:
    """Who is calling: taken from the credential only, never from the request."""

    user_id: str
    org_id: str | None
    scopes: tuple[str, ...]
    source: str
    key_id: str

    def has(self, scope: str) -> bool:
        """Whether the credential carries a scope."""
        return scope in self.scopes


def principal_of(record: api_keys.KeyRecord | None) -> Principal:
    """The principal of a looked-up key; 401 when there is none or it is revoked or expired."""
    if record is None:
        raise Unauthorized.invalid_token("The API key is not valid.")
    if not record.usable(utcnow()):
        raise Unauthorized.invalid_token("The API key is revoked or expired.")
    if owners.is_org(record.user_id):
        # Keys are not issued to org owner keys; one stored by hand must not read an org's rows.
        raise Unauthorized.invalid_token("The API key is not valid.")
    return Principal(
        user_id=record.user_id,
        org_id=record.org_id,
        scopes=record.scopes,
        source=record.source,
        key_id=record.id,
    )


def authenticate(conn: Connection, token: str) -> Principal:
    """The principal of a presented key, or 401."""
    return principal_of(api_keys.find_key(conn, token))


def require(principal: Principal, scopes: tuple[str, ...]) -> None:
    """403 insufficient_scope unless the principal has every one of these scopes."""
    for scope in scopes:
        if not principal.has(scope):
            raise InsufficientScope(scope)
