"""The app factory: engine, migrations, Connexion app, error rendering, middleware."""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import connexion
from connexion.datastructures import MediaTypeDict
from connexion.jsonifier import Jsonifier
from connexion.middleware import MiddlewarePosition
from connexion.resolver import Resolver
from connexion.validators import VALIDATOR_MAP
from sqlalchemy import Engine
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from memory_bank.api import HANDLER_MODULES
from memory_bank.domain import vector_jobs
from memory_bank.domain.reindex import prepare
from memory_bank.domain.semantic import from_settings
from memory_bank.errors import ServiceUnavailable
from memory_bank.http import cors, exceptions, logs, metrics, ratelimit, withhold
from memory_bank.http.body import BodyDeadlineMiddleware, BodyLimitMiddleware, ChunkedBodyMiddleware
from memory_bank.http.headers import SecurityHeadersMiddleware
from memory_bank.http.hosts import AllowedHostsMiddleware
from memory_bank.http.lifespan import AppStateMiddleware, BackgroundWorkMiddleware
from memory_bank.http.mediatype import MediaTypeMiddleware
from memory_bank.http.ndjson import NDJSON, NdjsonResponseValidator
from memory_bank.http.paths import CanonicalPathMiddleware, route_table
from memory_bank.http.urls import allowed_hosts
from memory_bank.http.validation import CompiledJSONBodyValidator, NamingParameterValidator
from memory_bank.mcp.endpoint import McpMiddleware
from memory_bank.models.errors import EmbeddingsMisconfigured
from memory_bank.settings import Settings
from memory_bank.spec import load_spec, requirements
from memory_bank.state import AppState, state_of
from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import signing_secret
from memory_bank.store.sealing import master_key
from memory_bank.store.sealing.crypto import KeyProblem
from memory_bank.web import routes as panel_routes

log = logging.getLogger("memory_bank")


def _handlers() -> dict[str, Callable[..., Any]]:
    """operationId -> handler function, from the handler modules (a name twice is an error)."""
    found: dict[str, Callable[..., Any]] = {}
    for name in HANDLER_MODULES:
        module = importlib.import_module(f"memory_bank.api.{name}")
        for attr, value in vars(module).items():
            public = callable(value) and attr[:1].islower()
            if public and getattr(value, "__module__", None) == module.__name__:
                if attr in found:
                    raise RuntimeError(
                        f"two handlers named {attr}: {found[attr].__module__}, {module.__name__}"
                    )
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
    engine = make_engine(settings.database_url.reveal(), settings.db_pool_size)
    # A wrong or missing master key stops here (crypto.KeyProblem), before anything is served.
    database = partial(_database, settings=settings)
    db = prepare(engine, database) if run_migrations else database(engine)
    spec = load_spec(spec_file)
    secret = signing_secret(engine)
    # A MEMORY_BANK_RATE_LIMIT_STORAGE that cannot work stops here (a ValueError).
    limiter = ratelimit.Limiter.from_settings(settings, secret)
    # A bad MEMORY_BANK_EMBEDDINGS stops here too (EmbeddingsMisconfigured), model loaded.
    semantic = from_settings(settings)
    # Saves queue an embedding job from now on (the index rebuild above queues none).
    db.queue_vectors = semantic is not None
    state = AppState(
        settings=settings,
        db=db,
        secret=secret,
        spec=spec,
        requirements=requirements(spec),
        semantic=semantic,
        limiter=limiter,
    )
    handlers = _handlers()
    missing = [op for op in state.requirements if op not in handlers]
    if missing:
        # A spec operation without a handler is a broken build, not a 501 at run time.
        raise RuntimeError(f"no handler for operation(s): {', '.join(sorted(missing))}")

    app = connexion.AsyncApp(__name__)
    app.add_api(
        load_spec(spec_file),
        # Every handler answers through withhold.guarded: a key without mcp:read is never
        # shown stored content, whichever operation it calls (docs/acl.md).
        resolver=Resolver(
            function_resolver=lambda op_id: withhold.guarded(
                handlers[op_id], state.requirements[op_id].scopes
            )
        ),
        strict_validation=True,
        validator_map={
            "parameter": NamingParameterValidator,
            # Connexion's body validators, with JSON checked by a compiled schema first.
            "body": MediaTypeDict({**VALIDATOR_MAP["body"], "*/*json": CompiledJSONBodyValidator}),
            # The export's lines, each checked (validate_responses, on in tests).
            "response": MediaTypeDict(
                {**VALIDATOR_MAP["response"], NDJSON: NdjsonResponseValidator}
            ),
        },
        jsonifier=Jsonifier(json),
        validate_responses=settings.validate_responses,
        swagger_ui_options=connexion.options.SwaggerUIOptions(
            swagger_ui_path="/docs", spec_path="/openapi.json"
        ),
    )
    exceptions.install(app)
    panel_routes.install(app, settings.panel_enabled)
    for middleware, options in _middleware(settings, state, app):
        app.add_middleware(middleware, position=MiddlewarePosition.BEFORE_EXCEPTION, **options)
    app.memory_bank_state = state
    return app


