"""Opaque, signed pagination cursors: a client cannot forge or edit one."""

from __future__ import annotations

import base64
import hashlib
import hmac

from memory_bank.errors import InvalidCursor


def _sign(secret: bytes, payload: str) -> str:
    """A short MAC of a payload."""
    digest = hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:12]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def encode(secret: bytes, user_id: str, listing: str, last_id: str) -> str:
    """A cursor that resumes after last_id, for this user and this listing only."""
    payload = base64.urlsafe_b64encode(last_id.encode()).decode().rstrip("=")
    return f"{payload}.{_sign(secret, _bound(user_id, listing, last_id))}"


def decode(secret: bytes, user_id: str, listing: str, cursor: str) -> str:
    """The id a cursor resumes after; 400 invalid_cursor unless issued to this user and listing."""
    payload, dot, mac = cursor.partition(".")
    try:
        if not dot:
            raise ValueError("no signature")
        # validate=True: a respelled cursor (spaces, stray characters) is not the one issued.
        padded = payload + "=" * (-len(payload) % 4)
        last_id = base64.b64decode(padded, altchars=b"-_", validate=True).decode()
    except ValueError:
        raise InvalidCursor("The cursor is malformed.", field="cursor") from None
    if not hmac.compare_digest(mac, _sign(secret, _bound(user_id, listing, last_id))):
        raise InvalidCursor("The cursor was not issued for this listing.", field="cursor")
    return last_id


def _bound(user_id: str, listing: str, last_id: str) -> str:
    """What a cursor's MAC covers: a memories cursor handed to the revisions listing is refused."""
    return f"{user_id}|{listing}|{last_id}"
