"""Model files fetched over HTTPS: hash-pinned, resumable, with progress, through HTTPS_PROXY.

Standard library only (urllib), so it works in any environment the package installs into:
no pip, no hub client. Each request's opener reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY from
the environment, and tunnels HTTPS through the proxy with CONNECT. A file grows in
`<target>.part` and is renamed to target only once its sha256 is the pinned one; an
interrupted download resumes from the partial file with an HTTP Range request.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from memory_bank import __version__
from memory_bank.models.digest import sha256_file

log = logging.getLogger("memory_bank.models")

# Told how many bytes are in (resumed ones included) and how many there are in all (None when
# the server does not say).
Progress = Callable[[int, int | None], None]

CHUNK = 1 << 20
# Tries per file; each resumes where the last one stopped.
ATTEMPTS = 4
TIMEOUT_SECONDS = 60


class DownloadError(OSError):
    """A file could not be downloaded whole, or what arrived is not the pinned file."""


def check_url(url: str) -> None:
    """Refuse anything but HTTPS; plain HTTP only to this machine (a local mirror, tests)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and _loopback(parts.hostname):
        return
    raise DownloadError(f"refusing to download {url}: only https:// (or http:// to this machine)")


def _loopback(host: str) -> bool:
    """Whether host names this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def fetch(
    url: str,
    target: Path,
    sha256: str | None,
    progress: Progress | None = None,
    attempts: int = ATTEMPTS,
) -> Path:
    """Download url to target, resuming a partial download, and return target.

    With sha256, a file already at target that matches is kept as it is, and a download that
    does not match is deleted and refused (DownloadError): a corrupted file is never used.
    """
    check_url(url)
    if sha256 and target.is_file() and sha256_file(target) == sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    resumed = partial.exists()
    try:
        return _fetch(url, target, partial, sha256, progress, attempts)
    except Corrupt:
        if not resumed:
            raise
    # The partial file we resumed from was not the start of this file: once more from zero.
    return _fetch(url, target, partial, sha256, progress, attempts)


class Corrupt(DownloadError):
    """What arrived is not the pinned file (it was deleted)."""


def _fetch(
    url: str,
    target: Path,
    partial: Path,
    sha256: str | None,
    progress: Progress | None,
    attempts: int,
) -> Path:
    """fetch's download, resuming whatever partial holds."""
    last: Exception | None = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(min(0.5 * 2 ** (attempt - 1), 10))
            log.warning("download of %s interrupted (%s); resuming", target.name, last)
        try:
            _transfer(url, partial, progress)
            break
        # OSError covers URLError, HTTP errors and timeouts; HTTPException a cut connection.
        except (OSError, http.client.HTTPException) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code < 500 and exc.code != 429:
                raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
            last = exc
    else:
        raise DownloadError(f"could not download {url} ({last})")
    if sha256:
        got = sha256_file(partial)
        if got != sha256:
            partial.unlink()
            raise Corrupt(
                f"{url} is not the pinned file (sha256 {got}, expected {sha256}); "
                "deleted it, the next try downloads it again"
            )
    os.replace(partial, target)
    return target


def open_url(request: urllib.request.Request) -> http.client.HTTPResponse:
    """Send a request through an opener made now, so the proxy variables in the environment
    at this moment apply (urlopen's shared opener keeps those of its first use)."""
    response: http.client.HTTPResponse = urllib.request.build_opener().open(
        request, timeout=TIMEOUT_SECONDS
    )
    return response


def _transfer(url: str, partial: Path, progress: Progress | None) -> None:
    """One request: the rest of the file appended to partial (or all of it, when the server
    ignores the range)."""
    have = partial.stat().st_size if partial.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": f"memory-bank/{__version__}"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = open_url(request)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing past what we have: it is all here already
            exc.close()
            return
        raise
    with response:
        if have and response.status != 206:
            have = 0  # the server sent the whole file: start over
        length = response.headers.get("Content-Length")
        total = have + int(length) if length is not None else None
        with partial.open("ab" if have else "wb") as out:
            done = have
            if progress:
                progress(done, total)
            while chunk := response.read(CHUNK):
                out.write(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)
        if total is not None and done < total:
            raise DownloadError(f"connection closed after {done} of {total} bytes")
