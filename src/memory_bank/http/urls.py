"""The service's own base URL, and the host names it answers to (a Host header is checked
here before it is ever written into a link, a redirect or a header)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from starlette.types import Scope

from memory_bank.http.scope import header
from memory_bank.settings import Settings

# Always allowed: a request to these names came from this machine.
LOOPBACK = ("localhost", "127.0.0.1", "::1")
# Addresses a server binds to without being reachable by that name.
_WILDCARDS = {"", "0.0.0.0", "::"}
# A host name or IPv4 address, optionally with a port; or a bracketed IPv6 address.
_HOST = re.compile(r"^(?:(?P<name>[a-z0-9_.-]+)|\[(?P<ipv6>[0-9a-f:.]+)\])(?::[0-9]{1,5})?$")


@dataclass(frozen=True)
class AllowedHosts:
    """The host names (and *.domain suffixes) a request's Host header may carry."""

    names: frozenset[str]
    suffixes: tuple[str, ...]

    def allows(self, host: str | None) -> bool:
        """Whether a Host header value names this service (a malformed one never does)."""
        name = hostname(host)
        if name is None:
            return False
        return name in self.names or any(name.endswith(s) for s in self.suffixes)


def hostname(host: str | None) -> str | None:
    """The name in a Host header (lower case, port and trailing dot dropped); None if malformed."""
    if not host:
        return None
    found = _HOST.match(host.strip().lower())
    if found is None:
        return None
    name = found.group("ipv6") or found.group("name").rstrip(".")
    return name or None


@lru_cache(maxsize=16)
def allowed_hosts(settings: Settings) -> AllowedHosts:
    """The hosts these settings allow: loopback, the bind address, the public URL's, the list."""
    names = set(LOOPBACK)
    if settings.host.strip() not in _WILDCARDS:
        names.add(settings.host.strip().lower().strip("[]"))
    if settings.public_url:
        public = urlsplit(settings.public_url).hostname
        if public:
            names.add(public.lower())
    suffixes = []
    for entry in (e.strip().lower() for e in settings.allowed_hosts.split(",")):
        if entry.startswith("*."):
            suffixes.append(entry[1:])
        elif entry:
            names.add(entry.strip("[]").rstrip("."))
    return AllowedHosts(frozenset(names), tuple(suffixes))


def base_url(settings: Settings, scope: Scope) -> str:
    """The configured public URL, else the scheme and (allowed) Host the request was sent to.

    A Host that is not allowed never reaches a link: the request is refused before (421, see
    http/hosts.py), and here the server's own address stands in for it all the same.
    """
    if settings.public_url:
        return settings.base_url("")
    host = header(scope, b"host")
    if host is None or not allowed_hosts(settings).allows(host):
        address, port = scope.get("server") or ("127.0.0.1", settings.port)
        host = f"[{address}]:{port}" if ":" in str(address) else f"{address}:{port}"
    scheme = "https" if scope.get("scheme") == "https" else "http"
    return f"{scheme}://{host.strip()}"
