"""Handlers for the liveness and readiness probes."""

from __future__ import annotations

from memory_bank import state as app_state
from memory_bank.api.respond import Reply, json_reply
from memory_bank.domain import vector_jobs
from memory_bank.errors import ServiceUnavailable
from memory_bank.store.database import Database
from memory_bank.store.migrate import is_current


def getHealthz() -> Reply:
    """The process is up."""
    return json_reply({"status": "ok"})


def getReadyz() -> Reply:
    """The database answers and its schema is current (semantic search's state in detail:
    ready, or how its model's preparation goes; search answers lexically meanwhile; degraded
    while the rate limits' shared store does not answer)."""
    state = app_state.current()
    try:
        current = is_current(state.db.engine)
    except Exception:
        raise ServiceUnavailable("The database is unreachable.") from None
    if not current:
        raise ServiceUnavailable("The database schema is not current; run memory-bank migrate.")
    # A database backend down (several backends, docs/scale-out.md): still 200, the owners on
    # the others are served; named before anything that reads every owner's rows.
    down = _backends_down(state.db)
    # Rate limits counted per process while their shared store (Redis) does not answer: still
    # 200, since taking every host out of the balancer would make the limiter's outage the
    # service's; degraded, so the operator sees it.
    limits = state.limiter.health() if state.limiter is not None else None
    if down:
        detail = "; ".join(part for part in (f"unreachable: {', '.join(down)}", limits) if part)
        return json_reply({"status": "degraded", "detail": detail})
    # No backlog here: anyone may call it, and the embedding backlog is every owner's (it is in
    # /metrics, for the operator). Jobs set aside are counted by reason only: they wait for the
    # operator (a data key that does not open), and no owner or memory is named. A model still
    # being prepared does not make the service unready: it serves lexical search meanwhile.
    if state.semantic is None:
        if limits:
            return json_reply({"status": "degraded", "detail": limits})
        return json_reply({"status": "ready"})
    aside = vector_jobs.set_aside(state.db)
    detail = "; ".join(part for part in (limits, state.semantic.status()) if part)
    body: dict[str, object] = {"status": "degraded" if limits else "ready", "detail": detail}
    return json_reply({**body, **({"set_aside": aside} if aside else {})})


def _backends_down(db: Database) -> list[str]:
    """The database backends behind a Spider head that do not answer ([] for one server)."""
    try:
        return db.unreachable()
    except Exception:
        raise ServiceUnavailable("The database is unreachable.") from None