def _database(engine: Engine, settings: Settings) -> Database:
    """The app's Database over engine, sealing with the configured master key (if any)."""
    return Database(engine, keyring=master_key.open_keyring(engine, settings))


def _middleware(settings: Settings, state: AppState, app: Any) -> list[tuple[Any, dict[str, Any]]]:
    """The ASGI middleware around the app, outermost first, each with its options.

    app is the whole app: the MCP endpoint sends each tool call back through it, the same road
    a REST request takes (docs/architecture.md).
    """
    logs.configure_access_log(settings.log_level)
    allowed = cors.origins(settings.cors_origins)
    stack: list[tuple[Any, dict[str, Any]]] = [
        # The client address and scheme a trusted proxy reports, before anything reads them.
        *(
            [(ProxyHeadersMiddleware, {"trusted_hosts": settings.trusted_proxies})]
            if settings.trusted_proxies.strip()
            else []
        ),
        *([(cors.cors_middleware, {"allowed": allowed})] if allowed else []),
        # Request ids, access lines and metrics see every answer, 421s, 413s and 429s included.
        (logs.RequestLogMiddleware, {}),
        *(
            [(metrics.MetricsMiddleware, {"gauges": partial(_gauges, state)})]
            if settings.metrics_enabled
            else []
        ),
        # Everything inside answers with the security headers, problems from middleware too.
        (SecurityHeadersMiddleware, {}),
        (AllowedHostsMiddleware, {"allowed": allowed_hosts(settings)}),
        (BackgroundWorkMiddleware, {"state": state}),
        (AppStateMiddleware, {"state": state}),
        (CanonicalPathMiddleware, {"routes": route_table(state.spec)}),
        (MediaTypeMiddleware, {}),
        (BodyLimitMiddleware, {"cap": settings.max_body_bytes}),
        (BodyDeadlineMiddleware, {"seconds": settings.body_timeout_seconds}),
        (ChunkedBodyMiddleware, {}),
        # MCP at /mcp (and its RFC 9728 metadata), with the same body cap and headers; it sees
        # the lifespan that runs its session manager.
        (McpMiddleware, {"state": state, "loopback": app}),
    ]
    return stack


def _gauges(state: AppState) -> dict[str, tuple[str, float]]:
    """What /metrics reads at scrape time: the backends that do not answer (with several), and
    the embedding backlog when semantic search is on.

    The backlog is a count over every owner, so it is the operator's (metrics), not /readyz's,
    which anyone may call. While a backend is down it is left out rather than given short.
    """
    gauges: dict[str, tuple[str, float]] = {}
    down: list[str] = []
    if state.db.backends:
        down = state.db.unreachable()
        text = "Database backends that do not answer through the head."
        gauges["memory_bank_backends_unreachable"] = (text, len(down))
    if state.semantic is not None and not down:
        text = "Memories waiting for an embedding, every owner's."
        # A backend that went away since: no count rather than a short one.
        with contextlib.suppress(ServiceUnavailable):
            gauges["memory_bank_embeddings_pending"] = (text, vector_jobs.pending(state.db))
    return gauges


__all__ = ["EmbeddingsMisconfigured", "KeyProblem", "create_app", "state_of"]
