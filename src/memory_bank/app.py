"""The app factory: engine, migrations, Connexion app, error rendering, middleware."""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import connexion
from connexion.datastructures import MediaTypeDict
from connexion.jsonifier import Jsonifier
from connexion.middleware import MiddlewarePosition
from connexion.resolver import Resolver
from connexion.validators import VALIDATOR_MAP

from memory_bank.api import HANDLER_MODULES
from memory_bank.domain.reindex import prepare
from memory_bank.http import cors, exceptions, logs, metrics, ratelimit, security
from memory_bank.http.middleware import OuterMiddleware
from memory_bank.http.validation import CompiledJSONBodyValidator, NamingParameterValidator
from memory_bank.mcp.http import McpMiddleware
from memory_bank.settings import Settings
from memory_bank.spec import load_spec
from memory_bank.state import AppState
from memory_bank.store.engine import make_auth_engine, make_engine
from memory_bank.store.migrate import signing_secret
from memory_bank.web import routes as panel_routes

log = logging.getLogger("memory_bank")


def _handlers() -> dict[str, Callable[..., Any]]:
    """operationId -> handler function, from the handler modules."""
    found: dict[str, Callable[..., Any]] = {}
    for name in HANDLER_MODULES:
        module = importlib.import_module(f"memory_bank.api.{name}")
        for attr, value in vars(module).items():
            public = callable(value) and attr[:1].islower()
            if public and getattr(value, "__module__", None) == module.__name__:
                found[attr] = value
    return found


def create_app(
    settings: Settings | None = None,
    *,
    run_migrations: bool = True,
    spec_file: Path | None = None,
) -> Any:
    """Build the whole service for these settings and return its ASGI app (a Connexion app)."""
    settings = settings or Settings.from_env()
    logging.basicConfig(level=settings.log_level.upper())
    engine = make_engine(settings.database_url, settings.db_pool_size)
    if run_migrations:
        prepare(engine)
    spec = load_spec(spec_file)
    state = AppState(
        settings=settings,
        engine=engine,
        secret=signing_secret(engine),
        spec=spec,
        auth_engine=make_auth_engine(engine),
        requirements=security.requirements(spec),
    )
    handlers = _handlers()
    missing = [op for op in state.requirements if op not in handlers]
    if missing:
        # A spec operation without a handler is a broken build, not a 501 at run time.
        raise RuntimeError(f"no handler for operation(s): {', '.join(sorted(missing))}")

    app = connexion.AsyncApp(__name__)
    app.add_api(
        load_spec(spec_file),
        resolver=Resolver(function_resolver=lambda op_id: handlers[op_id]),
        strict_validation=True,
        validator_map={
            "parameter": NamingParameterValidator,
            # Connexion's body validators, with JSON checked by a compiled schema first.
            "body": MediaTypeDict({**VALIDATOR_MAP["body"], "*/*json": CompiledJSONBodyValidator}),
        },
        jsonifier=Jsonifier(json),
        validate_responses=settings.validate_responses,
        swagger_ui_options=connexion.options.SwaggerUIOptions(
            swagger_ui_path="/docs", spec_path="/openapi.json"
        ),
    )
    exceptions.install(app)
    panel_routes.install(app, settings.panel_enabled)
    _add_reliability_middleware(app, settings)
    app.add_middleware(OuterMiddleware, position=MiddlewarePosition.BEFORE_EXCEPTION, state=state)
    if settings.rate_limit_per_minute > 0:
        # Inside OuterMiddleware, so a 429 carries the security headers too.
        app.add_middleware(
            ratelimit.RateLimitMiddleware,
            position=MiddlewarePosition.BEFORE_EXCEPTION,
            per_minute=settings.rate_limit_per_minute,
        )
    # MCP at /mcp (and its RFC 9728 metadata); inside OuterMiddleware so it gets the same
    # body cap and security headers, and it sees the lifespan that runs its session manager.
    app.add_middleware(McpMiddleware, position=MiddlewarePosition.BEFORE_EXCEPTION, state=state)
    state.extras["connexion_app"] = app
    app.memory_bank_state = state
    return app


def state_of(app: Any) -> AppState:
    """The shared state of an app made by create_app (for the CLI's hooks and for tests)."""
    state: AppState = app.memory_bank_state
    return state


def _add_reliability_middleware(app: Any, settings: Settings) -> None:
    """CORS, request ids and logs, then metrics, outermost first (all outside the body cap)."""
    before = MiddlewarePosition.BEFORE_EXCEPTION
    allowed = cors.origins(settings.cors_origins)
    if allowed:
        app.add_middleware(cors.cors_middleware, position=before, allowed=allowed)
    logs.configure_access_log(settings.log_level)
    app.add_middleware(logs.RequestLogMiddleware, position=before)
    if settings.metrics_enabled:
        app.add_middleware(metrics.MetricsMiddleware, position=before)
