"""Who a stdio session acts as, settled before it starts: a key checked up front, or the local
user's own key.

A session that cannot act (a bad key, no server at --url) fails at start with a message that
says what to do, instead of listing tools that then fail on every call. Without a key, the
embedded server acts as the user `local` with one stored key that every session reuses: its
secret is derived from the database's signing secret, so nothing is created per session and
nothing is left behind. Whoever can read that database can derive it, but they can already
read every memory in it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from functools import partial

import httpx
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from memory_bank import auth
from memory_bank.errors import ApiError, Unauthorized
from memory_bank.ids import utcnow
from memory_bank.store import api_keys
from memory_bank.store.database import Database

LOCAL_USER = "local"
LOCAL_SCOPES = ("mcp:read", "mcp:write")
LOCAL_SOURCE = "mcp-stdio"
LOCAL_LABEL = "memory-bank mcp (stdio; reused by every session)"
MCP_SCOPES = ("mcp:read", "mcp:write")
KEY_HELP = (
    "Create a key with `memory-bank keys create --user <you> --scopes mcp:read,mcp:write` "
    "(on the server's database, for --url) and pass it as MEMORY_BANK_MCP_KEY (or --key)."
)
# Revoking the local key moves the user on to the next one derived; this many is plenty.
_GENERATIONS = 1000


class CannotStart(Exception):
    """The stdio server cannot act; the message says why and what to do."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        # Whether a database or server could not be reached (rather than a bad key or URL).
        self.unreachable = unreachable


def check_key(db: Database, token: str) -> tuple[str, ...]:
    """The scopes of a key for this database, or CannotStart saying why it cannot be used."""
    try:
        with db.reading() as conn:
            principal = auth.authenticate(conn, token)
    except Unauthorized as exc:
        raise CannotStart(f"MEMORY_BANK_MCP_KEY is refused: {exc.reason} {KEY_HELP}") from None
    except ApiError as exc:
        raise CannotStart(f"cannot check the key: {exc.detail}", unreachable=True) from None
    if not any(principal.has(s) for s in MCP_SCOPES):
        raise CannotStart(
            f"MEMORY_BANK_MCP_KEY has neither mcp:read nor mcp:write (it has "
            f"{', '.join(principal.scopes) or 'no scopes'}). {KEY_HELP}"
        )
    return principal.scopes


def local_key(db: Database, signing_secret: bytes) -> tuple[str, tuple[str, ...]]:
    """The local user's own key and its scopes: created once, then found by every session.

    If someone revoked it (or it expired), the next one in line is derived and created."""
    for generation in range(_GENERATIONS):
        secret = api_keys.KEY_PREFIX + _derive(signing_secret, generation)
        with db.reading() as conn:
            record = api_keys.find_key(conn, secret)
        if record is None:
            try:
                record = db.writing(partial(_create, secret=secret))
            except IntegrityError:
                # Another session created it at the same moment: it is there now.
                with db.reading() as conn:
                    record = api_keys.find_key(conn, secret)
        if record is not None and record.usable(utcnow()):
            return secret, record.scopes
    raise CannotStart("every local stdio key of this database is revoked")


def _derive(signing_secret: bytes, generation: int) -> str:
    """The secret part of the local user's key number `generation`."""
    message = f"memory-bank stdio key\0{LOCAL_USER}\0{generation}".encode()
    digest = hmac.new(signing_secret, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _create(conn: Connection, secret: str) -> api_keys.KeyRecord:
    """Store the local user's key (only its hash, like every key)."""
    _, record = api_keys.create_key(
        conn,
        LOCAL_USER,
        LOCAL_SCOPES,
        LOCAL_SOURCE,
        label=LOCAL_LABEL,
        body=secret.removeprefix(api_keys.KEY_PREFIX),
    )
    return record


def remote_tools(url: str, key: str) -> frozenset[str]:
    """The tools a memory-bank server at `url` lists for this key (which also checks the key),
    or CannotStart saying what went wrong."""
    endpoint = f"{url.rstrip('/')}/mcp"
    try:
        response = httpx.post(
            endpoint,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                "Authorization": f"Bearer {key}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION,
            },
            timeout=15,
        )
    except httpx.HTTPError as exc:
        raise CannotStart(
            f"cannot reach memory-bank at {url}: {type(exc).__name__}", unreachable=True
        ) from None
    if response.status_code in (401, 403):
        raise CannotStart(f"{url} refused the key: {_reason(response)} {KEY_HELP}")
    try:
        tools = response.json()["result"]["tools"]
        names = {str(tool["name"]) for tool in tools}
        # Capabilities kept off tools/list (x-mcp-listed: false) are in execute_capability's
        # list of names: the key may run those too.
        for tool in tools:
            if tool["name"] == "execute_capability":
                names |= {str(n) for n in tool["inputSchema"]["properties"]["name"]["enum"]}
        return frozenset(names)
    except (ValueError, KeyError, TypeError):
        raise CannotStart(
            f"{endpoint} answered {response.status_code} without a tool list: "
            "is --url the base URL of a memory-bank server?"
        ) from None


def _reason(response: httpx.Response) -> str:
    """Why the server refused: the first sentence of its detail (a JSON-RPC error's message,
    as /mcp answers, or a problem's detail)."""
    try:
        body = response.json()
        error = body.get("error")
        found = error.get("message", "") if isinstance(error, dict) else body.get("detail", "")
        detail = str(found)
    except (ValueError, AttributeError):
        detail = ""
    first = detail.split(". ")[0].strip()[:300]
    return f"{first.rstrip('.')}." if first else f"HTTP {response.status_code}."
