"""Owner tables across several MariaDB servers with Spider (docs/scale-out.md).

The app talks to one server, the head. Each owner table (schema.owner_tables) is a Spider table
there, `PARTITION BY KEY (user_id)` with one partition per backend, and holds its rows on the
backends. A backend is a database: with an odd number of backend servers, each server's own;
with an even number, `shards init` deals 8n+1 partitions out to the n servers in turn, each a
database of its own there (`<database>_p<k>`), because KEY's hash is biased in its low bits and
a modulus of 2 or 4 spreads some kinds of ids unevenly (docs/scale-out.md). The other tables
(keys, service state, the migration version) are plain tables on the head. Which backends
there are is written on the head (service_state "shards") by `memory-bank shards init`, with,
for each, an owner key that the head places on it: reading that key through the head is the
health check (/readyz), the same road any owner's rows take.

Several heads may serve the same backends (docs/scale-out.md, "Two heads"): their own tables
replicate between them, and each has its Spider definitions, which `shards init` and
`migrate` make on every head written on them (service_state "shards_heads").

This module knows the layout: the backends, the heads, the head's Spider definitions, which
server a migration statement belongs on, and which backends answer. Running migrations is
store/migrate.py's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

from memory_bank.store import service_state
from memory_bank.store.owners import is_org
from memory_bank.store.schema import metadata, owner_tables

STATE_NAME = "shards"
# service_state: the URLs of every head over these backends, when there is more than one.
HEADS_STATE = "shards_heads"
# service_state: the migration revision the head's Spider definitions were last rebuilt at.
DEFINITIONS_STATE = "shards_definitions"
# Spider's server names on the head (CREATE SERVER, server-wide), one per backend, with the
# head's database in them so two databases on one head keep theirs: mb_<database>_shard0, …
SERVER_PREFIX = "mb_"
# Owner keys no user or org can have (a control character; store/api_keys.py refuses them), one
# of which the head places on each backend: the health check reads one.
_PROBE_PREFIX = "\x1fprobe:"
# Spider's errors for a backend it cannot reach (1429: cannot connect to the foreign data
# source; 12701: the remote server went away mid-statement).
UNREACHABLE = frozenset({1429, 12701})


@dataclass(frozen=True)
class Backend:
    """One backend: its name (shardK), its URL, its Spider server name on the head and the
    probe key the head places on it."""

    name: str
    url: str
    server: str
    probe: str


def backends(conn: Connection) -> list[Backend]:
    """The backends written on the head by `shards init`; [] for a single server (or a
    database never migrated)."""
    try:
        found = service_state.get(conn, STATE_NAME)
    except (ProgrammingError, OperationalError) as exc:
        if _missing_table(exc):
            conn.rollback()
            return []
        raise
    if found is None:
        return []
    return [Backend(b["name"], b["url"], b["server"], b["probe"]) for b in json.loads(found)]


def _missing_table(exc: DBAPIError) -> bool:
    """Whether a statement failed because its table does not exist (1146, or SQLite's)."""
    args = getattr(exc.orig, "args", ())
    return (args[:1] == (1146,)) or "no such table" in str(exc.orig)


def heads(conn: Connection) -> list[str]:
    """The URLs of the heads written by `shards init` (this one among them); [] when only
    the head the app talks to serves these backends."""
    try:
        found = service_state.get(conn, HEADS_STATE)
    except (ProgrammingError, OperationalError) as exc:
        if _missing_table(exc):
            conn.rollback()
            return []
        raise
    return list(json.loads(found)) if found is not None else []


def record_heads(conn: Connection, urls: list[str]) -> None:
    """Write the heads over these backends (their own tables replicate between them)."""
    service_state.put(conn, HEADS_STATE, json.dumps(urls))


def record(conn: Connection, found: list[Backend]) -> None:
    """Write the backends on the head."""
    value = [{"name": b.name, "url": b.url, "server": b.server, "probe": b.probe} for b in found]
    service_state.put(conn, STATE_NAME, json.dumps(value))


def partition_count(servers: int) -> int:
    """How many partitions `shards init` makes over this many backend servers by default: one
    per server when their number is odd (KEY's hash modulo an odd number spreads every kind of
    id measured evenly), else the odd 8n+1, so each server holds 8 or 9 of them."""
    return servers if servers % 2 else 8 * servers + 1


def partition_urls(urls: list[str], partitions: int) -> list[str]:
    """The database of each partition: the servers' own with one partition per server, else
    `<database>_p<k>` on server k mod n (partitions dealt out in turn)."""
    if partitions == len(urls):
        return list(urls)
    made = []
    for k in range(partitions):
        url = make_url(urls[k % len(urls)])
        made.append(url.set(database=f"{url.database}_p{k}").render_as_string(hide_password=False))
    return made


def name_backends(head_database: str, urls: list[str]) -> list[Backend]:
    """Backends shard0, shard1, … for these URLs, in order (probe keys found later)."""
    if not re.fullmatch(r"\w{1,40}", head_database):
        raise ValueError(f"the head's database name must be 1-40 word characters: {head_database}")
    return [
        Backend(f"shard{k}", url, f"{SERVER_PREFIX}{head_database}_shard{k}", "")
        for k, url in enumerate(urls)
    ]


def create_servers(conn: Connection, found: list[Backend]) -> None:
    """Spider's server entries on the head, one per backend (replacing any of the same name)."""
    for backend in found:
        url = make_url(backend.url)
        options = {
            "HOST": url.host or "127.0.0.1",
            "PORT": url.port or 3306,
            "USER": url.username or "",
            "PASSWORD": url.password or "",
            "DATABASE": url.database or "",
        }
        rendered = ", ".join(
            f"{key} {value}" if isinstance(value, int) else f"{key} {_quote(str(value))}"
            for key, value in options.items()
        )
        conn.exec_driver_sql(f"DROP SERVER IF EXISTS {backend.server}")
        conn.exec_driver_sql(
            f"CREATE SERVER {backend.server} FOREIGN DATA WRAPPER mysql OPTIONS ({rendered})"
        )


def _quote(value: str) -> str:
    """A string literal for DDL that takes no bound values."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def spider_definition(table: str, backend_ddl: str, found: list[Backend], name: str) -> str:
    """The head's CREATE TABLE for an owner table (named `name`), from a backend's own
    SHOW CREATE TABLE: the same columns and keys, stored by Spider across the backends."""
    body = backend_ddl[backend_ddl.index("(") : backend_ddl.rindex("\n)") + 2]
    comment = f'wrapper "mysql", table "{table}"'
    if table == "embedding_job":
        # Each backend numbers its own jobs (Spider's auto_increment_mode 2): by default the head
        # reads the highest id of every partition first, so a save would need every backend.
        comment += ', aim "2"'
    servers = [_quote('srv "' + b.server + '"') for b in found]
    partitions = ", ".join(f"PARTITION p{k} COMMENT = {srv}" for k, srv in enumerate(servers))
    return (
        f"CREATE TABLE `{name}` {body} ENGINE=SPIDER DEFAULT CHARSET=utf8mb4 "
        f"COLLATE=utf8mb4_bin COMMENT={_quote(comment)} "
        f"PARTITION BY KEY (user_id) ({partitions})"
    )


def rebuild_head(head: Connection, backend: Connection, found: list[Backend]) -> list[str]:
    """Make the head's Spider tables match the owner tables of a backend (any: migrations give
    them all the same definitions); the tables rebuilt. Each is swapped in by one RENAME, so a
    request meanwhile finds the old definition or the new, never none. Spider tables hold no
    rows: nothing is copied."""
    there = set(_names(backend))
    here = table_engines(head)
    done = []
    for table in owner_tables():
        if table.name not in there:
            continue
        ddl = backend.exec_driver_sql(f"SHOW CREATE TABLE `{table.name}`").one()[1]
        new = f"{table.name}__new"
        head.exec_driver_sql(f"DROP TABLE IF EXISTS `{new}`")
        head.exec_driver_sql(spider_definition(table.name, ddl, found, new))
        current = here.get(table.name)
        if current is None:
            head.exec_driver_sql(f"RENAME TABLE `{new}` TO `{table.name}`")
        elif current.upper() == "SPIDER":
            old = f"{table.name}__old"
            head.exec_driver_sql(f"DROP TABLE IF EXISTS `{old}`")
            head.exec_driver_sql(
                f"RENAME TABLE `{table.name}` TO `{old}`, `{new}` TO `{table.name}`"
            )
            head.exec_driver_sql(f"DROP TABLE `{old}`")
        else:
            raise RuntimeError(
                f"the head holds {table.name} as a {current} table, not a Spider one: "
                "shards init works on a head whose owner tables are empty"
            )
        done.append(table.name)
    return done


def _names(conn: Connection) -> list[str]:
    """The tables of the connection's database."""
    return [r[0] for r in conn.exec_driver_sql("SHOW TABLES").all()]


