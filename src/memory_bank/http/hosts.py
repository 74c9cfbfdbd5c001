"""Requests addressed to a host this service is not: refused before anything else runs."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from memory_bank import errors
from memory_bank.http.scope import header
from memory_bank.http.urls import AllowedHosts

# Probes and metrics are reached by address (a load balancer's health check, a scraper) and
# build no links from the Host header.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class AllowedHostsMiddleware:
    """Answer 421 misdirected_request when the Host header names another server.

    A Host the service does not know would otherwise end up in redirects, links and the MCP
    metadata, and a browser tricked by DNS rebinding sends the attacker's own name. A request
    without a Host (HTTP/1.0) passes: no link is then built from it (http/urls.py).
    """

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] == "http" and scope.get("path") not in PROBE_PATHS:
            host = header(scope, b"host")
            if host is not None and not self.allowed.allows(host):
                await errors.send(
                    send,
                    errors.MisdirectedRequest(
                        "This server does not answer to the host name in this request; its "
                        "operator can add it to MEMORY_BANK_ALLOWED_HOSTS.",
                        field="Host",
                    ),
                )
                return
        await self.app(scope, receive, send)
