"""The OpenAI-compatible provider: POST {base}/v1/embeddings on any server that speaks it
(Ollama, vLLM, TEI, llama.cpp, LM Studio, OpenAI itself).

Batched (up to BATCH texts a request), each request with a timeout, retried with exponential
backoff on connection errors, timeouts, 429 and 5xx. The API key travels only in the
Authorization header: no log line, exception or repr carries it.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request

import numpy as np

log = logging.getLogger("memory_bank.embeddings")

BATCH = 64
RETRIES = 3
BACKOFF_SECONDS = 0.2


class ProviderError(RuntimeError):
    """The server did not give embeddings (after retries); the message names no secret.
    retryable is False when the server refused the request itself (a 4xx other than 429):
    sending it again would fail again."""

    def __init__(self, message: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class RemoteProvider:
    """Embeddings from an OpenAI-compatible server."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 5.0) -> None:
        base = base_url.rstrip("/")
        self._url = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
        self._model_name = model
        self.model = f"openai:{model}"
        self._key = api_key
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"RemoteProvider({self._url!r}, {self._model_name!r})"

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length float32 row per text, BATCH texts a request."""
        rows = [self._request(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        out = np.vstack(rows).astype(np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _request(self, texts: list[str]) -> np.ndarray:
        """One batch, retried with backoff on errors worth retrying."""
        body = json.dumps({"model": self._model_name, "input": texts}).encode()
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        for attempt in range(RETRIES + 1):
            request = urllib.request.Request(self._url, body, headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as response:
                    return _vectors(json.loads(response.read()), len(texts))
            except urllib.error.HTTPError as exc:
                retry = exc.code == 429 or exc.code >= 500
                reason = f"HTTP {exc.code}"
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                retry = True
                reason = type(exc).__name__
            except (ValueError, KeyError, TypeError):
                retry = False
                reason = "an answer that is not an embeddings list"
            if not retry or attempt == RETRIES:
                raise ProviderError(f"embeddings server {self._url}: {reason}", retry)
            time.sleep(BACKOFF_SECONDS * 2**attempt)
        raise AssertionError("unreachable")


def _vectors(answer: dict[str, object], count: int) -> np.ndarray:
    """The embeddings of an OpenAI-style answer, in input order."""
    data = answer["data"]
    if not isinstance(data, list) or len(data) != count:
        raise ValueError("wrong number of embeddings")
    ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
    return np.array([item["embedding"] for item in ordered], dtype=np.float32)
