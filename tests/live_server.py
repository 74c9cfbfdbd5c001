"""A real `memory-bank serve` process for tests (importable: conftest modules are not)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from dataclasses import dataclass

from polling import poll


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    """A real `memory-bank serve` process."""

    base_url: str
    process: subprocess.Popen[str]
    first_output: str


def start_server(
    database_url: str, extra_env: dict[str, str | None] | None = None, workers: int = 1
) -> LiveServer:
    """Start `memory-bank serve` on a free port and wait until /readyz answers (a None in
    extra_env removes that variable)."""
    import httpx

    port = free_port()
    env = {
        **os.environ,
        "MEMORY_BANK_DATABASE_URL": database_url,
        "MEMORY_BANK_LOG_LEVEL": "warning",
        # Semantic search is on by default; tests that are not about it run lexical (fast).
        "MEMORY_BANK_EMBEDDINGS": "off",
        **(extra_env or {}),
    }
    env = {name: value for name, value in env.items() if value is not None}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memory_bank.cli",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    lines: list[str] = []

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(
                "server exited:\n" + (process.stdout.read() if process.stdout else "")
            )
        return httpx.get(base + "/readyz", timeout=1).status_code == 200

    if not poll(ready, every=0.2, ignoring=(httpx.HTTPError,)):
        process.kill()
        raise RuntimeError("server did not become ready")
    # serve prints its banner before uvicorn starts; read what is there without blocking.
    os.set_blocking(process.stdout.fileno(), False)  # type: ignore[union-attr]
    with contextlib.suppress(OSError, TypeError):
        lines.append(process.stdout.read() or "")  # type: ignore[union-attr]
    return LiveServer(base_url=base, process=process, first_output="".join(lines))


def stop_server(server: LiveServer) -> None:
    """Stop a server process started by start_server."""
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    if server.process.stdout:
        server.process.stdout.close()
