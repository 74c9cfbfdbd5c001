"""Real OpenAI-compatible embedding server processes (tests/embedding_server.py), started and
stopped by tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from live_server import free_port
from polling import poll, wait_for

SCRIPT = Path(__file__).resolve().with_name("embedding_server.py")


class EmbeddingServers:
    """Real OpenAI-compatible embedding server processes, started and stopped by tests."""

    def __init__(self) -> None:
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def __call__(self, model: str = "other-minilm", *flags: str) -> str:
        """Start one server and return its base URL once it answers."""
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(port), model, *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        self.processes[base] = process
        answered = poll(
            lambda: httpx.get(base + "/stats", timeout=1) is not None,
            every=0.1,
            ignoring=(httpx.HTTPError,),
        )
        if not answered:
            raise RuntimeError("embedding server did not start")
        return base

    def kill(self, base: str) -> None:
        """Kill -9 the server at this URL and wait until its port refuses connections."""
        process = self.processes[base]
        process.kill()
        process.wait()

        def refused() -> bool:
            try:
                httpx.get(base + "/stats", timeout=0.5)
            except httpx.HTTPError:
                return True
            return False

        wait_for(
            refused,
            f"{base} to refuse connections after its process was killed",
            timeout=10,
            every=0.1,
        )

    def close(self) -> None:
        """Stop every server still running."""
        for process in self.processes.values():
            process.kill()
            process.wait()


def stats(base: str) -> dict[str, Any]:
    """What an embedding server received."""
    return dict(httpx.get(base + "/stats", timeout=5).json())
