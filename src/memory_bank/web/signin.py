"""One-time, short-lived panel sign-in codes: signed by the server, spent once, traded for a key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from memory_bank.errors import Unauthorized
from memory_bank.ids import iso, utcnow
from memory_bank.store import api_keys, signins
from memory_bank.store.database import Database

PANEL_SOURCE = "panel"
_DOMAIN = b"memory-bank panel sign-in|"


@dataclass(frozen=True)
class PanelSession:
    """What a spent code buys: a short-lived key for the code's user."""

    key: str
    user_id: str
    expires_at: datetime


def _mac(secret: bytes, payload: str) -> str:
    """The code's signature (domain-separated from cursors, which share the secret)."""
    digest = hmac.new(secret, _DOMAIN + payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def make_code(secret: bytes, user_id: str, minutes: int) -> str:
    """A code that signs in as user_id once, within the next `minutes`."""
    expires = int((utcnow() + timedelta(minutes=minutes)).replace(tzinfo=UTC).timestamp())
    claims = {"u": user_id, "e": expires, "n": secrets.token_urlsafe(18)}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{payload}.{_mac(secret, payload)}"


def _claims(secret: bytes, code: str) -> tuple[str, datetime, str]:
    """(user, expiry, nonce) of a genuine code; 401 for anything else."""
    payload, dot, mac = code.partition(".")
    # Compared as bytes: compare_digest refuses non-ASCII str, and a code is any string sent.
    genuine = hmac.compare_digest(mac.encode(), _mac(secret, payload).encode())
    if not dot or not genuine:
        raise Unauthorized("This sign-in link is not valid.")
    raw = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    expires = datetime.fromtimestamp(int(raw["e"]), UTC).replace(tzinfo=None)
    return str(raw["u"]), expires, str(raw["n"])


def exchange(db: Database, secret: bytes, code: str, session_hours: int) -> PanelSession:
    """Spend a code once and create a short-lived panel key for its user."""
    user_id, expires, nonce = _claims(secret, code)
    now = utcnow()
    if expires <= now:
        raise Unauthorized(
            "This sign-in link has expired; restart the server or run memory-bank panel-link."
        )
    key_expires = now + timedelta(hours=session_hours)

    def work(conn: Connection) -> str:
        # Single-use, across workers too: a code spent twice is an IntegrityError.
        signins.spend(conn, user_id, nonce, expires, now)
        secret_key, _ = api_keys.create_key(
            conn,
            user_id,
            api_keys.PERSONAL_SCOPES,
            PANEL_SOURCE,
            expires_at=key_expires,
            label=f"panel sign-in {iso(now)}",
        )
        return secret_key

    try:
        key = db.writing(work)
    except IntegrityError:
        raise Unauthorized(
            "This sign-in link was already used; sign in with a key instead."
        ) from None
    return PanelSession(key=key, user_id=user_id, expires_at=key_expires)
