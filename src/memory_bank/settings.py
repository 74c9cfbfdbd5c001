"""Every MEMORY_BANK_* setting, typed, with its default and help line."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PREFIX = "MEMORY_BANK_"


def _setting(default: Any, help: str) -> Any:
    """Declare one setting with its default and its help line."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Settings:
    """The service configuration, read once from the environment."""

    database_url: str = _setting(
        "sqlite:///memory-bank.db",
        "SQLAlchemy URL of the database: a SQLite file (default, created on first run) "
        "or mysql+pymysql://user:pass@host/db for MySQL/MariaDB.",
    )
    host: str = _setting("127.0.0.1", "Address `memory-bank serve` listens on.")
    port: int = _setting(8080, "Port `memory-bank serve` listens on.")
    workers: int = _setting(1, "Worker processes for `memory-bank serve`.")
    public_url: str = _setting(
        "", "Public base URL of the service (for links and OAuth metadata); empty = from request."
    )
    max_body_bytes: int = _setting(
        1_048_576, "Largest request body accepted, in bytes; larger is a 413."
    )
    validate_responses: bool = _setting(
        False, "Validate every response against the spec (on in tests; costs time)."
    )
    review_required: bool = _setting(
        False,
        "Require a person with memory:review to confirm every save made by a credential "
        "without that scope (server-wide; users can also opt in for themselves).",
    )
    draft_ttl_hours: int = _setting(168, "Hours a draft waits for review before it expires.")
    panel_enabled: bool = _setting(True, "Serve the web panel at /; off = 404 there.")
    panel_link_minutes: int = _setting(
        15, "Minutes the one-time panel sign-in link printed by `memory-bank serve` stays valid."
    )
    panel_session_hours: int = _setting(
        12, "Hours the key a panel sign-in link is traded for stays valid."
    )
    memory_enabled: bool = _setting(
        True, "Kill switch: false turns every memory route off for everyone (503)."
    )
    rate_limit_per_minute: int = _setting(
        0,
        "Requests per minute allowed per credential (a token bucket in each worker process, "
        "so N workers allow up to N times this); over it is a 429 with Retry-After; 0 = no limit.",
    )
    max_memories_per_user: int = _setting(
        0, "Most memories (and drafts) one user may keep; a save past it is 409; 0 = no limit."
    )
    cors_origins: str = _setting("", "Comma-separated origins allowed by CORS; empty = CORS off.")
    metrics_enabled: bool = _setting(
        False, "Serve Prometheus metrics at /metrics (per worker process); off = 404 there."
    )
    log_level: str = _setting("info", "Log level: debug, info, warning or error.")
    db_pool_size: int = _setting(
        10,
        "Database connections pooled per worker process (as many again may overflow); request "
        "handlers per worker are capped at twice this, less one.",
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read settings from the environment (MEMORY_BANK_*), then apply overrides."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(PREFIX + f.name.upper())
            if raw is not None:
                values[f.name] = _cast(f.name, raw, type(f.default))
        values.update(overrides)
        return cls(**values)

    def base_url(self, fallback: str) -> str:
        """The service's public base URL: the configured one, else fallback; no trailing slash."""
        return (self.public_url or fallback).rstrip("/")

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with some settings changed."""
        return dataclasses.replace(self, **changes)


def _cast(name: str, raw: str, kind: type) -> Any:
    """Turn one environment string into the setting's type, or fail naming it."""
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off", ""}:
            return False
        raise ValueError(f"{PREFIX}{name.upper()} must be true or false, not {raw!r}")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{PREFIX}{name.upper()} must be an integer, not {raw!r}") from None
    return raw


def documented() -> list[tuple[str, str, str]]:
    """Each setting as (environment variable, default, help) for docs and --help."""
    rows = []
    for f in dataclasses.fields(Settings):
        default = f.default
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        rows.append((PREFIX + f.name.upper(), shown, f.metadata["help"]))
    return rows
