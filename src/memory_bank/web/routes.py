"""Serve the panel's static files at / with a strict Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response

STATIC = Path(__file__).with_name("static")

# No inline script or style attribute anywhere in the panel, so the policy can forbid both.
CSP = (
    "default-src 'self'; script-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_ASSETS = {p.name for p in STATIC.iterdir() if p.suffix in {".js", ".css", ".svg"}}


def install(app: Any, enabled: bool) -> None:
    """Add the panel routes to a Connexion app (none when off: / is then a plain 404)."""
    if not enabled:
        return
    app.add_url_rule("/", "panel_index", _index, methods=["GET", "HEAD"])
    app.add_url_rule("/panel/{name}", "panel_asset", _asset, methods=["GET", "HEAD"])


async def _index(_request: Request) -> Response:
    """The panel page."""
    return _secure(FileResponse(STATIC / "index.html"))


async def _asset(request: Request) -> Response:
    """One of the panel's scripts or stylesheets."""
    name = request.path_params["name"]
    if name not in _ASSETS:
        # The same 404 problem as any unknown route.
        raise HTTPException(404)
    return _secure(FileResponse(STATIC / name))


def _secure(response: Response) -> Response:
    """Panel responses: the CSP, no framing, and revalidate so an upgrade shows at once."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Cache-Control"] = "no-cache"
    return response
