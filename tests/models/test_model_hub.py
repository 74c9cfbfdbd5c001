"""`local:<owner/model>` downloads its two files once from MEMORY_BANK_MODEL_HUB (here a hub
served from a temporary directory over real HTTP)."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from memory_bank.models import local_model
from memory_bank.models.embeddings import make_provider
from memory_bank.models.errors import EmbeddingsMisconfigured
from memory_bank.settings import Settings
from serving_thread import serve_in_thread


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    """A hub holding acme/mini (the packaged MiniLM files), its URL and the paths asked of it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    files = local_model._minilm_present()
    assert files is not None, "the dev install has the packaged MiniLM"
    hub = tmp_path / "hub" / "acme" / "mini" / "resolve" / "main"
    (hub / "onnx").mkdir(parents=True)
    shutil.copy(files.model, hub / "onnx" / "model.onnx")
    shutil.copy(files.tokenizer, hub / "tokenizer.json")
    asked: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(tmp_path / "hub"))
    )
    serve_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", asked
    finally:
        server.shutdown()
        server.server_close()
        local_model._provider.cache_clear()  # the cached providers point into this test's files


def test_a_hub_model_downloads_once_from_the_configured_hub(hub: tuple[str, list[str]]) -> None:
    url, asked = hub
    provider = make_provider(Settings(embeddings="local:acme/mini", model_hub=url))
    assert provider is not None and provider.model == "local:acme/mini"
    assert sorted(asked) == [
        "/acme/mini/resolve/main/onnx/model.onnx",
        "/acme/mini/resolve/main/tokenizer.json",
    ]
    packaged = local_model.load(local_model.MINILM)
    texts = ["the deploy key lives in the vault", "東京タワー"]
    assert np.allclose(provider.embed(texts), packaged.embed(texts), atol=1e-6)
    # A second process finds the files in the cache and asks the hub nothing.
    local_model._provider.cache_clear()
    assert make_provider(Settings(embeddings="local:acme/mini", model_hub=url)) is not None
    assert len(asked) == 2


def test_a_hub_without_the_model_refuses_to_start(hub: tuple[str, list[str]]) -> None:
    url, asked = hub
    with pytest.raises(EmbeddingsMisconfigured, match="could not download acme/other"):
        make_provider(Settings(embeddings="local:acme/other", model_hub=url))
    assert asked == ["/acme/other/resolve/main/onnx/model.onnx"]
