"""Request bodies with a real slow client: one that stops sending is cut off, not waited on."""

from __future__ import annotations

import socket
import time

from live_server import start_server, stop_server
from memory_bank.store import api_keys
from memory_bank.store.engine import make_engine, writing


def _read_until_closed(sock: socket.socket, limit: float) -> bytes:
    """Everything the server sends until it closes the connection (or limit seconds pass)."""
    sock.settimeout(limit)
    received = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return received
        received += chunk


def test_a_body_that_stops_arriving_is_a_408_and_the_connection_closes(tmp_path):
    url = f"sqlite:///{tmp_path / 'slow.db'}"
    server = start_server(url, {"MEMORY_BANK_BODY_TIMEOUT_SECONDS": "2"})
    try:
        engine = make_engine(url, 1)
        secret, _ = writing(
            engine, lambda c: api_keys.create_key(c, "alice", api_keys.PERSONAL_SCOPES, "t")
        )
        engine.dispose()
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + f"Authorization: Bearer {secret}\r\n".encode()
                + b"Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
                + b'{"content": "half of a'
            )
            started = time.monotonic()
            answer = _read_until_closed(sock, 15)
            waited = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"request_timeout" in answer
        assert 1.5 <= waited < 10, waited
        # Nothing half-received was saved.
        engine = make_engine(url, 1)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT COUNT(*) FROM memory").scalar() == 0
        engine.dispose()
    finally:
        stop_server(server)
