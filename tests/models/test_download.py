"""Model downloads over real HTTP (a server on 127.0.0.1): pinned by sha256, resumed after an
interruption, refused when corrupted, and sent through the proxy the environment names."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memory_bank.models import download
from package_index import Index, serving
from serving_thread import serve_in_thread

DATA = os.urandom(3 * download.CHUNK + 12345)
DIGEST = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def index() -> Iterator[Index]:
    """A file server holding DATA as /files/model.bin."""
    with serving() as found:
        found.add("model", "model.bin", DATA)
        yield found


def url(index: Index) -> str:
    return index.url.removesuffix("/simple") + "/files/model.bin"


def test_a_download_arrives_whole_with_progress(index: Index, tmp_path: Path) -> None:
    heard: list[tuple[int, int | None]] = []
    target = download.fetch(url(index), tmp_path / "model.bin", DIGEST, lambda *p: heard.append(p))
    assert target.read_bytes() == DATA
    assert heard[0] == (0, len(DATA)) and heard[-1] == (len(DATA), len(DATA))
    assert not (tmp_path / "model.bin.part").exists()
    # A file already there and pinned is not asked for again.
    download.fetch(url(index), target, DIGEST)
    assert len(index.asked) == 1


def test_a_corrupted_download_is_refused_and_deleted(index: Index, tmp_path: Path) -> None:
    index.corrupt = True
    with pytest.raises(download.DownloadError, match="not the pinned file"):
        download.fetch(url(index), tmp_path / "model.bin", DIGEST)
    assert not (tmp_path / "model.bin").exists()
    assert not (tmp_path / "model.bin.part").exists()


def test_an_interrupted_download_resumes_where_it_stopped(index: Index, tmp_path: Path) -> None:
    cut = download.CHUNK + 1000
    index.cut_after = cut
    # The process "dies" after the cut: one attempt, and the partial file stays.
    with pytest.raises(download.DownloadError):
        download.fetch(url(index), tmp_path / "model.bin", DIGEST, attempts=1)
    assert (tmp_path / "model.bin.part").stat().st_size == cut
    # The next start asks only for the rest.
    target = download.fetch(url(index), tmp_path / "model.bin", DIGEST)
    assert target.read_bytes() == DATA
    assert index.asked[-1] == ("/files/model.bin", f"bytes={cut}-")


def test_a_cut_connection_is_resumed_within_one_fetch(index: Index, tmp_path: Path) -> None:
    index.cut_after = 5000
    target = download.fetch(url(index), tmp_path / "model.bin", DIGEST)
    assert target.read_bytes() == DATA
    assert [r for _, r in index.asked] == [None, "bytes=5000-"]


def test_a_server_ignoring_the_range_starts_over(index: Index, tmp_path: Path) -> None:
    (tmp_path / "model.bin.part").write_bytes(DATA[:1000])
    index.ignore_range = True
    assert download.fetch(url(index), tmp_path / "model.bin", DIGEST).read_bytes() == DATA


def test_a_partial_file_of_something_else_is_replaced(index: Index, tmp_path: Path) -> None:
    (tmp_path / "model.bin.part").write_bytes(b"x" * 1000)
    assert download.fetch(url(index), tmp_path / "model.bin", DIGEST).read_bytes() == DATA
    assert [r for _, r in index.asked] == ["bytes=1000-", None]


@pytest.mark.parametrize(
    "address", ["http://example.org/model.bin", "ftp://127.0.0.1/model.bin", "file:///etc/passwd"]
)
def test_only_https_or_http_to_this_machine(address: str, tmp_path: Path) -> None:
    with pytest.raises(download.DownloadError, match="only https://"):
        download.fetch(address, tmp_path / "x", None)
    download.check_url("https://example.org/model.bin")
    download.check_url("http://localhost:8080/model.bin")
    download.check_url("http://[::1]:8080/model.bin")


class _Proxy(BaseHTTPRequestHandler):
    """A forward proxy that serves DATA for any absolute URL and refuses tunnels."""

    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        self.send_response(200)
        self.send_header("Content-Length", str(len(DATA)))
        self.end_headers()
        self.wfile.write(DATA)

    def do_CONNECT(self) -> None:
        self.seen.append(f"CONNECT {self.path}")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A proxy named by HTTP_PROXY and HTTPS_PROXY; what it was asked."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    serve_in_thread(server)
    address = f"http://127.0.0.1:{server.server_address[1]}"
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", address)
    monkeypatch.setenv("HTTPS_PROXY", address)
    _Proxy.seen = []
    try:
        yield _Proxy.seen
    finally:
        server.shutdown()
        server.server_close()


def test_downloads_go_through_the_proxy_the_environment_names(
    proxy: list[str], tmp_path: Path
) -> None:
    # Nothing listens on port 9: the file can only have come through the proxy.
    target = download.fetch("http://127.0.0.1:9/model.bin", tmp_path / "a.bin", DIGEST)
    assert target.read_bytes() == DATA
    assert proxy == ["GET http://127.0.0.1:9/model.bin"]
    # HTTPS is tunnelled through the same proxy (CONNECT); this one refuses, so it fails.
    with pytest.raises(download.DownloadError):
        download.fetch("https://models.invalid/model.bin", tmp_path / "b.bin", DIGEST, attempts=1)
    assert proxy[-1] == "CONNECT models.invalid:443"