def table_engines(conn: Connection) -> dict[str, str]:
    """table -> storage engine, for the connection's database."""
    rows = conn.execute(
        text(
            "SELECT table_name, engine FROM information_schema.tables "
            "WHERE table_schema = DATABASE()"
        )
    ).all()
    return {r[0]: str(r[1] or "") for r in rows}


def head_problems(conn: Connection) -> list[str]:
    """What is wrong with the head's Spider settings (docs/scale-out.md); [] when nothing."""
    found = conn.exec_driver_sql(
        "SELECT @@global.spider_disable_group_by_handler, @@global.spider_connect_retry_count"
    ).one()
    problems = []
    if not int(found[0]):
        problems.append(
            "spider_disable_group_by_handler should be ON: Spider's group-by handler garbles "
            "long text (memory-bank turns it off in its own sessions; other clients of the head "
            "do not)"
        )
    if int(found[1]):
        problems.append(
            "spider_connect_retry_count should be 0: with retries a request for an owner on a "
            f"stopped backend waits {int(found[1])} s or more before its 503"
        )
    return problems


def find_probes(head: Connection, found: list[Backend]) -> list[Backend]:
    """Each backend with an owner key the head places on it (asked of the head itself, by
    EXPLAIN PARTITIONS, so it holds whatever hashing the head uses)."""
    wanted = {f"p{k}": b for k, b in enumerate(found)}
    probes: dict[str, str] = {}
    # Spider's group-by handler takes a whole statement to one backend and EXPLAIN then names
    # no partition; without it the plan shows the partition the key lands on.
    head.exec_driver_sql("SET SESSION spider_disable_group_by_handler = ON")
    for n in range(10_000):
        key = f"{_PROBE_PREFIX}{n}"
        row = (
            head.execute(
                text("EXPLAIN PARTITIONS SELECT 1 FROM memory WHERE user_id = :k"),
                {"k": key},
            )
            .mappings()
            .first()
        )
        part = str(row["partitions"]) if row is not None else ""
        if part in wanted and part not in probes:
            probes[part] = key
        if len(probes) == len(wanted):
            break
    missing = sorted(set(wanted) - set(probes))
    head.exec_driver_sql("SET SESSION spider_disable_group_by_handler = DEFAULT")
    if missing:
        raise RuntimeError(f"no owner key lands on partition(s) {', '.join(missing)}")
    return [Backend(b.name, b.url, b.server, probes[part]) for part, b in wanted.items()]


