"""Serve the panel's static files at / with a strict Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import flask

STATIC = Path(__file__).with_name("static")

# No inline script or style attribute anywhere in the panel, so the policy can forbid both.
CSP = (
    "default-src 'self'; script-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_ASSETS = {p.name for p in STATIC.iterdir() if p.suffix in {".js", ".css", ".svg"}}


def install(flask_app: flask.Flask, enabled: bool) -> None:
    """Add the panel routes (none when the panel is switched off: / is then a plain 404)."""
    if not enabled:
        return
    flask_app.add_url_rule("/", "panel_index", _index, methods=["GET"])
    flask_app.add_url_rule("/panel/<name>", "panel_asset", _asset, methods=["GET"])


def _index() -> Any:
    """The panel page."""
    return _secure(flask.send_from_directory(STATIC, "index.html", max_age=0))


def _asset(name: str) -> Any:
    """One of the panel's scripts or stylesheets."""
    if name not in _ASSETS:
        flask.abort(404)
    return _secure(flask.send_from_directory(STATIC, name, max_age=0))


def _secure(response: flask.Response) -> flask.Response:
    """Panel responses: the CSP, no framing, and revalidate so an upgrade shows at once."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Cache-Control"] = "no-cache"
    return response
