"""API keys: create, look up, list and revoke (only hashes are stored)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select, update

from memory_bank.ids import new_id, utcnow
from memory_bank.store.schema import api_key

KEY_PREFIX = "mb_"
ALL_SCOPES = ("mcp:read", "mcp:write", "memory:review")


@dataclass(frozen=True)
class KeyRecord:
    """A stored API key (without its secret)."""

    id: str
    prefix: str
    user_id: str
    org_id: str | None
    scopes: tuple[str, ...]
    source: str
    label: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def usable(self, now: datetime) -> bool:
        """Whether the key is neither revoked nor expired."""
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now


def _hash(secret: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create_key(
    conn: Connection,
    user_id: str,
    scopes: tuple[str, ...],
    source: str,
    org_id: str | None = None,
    expires_at: datetime | None = None,
    label: str | None = None,
) -> tuple[str, KeyRecord]:
    """Create a key; returns the secret (shown once) and its record."""
    _check_name("user id", user_id, required=True)
    _check_name("org id", org_id)
    _check_name("source", source, required=True)
    _check_name("label", label)
    body = secrets.token_urlsafe(32)
    secret = KEY_PREFIX + body
    # The prefix is a lookup handle only; the rest of the key never leaves this function.
    prefix = body[:12]
    record = KeyRecord(
        id=new_id("key"),
        prefix=prefix,
        user_id=user_id,
        org_id=org_id,
        scopes=tuple(scopes),
        source=source,
        label=label,
        created_at=utcnow(),
        expires_at=expires_at,
        revoked_at=None,
    )
    conn.execute(
        insert(api_key).values(
            id=record.id,
            prefix=prefix,
            secret_hash=_hash(secret),
            user_id=user_id,
            org_id=org_id,
            scopes=" ".join(scopes),
            source=source,
            label=label,
            created_at=record.created_at,
            expires_at=expires_at,
        )
    )
    return secret, record


def _check_name(what: str, value: str | None, required: bool = False) -> None:
    """Refuse identity values that could alias another one (ValueError names the problem)."""
    if value is None and not required:
        return
    if not value or len(value) > 128:
        raise ValueError(f"{what} must be 1-128 characters")
    # MySQL/MariaDB compare VARCHARs ignoring trailing spaces: "alice " would read alice's data.
    if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"{what} must not have surrounding spaces or control characters")


def find_key(conn: Connection, secret: str) -> KeyRecord | None:
    """The record for a presented key, compared in constant time; None when unknown."""
    if not secret.startswith(KEY_PREFIX) or len(secret) < len(KEY_PREFIX) + 12:
        return None
    prefix = secret[len(KEY_PREFIX) : len(KEY_PREFIX) + 12]
    row = conn.execute(select(api_key).where(api_key.c.prefix == prefix)).first()
    if row is None or not hmac.compare_digest(row.secret_hash, _hash(secret)):
        return None
    return _record(row)


def list_keys(conn: Connection, user_id: str | None = None) -> list[KeyRecord]:
    """All keys (or one user's), oldest first."""
    stmt = select(api_key).order_by(api_key.c.id)
    if user_id is not None:
        stmt = stmt.where(api_key.c.user_id == user_id)
    return [_record(r) for r in conn.execute(stmt).all()]


def revoke_key(conn: Connection, key_id: str) -> bool:
    """Revoke a key by id; False when there is no such usable key."""
    result = conn.execute(
        update(api_key)
        .where(api_key.c.id == key_id, api_key.c.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return result.rowcount == 1


def count_keys(conn: Connection) -> int:
    """How many keys exist (revoked included)."""
    return len(conn.execute(select(api_key.c.id)).all())


def _record(row: object) -> KeyRecord:
    """A key record from a result row."""
    r = row._mapping  # type: ignore[attr-defined]
    return KeyRecord(
        id=r["id"],
        prefix=r["prefix"],
        user_id=r["user_id"],
        org_id=r["org_id"],
        scopes=tuple(r["scopes"].split()),
        source=r["source"],
        label=r["label"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
        revoked_at=r["revoked_at"],
    )
