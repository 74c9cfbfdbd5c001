"""A real HTTP server process speaking the OpenAI embeddings API (POST /v1/embeddings), backed by
the packaged local model: the protocol-level stand-in for Ollama, vLLM, TEI or OpenAI in tests.

Run as `python tests/embedding_server.py PORT MODEL [--key K] [--delay S] [--fail N]`: --key
makes it require that bearer key (401 otherwise), --delay answers each request after S seconds,
--fail answers the first N requests with a 503, --refuse W answers 400 to a request with a text
containing W. GET /stats tells what it received.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memory_bank.models.local_model import load


def main() -> None:
    """Serve until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("model")
    parser.add_argument("--key", default="")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--fail", type=int, default=0)
    parser.add_argument("--refuse", default="", help="answer 400 to a request with this word")
    args = parser.parse_args()
    provider = load("all-MiniLM-L6-v2")
    lock = threading.Lock()
    stats: dict[str, Any] = {"requests": 0, "batches": [], "unauthorized": 0, "failed": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            """Quiet."""

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            with lock:
                self._answer(200, stats)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length))
            with lock:
                stats["requests"] += 1
                failing = stats["requests"] <= args.fail
            if args.key and self.headers.get("Authorization") != f"Bearer {args.key}":
                with lock:
                    stats["unauthorized"] += 1
                self._answer(401, {"error": {"message": "bad key"}})
                return
            if failing:
                with lock:
                    stats["failed"] += 1
                self._answer(503, {"error": {"message": "warming up"}})
                return
            if self.path != "/v1/embeddings" or request.get("model") != args.model:
                self._answer(404, {"error": {"message": "no such model"}})
                return
            texts = request["input"]
            texts = [texts] if isinstance(texts, str) else texts
            if args.refuse and any(args.refuse in t for t in texts):
                self._answer(400, {"error": {"message": "input refused"}})
                return
            with lock:
                stats["batches"].append(len(texts))
            time.sleep(args.delay)
            rows = provider.embed(texts)
            self._answer(
                200,
                {
                    "object": "list",
                    "model": args.model,
                    # Reversed on purpose: clients must order by "index".
                    "data": [
                        {"object": "embedding", "index": i, "embedding": rows[i].tolist()}
                        for i in reversed(range(len(texts)))
                    ],
                },
            )

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
