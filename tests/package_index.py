"""A package index on 127.0.0.1 for tests: simple-API pages (PEP 691 JSON or PEP 503 HTML) and
files served with HTTP Range, which a test can cut short, corrupt, or hold back."""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from serving_thread import serve_in_thread


@dataclass
class Index:
    """What the index serves and what it was asked."""

    url: str  # the simple index's base URL
    files: dict[str, bytes] = field(default_factory=dict)  # file name -> bytes
    projects: dict[str, list[str]] = field(default_factory=dict)  # project -> file names
    html: bool = False  # answer in PEP 503 HTML instead of JSON
    cut_after: int | None = None  # close the next file response after this many bytes
    corrupt: bool = False  # flip a byte of every file sent
    ignore_range: bool = False  # answer 200 with the whole file even to a Range request
    gate: threading.Event = field(default_factory=threading.Event)  # file bodies wait for it
    asked: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)

    def add(self, project: str, name: str, data: bytes) -> None:
        """Serve data as the file `name` of project."""
        self.files[name] = data
        self.projects.setdefault(project, []).append(name)


def wheel(members: dict[str, bytes]) -> bytes:
    """A wheel (a zip) holding these files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _handler(index: Index) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            index.asked.append((self.path, self.headers.get("Range")))
            path = self.path.split("?")[0]
            if path.startswith("/simple/"):
                self._page(path.removeprefix("/simple/").strip("/"))
            elif path.startswith("/files/") and path.removeprefix("/files/") in index.files:
                self._file(index.files[path.removeprefix("/files/")])
            else:
                self._send(404, b"not here", "text/plain")

        def _page(self, project: str) -> None:
            names = index.projects.get(project)
            if names is None:
                self._send(404, b"no such project", "text/plain")
                return
            digests = {n: hashlib.sha256(index.files[n]).hexdigest() for n in names}
            if index.html:
                links = "".join(
                    f'<a href="../../files/{n}#sha256={d}">{n}</a><br/>' for n, d in digests.items()
                )
                body = f"<html><body>{links}</body></html>".encode()
                self._send(200, body, "text/html")
                return
            page = {
                "meta": {"api-version": "1.0"},
                "name": project,
                "files": [
                    {"filename": n, "url": f"/files/{n}", "hashes": {"sha256": d}}
                    for n, d in digests.items()
                ],
            }
            self._send(200, json.dumps(page).encode(), "application/vnd.pypi.simple.v1+json")

        def _file(self, data: bytes) -> None:
            if index.corrupt:
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            start = 0
            wanted = self.headers.get("Range")
            if wanted and not index.ignore_range:
                start = int(wanted.removeprefix("bytes=").split("-")[0])
                if start >= len(data):
                    self._send(416, b"", "text/plain")
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            index.gate.wait(120)
            cut, index.cut_after = index.cut_after, None
            if cut is not None:
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serving() -> Iterator[Index]:
    """An index on a free port of 127.0.0.1, for the duration of the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index := Index(url="")))
    server.daemon_threads = True
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    index.gate.set()
    serve_in_thread(server)
    try:
        yield index
    finally:
        index.gate.set()
        server.shutdown()
        server.server_close()
