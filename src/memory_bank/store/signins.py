"""Spent panel sign-in codes: each (user, nonce) once, kept until the code would have expired."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, insert

from memory_bank.store.schema import panel_signin_used


def spend(conn: Connection, user_id: str, nonce: str, expires: datetime, now: datetime) -> None:
    """Record a code as used, forgetting the user's codes that expired before now.

    The primary key (user, nonce) makes a code single-use, across workers too: spending one
    twice raises IntegrityError.
    """
    conn.execute(
        delete(panel_signin_used).where(
            panel_signin_used.c.user_id == user_id, panel_signin_used.c.expires_at < now
        )
    )
    conn.execute(insert(panel_signin_used).values(user_id=user_id, nonce=nonce, expires_at=expires))