def unreachable(conn: Connection, found: list[Backend]) -> list[str]:
    """The backends that do not answer through the head: each is asked for its probe key's
    row, as any owner's read would be."""
    down = []
    for backend in found:
        try:
            conn.execute(
                text("SELECT 1 FROM memory_user_stats WHERE user_id = :k LIMIT 1"),
                {"k": backend.probe},
            ).first()
        except DBAPIError as exc:
            if _code(exc) not in UNREACHABLE:
                raise
            down.append(backend.name)
    return down


def reachable(
    conn: Connection, sharded: bool, own: str, wanted: list[str]
) -> tuple[list[str], list[str]]:
    """The owners to read, and the scopes ("org", "user") left out because the backend holding
    them is down. Only with several backends (`sharded`), and never the caller's own rows
    (`own`): without them the answer is a 503."""
    if not sharded:
        return wanted, []
    down = [o for o in wanted if o != own and not answers(conn, o)]
    return [o for o in wanted if o not in down], ["org" if is_org(o) else "user" for o in down]


def answers(conn: Connection, owner: str) -> bool:
    """Whether the backend holding this owner's rows answers (through the head)."""
    try:
        conn.execute(
            text("SELECT 1 FROM memory_user_stats WHERE user_id = :k LIMIT 1"), {"k": owner}
        ).first()
    except DBAPIError as exc:
        if _code(exc) not in UNREACHABLE:
            raise
        return False
    return True


def _code(exc: DBAPIError) -> int | None:
    """The MySQL error number behind a DBAPI error, if any."""
    args = getattr(exc.orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


# A statement that changes a table, and the table's name (what migrations send: DDL and DML).
_CHANGES = re.compile(
    r"^\s*(?:ALTER\s+TABLE|DROP\s+TABLE(?:\s+IF\s+EXISTS)?|CREATE\s+TABLE(?:\s+IF\s+NOT\s+EXISTS)?"
    r"|TRUNCATE(?:\s+TABLE)?|RENAME\s+TABLE|INSERT(?:\s+IGNORE)?\s+INTO|REPLACE\s+INTO|UPDATE"
    r"|DELETE\s+FROM|(?:CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+INDEX)\s+[`\"]?\w+[`\"]?\s+ON)"
    r"\s+[`\"]?(\w+)[`\"]?",
    re.IGNORECASE,
)


def changed_table(statement: str) -> str | None:
    """The table a statement changes, or None (reads and anything else)."""
    found = _CHANGES.match(statement)
    return found.group(1) if found else None


def head_tables() -> set[str]:
    """The tables that live on the head only (every known table but the owner tables)."""
    return set(metadata.tables) - {t.name for t in owner_tables()}


def replicated_tables() -> list[str]:
    """What heads over the same backends replicate to each other: their own tables and the
    migration version (so a head another migrated starts as current)."""
    return sorted(head_tables() | {"alembic_version"})


def only_changes(conn: Connection, skip: set[str]) -> Callable[[], None]:
    """Run nothing that changes these tables on this connection, until the returned function
    is called: a migration then reaches each server's tables only where they live (its
    owner tables on the backends, its head tables on the head). Reads still run."""

    def swap(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool
    ) -> tuple[str, Any]:
        if changed_table(statement) in skip:
            return "DO 0", ([] if many else ())
        return statement, parameters

    event.listen(conn, "before_cursor_execute", swap, retval=True)
    return lambda: event.remove(conn, "before_cursor_execute", swap)
