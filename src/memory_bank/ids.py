"""Prefixed, time-sortable ids and the one timestamp format."""

from __future__ import annotations

import os
import re
import threading
import time
from datetime import UTC, datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last = [0, 0]  # last millisecond and random part, so ids stay ordered within a millisecond

ID_BODY = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def _encode(value: int, length: int) -> str:
    """Crockford base32 of an integer, left-padded."""
    out = []
    for _ in range(length):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """A new id like mem_01JF3Y…: 48-bit milliseconds then 80 random bits, sortable."""
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last[0]:
            # Same (or earlier) millisecond: keep increasing so ids from one process sort by time.
            ms = _last[0]
            rand = _last[1] + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 1
        _last[0], _last[1] = ms, rand
    return f"{prefix}_{_encode(ms, 10)}{_encode(rand, 16)}"


def id_time(value: str) -> datetime:
    """The time an id was minted (its first 48 bits), naive UTC; ValueError for a non-id."""
    _, sep, body = value.partition("_")
    if not sep or not ID_BODY.match(body):
        raise ValueError("not an id")
    ms = 0
    for char in body[:10]:
        ms = ms * 32 + _ALPHABET.index(char)
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def is_id(value: str, prefix: str) -> bool:
    """Whether a string is well-formed id with this prefix."""
    head, sep, body = value.partition("_")
    return sep == "_" and head == prefix and bool(ID_BODY.match(body))


def utcnow() -> datetime:
    """Now, in UTC, truncated to milliseconds (what the database keeps)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000, tzinfo=None)


def iso(value: datetime) -> str:
    """UTC ISO-8601 with milliseconds and a Z: 2026-12-02T09:31:54.123Z."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    """The naive UTC datetime an iso() string stands for."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
