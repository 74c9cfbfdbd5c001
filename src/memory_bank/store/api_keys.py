"""API keys: create, look up, list and revoke (only hashes are stored)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, bindparam, insert, select, update

from memory_bank.ids import new_id, utcnow
from memory_bank.store import direct_read, owners
from memory_bank.store.schema import api_key, user_settings
from memory_bank.store.user_settings import UserSettings

KEY_PREFIX = "mb_"
# What follows the prefix: URL-safe base64, as secrets.token_urlsafe(32) makes (43 characters).
_BODY = re.compile(r"[A-Za-z0-9_-]{32,}")
ALL_SCOPES = ("mcp:read", "mcp:write", "memory:review", "org:write", "org:admin")
# Scopes that act on an organisation's memories: a key needs an org to carry them.
ORG_SCOPES = ("org:write", "org:admin")
# Every scope a key without an org can carry (the first local key, panel sign-ins).
PERSONAL_SCOPES = tuple(s for s in ALL_SCOPES if s not in ORG_SCOPES)


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
    body: str | None = None,
) -> tuple[str, KeyRecord]:
    """Create a key; returns the secret (shown once) and its record. `body` is the part after
    `mb_` when the caller derives it (the stdio user's own key); by default it is random."""
    check_name("user id", user_id, required=True)
    check_name("org id", org_id)
    if owners.is_org(user_id):
        # The org namespace of owner keys (store/owners.py): such a user would read an org's rows.
        raise ValueError(f"user id must not start with {owners.ORG_PREFIX!r}")
    if org_id is not None and len(org_id) > owners.MAX_ORG_ID:
        raise ValueError(f"org id must be 1-{owners.MAX_ORG_ID} characters")
    if org_id is None and any(s in ORG_SCOPES for s in scopes):
        raise ValueError("org:write and org:admin need an org (--org)")
    check_name("source", source, required=True)
    check_name("label", label)
    if body is None:
        body = secrets.token_urlsafe(32)
    elif not _BODY.fullmatch(body):
        raise ValueError("a key body must be at least 32 URL-safe characters")
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


def check_name(what: str, value: str | None, required: bool = False) -> None:
    """Refuse identity values that could alias another one (ValueError names the problem)."""
    if value is None and not required:
        return
    if not value or len(value) > 128:
        raise ValueError(f"{what} must be 1-128 characters")
    # MySQL/MariaDB compare VARCHARs ignoring trailing spaces: "alice " would read alice's data.
    if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"{what} must not have surrounding spaces or control characters")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        # What a terminal's undecodable bytes become in argv; no database stores them.
        raise ValueError(f"{what} must be valid Unicode text")


def find_key(conn: Connection, secret: str) -> KeyRecord | None:
    """The record for a presented key, compared in constant time; None when unknown."""
    found = _lookup(conn, secret, _FIND)
    return None if found is None else _record(found)


def find_key_and_settings(conn: Connection, secret: str) -> tuple[KeyRecord, UserSettings] | None:
    """find_key() and the key's user's switches, read in one statement (one round trip)."""
    found = _lookup(conn, secret, _FIND_WITH_SWITCHES)
    if found is None:
        return None
    switches = UserSettings(bool(found["review_required"]), bool(found["memory_disabled"]))
    return _record(found), switches


def _lookup(conn: Connection, secret: str, statement: Select[Any]) -> Mapping[str, Any] | None:
    """The api_key row (plus whatever the statement adds) whose hash matches the secret."""
    if not secret.startswith(KEY_PREFIX) or len(secret) < len(KEY_PREFIX) + 12:
        return None
    prefix = secret[len(KEY_PREFIX) : len(KEY_PREFIX) + 12]
    row: Mapping[str, Any] | None
    if direct_read.available(conn):
        # MySQL/MariaDB: straight through the driver (this runs on every request).
        row = direct_read.fetch_one(conn, statement, {"prefix": prefix})
    else:
        found = conn.execute(statement, {"prefix": prefix}).first()
        row = None if found is None else dict(found._mapping)
    if row is None or not hmac.compare_digest(row["secret_hash"], _hash(secret)):
        return None
    return row


def _switch(column: Any) -> Any:
    """One of the key owner's switches as a correlated subquery (NULL when never set)."""
    owner = user_settings.c.user_id == api_key.c.user_id
    return select(column).where(owner).scalar_subquery().label(column.name)


# Built once: a statement object reused across calls keeps its cache key, so SQLAlchemy's
# per-call work is a dictionary lookup (this runs on every authenticated request).
_FIND = select(api_key).where(api_key.c.prefix == bindparam("prefix"))
_FIND_WITH_SWITCHES = select(
    api_key,
    _switch(user_settings.c.review_required),
    _switch(user_settings.c.memory_disabled),
).where(api_key.c.prefix == bindparam("prefix"))


def list_keys(conn: Connection, user_id: str | None = None) -> list[KeyRecord]:
    """All keys (or one user's), oldest first."""
    stmt = select(api_key).order_by(api_key.c.id)
    if user_id is not None:
        stmt = stmt.where(api_key.c.user_id == user_id)
    return [_record(dict(r._mapping)) for r in conn.execute(stmt).all()]


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


def _record(r: Mapping[str, Any]) -> KeyRecord:
    """A key record from a result row's mapping."""
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
