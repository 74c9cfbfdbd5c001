"""Isolation attacks over every operation of the spec: other users' and other orgs' ids,
smuggled identity fields, tampered cursors. Zero leaks: another user's or org's id answers
exactly like one that never existed. The same attacks run through every MCP tool
(ATTACK_SURFACES). Owners are users and orgs ("org:acme" is acme's shared memories)."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import sqlalchemy as sa

from memory_bank.ids import new_id
from memory_bank.spec import load_spec
from memory_bank.store.schema import metadata
from memory_bank.store.sealing.crypto import encode_master_key, new_master_key
from reliability_figures import Figures

IGNORED_HEADERS = {"date", "x-request-id"}
SMUGGLED = {
    "user_id": "bob",
    "user": "bob",
    "owner": "bob",
    "org_id": "acme",
    "org": "other",
    "scope": "org",
    "source": "admin",
}
SMUGGLED_HEADERS = {
    "X-User-Id": "bob",
    "X-Org-Id": "other",
    "X-Forwarded-User": "carol",
    "X-Memory-Bank-User": "bob",
}


@dataclass
class Operation:
    """One spec operation, as the attacks need it."""

    operation_id: str
    method: str
    path: str
    path_params: list[str]
    query: dict[str, dict[str, Any]]
    has_body: bool
    secured: bool


def spec_operations() -> list[Operation]:
    """Every operation in the spec (so new operations are attacked without new tests)."""
    spec = load_spec()
    found = []
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method, op in item.items():
            if method == "parameters" or not isinstance(op, dict):
                continue
            params = [_deref(spec, p) for p in [*shared, *op.get("parameters", [])]]
            found.append(
                Operation(
                    operation_id=op["operationId"],
                    method=method.upper(),
                    path=path,
                    path_params=[p["name"] for p in params if p["in"] == "path"],
                    query={p["name"]: p for p in params if p["in"] == "query"},
                    has_body="requestBody" in op,
                    secured=op.get("security", spec.get("security", [])) != [],
                )
            )
    return found


def _deref(spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local $ref."""
    while "$ref" in node:
        target: Any = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


ORGS = {"alice": "acme", "bob": "acme", "carol": "other", "dave": None}
# Who saves each org's shared memories, and reads them back in the untouched-victim checks.
ORG_MEMBER = {"org:acme": "bob", "org:other": "carol"}
# Each attacker and the owners whose memories it must never see.
ATTACKERS = {"alice": ("bob", "carol", "org:other"), "dave": ("alice", "org:acme")}


@dataclass
class World:
    """Four users: alice and bob in org acme, carol in org other, dave in none; each with
    memories, and each org with shared memories (owners "org:acme", "org:other")."""

    service: Any
    keys: dict[str, dict[str, str]]
    ids: dict[str, list[str]] = field(default_factory=dict)
    marker: dict[str, str] = field(default_factory=dict)
    # alice's own draft, made by own_draft() when an attack needs one.
    draft: str | None = None

    def reader(self, owner: str) -> dict[str, str]:
        """Headers of a user who may read this owner's memories."""
        return self.keys[ORG_MEMBER.get(owner, owner)]

    def check_no_victim_data(self, text: str, attacker: str = "alice") -> None:
        """Nothing of another owner's (words or ids) appears in what the attacker got; its own
        org's shared memories are its to see."""
        org = ORGS[attacker]
        for owner, marker in self.marker.items():
            if owner in (attacker, f"org:{org}"):
                continue
            assert marker not in text, f"{owner}'s data leaked: {text[:300]}"
            for mid in self.ids[owner]:
                assert mid not in text, f"{owner}'s id leaked: {text[:300]}"


def build_world(service: Any) -> World:
    """Create the users, their keys and a few memories each, with distinctive words."""
    member = ("mcp:read", "mcp:write", "memory:review", "org:write")
    keys = {
        user: service.auth(user, org=org, scopes=member if org else member[:3])
        for user, org in ORGS.items()
    }
    world = World(service=service, keys=keys)
    for owner in [*ORGS, *ORG_MEMBER]:
        world.marker[owner] = f"zq{owner.replace(':', '')}secret"
        world.ids[owner] = []
        for i in range(3):
            body: dict[str, Any] = {
                "content": f"{world.marker[owner]} note {i} shared words",
                "tags": [f"{owner}tag"],
                "contexts": [{"snippet": f"{world.marker[owner]} snippet {i}"}],
            }
            if owner in ORG_MEMBER:
                body["scope"] = "org"
            r = service.client.post("/v1/memory", json=body, headers=world.reader(owner))
            assert r.status_code == 201, r.text
            world.ids[owner].append(r.json()["memory"]["id"])
    return world


def id_variants(value: str) -> Iterator[tuple[str, str]]:
    """Spellings of an id an attacker might try, as (name, raw path segment)."""
    quoted = urllib.parse.quote(value, safe="")
    yield "exact", quoted
    yield "upper", urllib.parse.quote(value.upper(), safe="")
    yield "lower", urllib.parse.quote(value.lower(), safe="")
    yield "swapcase", urllib.parse.quote(value.swapcase(), safe="")
    yield "leading-space", urllib.parse.quote(" " + value, safe="")
    yield "trailing-space", urllib.parse.quote(value + " ", safe="")
    yield "tab", urllib.parse.quote(value + "\t", safe="")
    yield "newline", urllib.parse.quote(value + "\n", safe="")
    yield "percent-encoded", "".join(f"%{b:02X}" for b in value.encode())
    yield "double-encoded", urllib.parse.quote("".join(f"%{b:02X}" for b in value.encode()))
    yield "truncated", urllib.parse.quote(value[:-1], safe="")
    yield "prefix-only", urllib.parse.quote(value[:12], safe="")
    yield "nul-suffix", urllib.parse.quote(value + "\x00", safe="")
    yield "sql-like", urllib.parse.quote(value + "' OR '1'='1", safe="")
    yield "wildcard", urllib.parse.quote(value[:-3] + "%", safe="")


def never_existed_like(value: str) -> str:
    """An id of the same shape that no one ever had."""
    prefix = value.split("_", 1)[0] if "_" in value else "mem"
    return new_id(prefix)


def normalised(response: Any, *replace: str) -> tuple[int, dict[str, str], str]:
    """Status, headers and body with volatile headers and the probed ids blanked."""
    body = response.text
    for value in replace:
        for spelling in {value, value.upper(), value.lower(), value.swapcase(), value[:-1]}:
            body = body.replace(spelling, "<ID>")
    headers = {k: v for k, v in response.headers.items() if k.lower() not in IGNORED_HEADERS}
    for key, value in list(headers.items()):
        for probe in replace:
            value = value.replace(probe, "<ID>")
        headers[key] = value
    return response.status_code, headers, body


# A surface runs the attacks through one transport: REST, and MCP (mcp_surface.py).
Surface = Callable[[World, Figures, str], None]
ATTACK_SURFACES: list[tuple[str, Surface]] = []


def _call(world: World, op: Operation, user: str, path: str, **kwargs: Any) -> Any:
    """One request as a user."""
    headers = {**world.keys[user], **kwargs.pop("headers", {})}
    return world.service.client.request(op.method, path, headers=headers, **kwargs)


def _fill(op: Operation, segment: str) -> str:
    """The operation's path with its id set to a raw segment (any other path parameter, such
    as a revision number, to a valid value: the id is what is attacked)."""
    path = op.path
    for name in op.path_params:
        path = path.replace("{" + name + "}", segment if name == "id" else "1")
    return path


def _minimal_query(op: Operation) -> dict[str, str]:
    """Values for required query parameters (the victim's words, to tempt a leak)."""
    return {name: "shared words" for name, p in op.query.items() if p.get("required")}


def _minimal_body(op: Operation) -> dict[str, Any] | None:
    """A valid body for operations that take one."""
    return {"content": "attacker note"} if op.has_body else None


def assert_no_victim_data(world: World, response: Any, attacker: str) -> None:
    """Nothing of another user's appears in a response."""
    world.check_no_victim_data(response.text, attacker)


def rest_attacks(world: World, figures: Figures, engine: str) -> None:
    """Every spec operation, attacked over REST."""
    key = f"isolation.{engine}"
    for op in spec_operations():
        if not op.secured:
            continue
        if op.path_params:
            _attack_ids(world, figures, key, op)
            _attack_injected_ids(world, figures, key, op)
        _attack_smuggling(world, figures, key, op)
    _attack_cursors(world, figures, key)


def own_draft(world: World) -> tuple[str, str]:
    """A draft alice's agent saved for her review (made once): its id and a word of it."""
    if world.draft is None:
        client, owner = world.service.client, world.keys["alice"]
        client.put("/v1/memory/settings", json={"review_required": True}, headers=owner)
        agent = world.service.auth("alice", org="acme")
        r = client.post("/v1/memory", json={"content": "zqalicedraft pending"}, headers=agent)
        assert r.status_code == 202, r.text
        client.put("/v1/memory/settings", json={"review_required": False}, headers=owner)
        world.draft = r.json()["draft"]["id"]
    return world.draft, "zqalicedraft"


def injected_ids(world: World) -> Iterator[tuple[str, str]]:
    """Values for an id that are not ids: other routes' names, dot segments, and slashes,
    as (name, raw path segment). None may reach anything but a 400 naming the id."""
    draft, _ = own_draft(world)
    bob = world.ids["bob"][0]
    for name in ("settings", "drafts", "prompt", "search", "confirm", "reject", "session"):
        yield name, name
    # (A bare "." or ".." is collapsed by HTTP clients before it is sent; the server sees the
    # encoded forms, which raw clients can send.)
    yield "encoded-dot", "%2E"
    yield "encoded-dot-dot", "%2E%2E"
    yield "encoded-slash-draft", f"drafts%2F{draft}"
    yield "encoded-slash-up", "%2E%2E%2Fsettings"
    yield "encoded-slash-victim", f"{bob}%2F"
    yield "encoded-backslash", f"drafts%5C{draft}"
    yield "double-encoded-slash", f"drafts%252F{draft}"


def _attack_injected_ids(world: World, figures: Figures, key: str, op: Operation) -> None:
    """Id parameters given route names, dot segments and encoded slashes: each is refused as
    not an id, before anything is routed elsewhere or read (alice's own draft included)."""
    _, draft_words = own_draft(world)
    # Over REST, /v1/memory/settings is simply that route (the client named it); through MCP,
    # where an id argument builds the path, the same name must not get there (mcp_surface).
    literal = {o.path for o in spec_operations() if not o.path_params}
    for name, seg in injected_ids(world):
        if _fill(op, seg) in literal:
            continue
        kwargs: dict[str, Any] = {"params": _minimal_query(op)}
        body = _minimal_body(op)
        if body is not None:
            kwargs["json"] = body
        r = _call(world, op, "alice", _fill(op, seg), **kwargs)
        figures.add(key + ".attacks")
        assert r.status_code in {400, 405}, f"{op.operation_id} {name}: {r.status_code} {r.text}"
        if r.status_code == 400:
            assert r.json()["field"] == "id", f"{op.operation_id} {name}: {r.text}"
        assert draft_words not in r.text, f"{op.operation_id} {name} reached the draft"
        assert "review_in_effect" not in r.text and "## Memory Bank" not in r.text
        assert_no_victim_data(world, r, "alice")


def _attack_ids(world: World, figures: Figures, key: str, op: Operation) -> None:
    """Other users' ids (same org and other org) and other orgs' (or, without an org, any
    org's) shared ids, respelled, vs never-existing ones."""
    for attacker, victims in ATTACKERS.items():
        _attack_ids_as(world, figures, key, op, attacker, victims)


def _attack_ids_as(
    world: World, figures: Figures, key: str, op: Operation, attacker: str, victims: Any
) -> None:
    """_attack_ids for one attacker and its victims."""
    for victim in victims:
        for victim_id in world.ids[victim][:2]:
            ghost = never_existed_like(victim_id)
            for (name, seg), (_, ghost_seg) in zip(
                id_variants(victim_id), id_variants(ghost), strict=True
            ):
                kwargs: dict[str, Any] = {"params": _minimal_query(op)}
                body = _minimal_body(op)
                if body is not None:
                    kwargs["json"] = body
                theirs = _call(world, op, attacker, _fill(op, seg), **kwargs)
                never = _call(world, op, attacker, _fill(op, ghost_seg), **kwargs)
                figures.add(key + ".attacks")
                assert theirs.status_code < 500, theirs.text
                assert not 200 <= theirs.status_code < 300, f"{op.operation_id} {name}"
                assert normalised(theirs, victim_id) == normalised(never, ghost), (
                    f"{op.operation_id} {name}: another user's id answers differently "
                    f"from a missing one:\n{theirs.status_code} {theirs.text}\n"
                    f"{never.status_code} {never.text}"
                )
                assert_no_victim_data(world, theirs, attacker)
    # The victims' memories are untouched, whatever was tried.
    for victim in victims:
        for victim_id in world.ids[victim]:
            r = world.service.client.get(f"/v1/memory/{victim_id}", headers=world.reader(victim))
            assert r.status_code == 200, f"{op.operation_id} changed {victim}'s memory"


def _attack_smuggling(world: World, figures: Figures, key: str, op: Operation) -> None:
    """Identity fields in the query string, body and headers change nothing."""
    for attacker in ATTACKERS:
        _smuggle_as(world, figures, key, op, attacker)


def _smuggle_as(world: World, figures: Figures, key: str, op: Operation, attacker: str) -> None:
    """_attack_smuggling for one attacker."""
    # Aim at a victim's memory (bob's; acme's shared one for dave) while claiming to be bob or
    # in another org: still nothing.
    target = world.ids[ATTACKERS[attacker][0] if attacker == "alice" else "org:acme"][0]
    path = _fill(op, target) if op.path_params else op.path
    base_query = _minimal_query(op)
    for name, value in SMUGGLED.items():
        variants: list[dict[str, Any]] = [{"params": {**base_query, name: value}}]
        if op.has_body:
            variants.append(
                {"params": base_query, "json": {**(_minimal_body(op) or {}), name: value}}
            )
        variants.append(
            {"params": base_query, "headers": SMUGGLED_HEADERS, "json": _minimal_body(op)}
        )
        for kwargs in variants:
            if kwargs.get("json") is None:
                kwargs.pop("json", None)
            r = _call(world, op, attacker, path, **kwargs)
            figures.add(key + ".attacks")
            assert r.status_code < 500, r.text
            assert_no_victim_data(world, r, attacker)
            if op.path_params:
                assert r.status_code in {400, 404}, f"{op.operation_id} {name}: {r.text}"
            if (
                op.operation_id == "postMemory"
                and (kwargs.get("json") or {}).get("scope") == "org"
                and ORGS[attacker] is None
            ):
                # "scope": "org" without an org is refused, never stored as personal.
                assert r.status_code == 403 and r.json()["code"] == "org_scope_forbidden"
            if r.status_code == 201 and "memory" in r.json():
                saved = r.json()["memory"]
                assert saved["source"] == "test-suite"
                # Saved for the attacker (or, with "scope": "org", its own org) only, whatever
                # the body claimed: no one else sees it.
                in_body = (kwargs.get("json") or {}).get("scope") == "org"
                assert saved["scope"] == ("org" if in_body else "user")
                for other in ORGS:
                    if other == attacker or (
                        saved["scope"] == "org" and ORGS[other] == ORGS[attacker]
                    ):
                        continue
                    found = world.service.client.get(
                        f"/v1/memory/{saved['id']}", headers=world.keys[other]
                    )
                    assert found.status_code == 404
                world.service.client.delete(
                    f"/v1/memory/{saved['id']}", headers=world.keys[attacker]
                )


def _attack_cursors(world: World, figures: Figures, key: str) -> None:
    """Another user's cursor and edited cursors are refused, alike, without data."""
    client = world.service.client
    first = client.get("/v1/memory", params={"limit": 1}, headers=world.keys["bob"]).json()
    bobs = first["next_cursor"]
    assert bobs
    mine = client.get("/v1/memory", params={"limit": 1}, headers=world.keys["alice"]).json()
    alices = mine["next_cursor"]
    payload, mac = alices.split(".", 1)
    bob_last = world.ids["bob"][-1]
    forged_payload = urllib.parse.quote(
        __import__("base64").urlsafe_b64encode(bob_last.encode()).decode().rstrip("=")
    )
    tampered = {
        "other-users-cursor": bobs,
        "org-listing-of-another-org": client.get(
            "/v1/memory", params={"limit": 1, "scope": "org"}, headers=world.keys["carol"]
        ).json()["next_cursor"],
        "same-org-members-org-listing": client.get(
            "/v1/memory", params={"limit": 1, "scope": "org"}, headers=world.keys["bob"]
        ).json()["next_cursor"],
        "other-org-cursor": client.get(
            "/v1/memory", params={"limit": 1}, headers=world.keys["carol"]
        ).json()["next_cursor"],
        "payload-swapped": f"{forged_payload}.{mac}",
        "mac-flipped": f"{payload}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}",
        "mac-dropped": payload,
        "case-changed": alices.swapcase(),
        "padded": " " + alices,
        "garbage": "not-a-cursor",
    }
    for name, value in tampered.items():
        for scope in ("all", "org", "user"):
            params = {"cursor": value, "scope": scope}
            r = client.get("/v1/memory", params=params, headers=world.keys["alice"])
            figures.add(key + ".attacks")
            assert r.status_code == 400, f"{name}: {r.status_code} {r.text}"
            assert r.json()["code"] in {"invalid_cursor", "invalid_request"}, name
            assert_no_victim_data(world, r, "alice")
    # Without an org, alice's cursor (whose next page would be acme's) is refused too.
    r = client.get("/v1/memory", params={"cursor": alices}, headers=world.keys["dave"])
    assert r.status_code == 400 and r.json()["code"] == "invalid_cursor"
    assert_no_victim_data(world, r, "dave")
    assert normalised(
        client.get("/v1/memory", params={"cursor": bobs}, headers=world.keys["alice"])
    ) == normalised(
        client.get(
            "/v1/memory", params={"cursor": tampered["mac-flipped"]}, headers=world.keys["alice"]
        )
    )


def mcp_attacks(world: World, figures: Figures, engine: str) -> None:
    """The same attacks through every MCP tool (official SDK client, in-process server)."""
    from mcp_surface import mcp_attacks as run

    run(world, figures, engine, never_existed_like, own_draft)


ATTACK_SURFACES.append(("rest", rest_attacks))
ATTACK_SURFACES.append(("mcp", mcp_attacks))


def _engine(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "mariadb"


@pytest.mark.slow
def test_no_operation_leaks_across_users(service, database_url, figures):
    world = build_world(service)
    for _name, surface in ATTACK_SURFACES:
        surface(world, figures, _engine(database_url))
    # Rows and counts: search and list show alice only her own and acme's, dave only his.
    client = service.client
    for user, sees in (("alice", ("alice", "org:acme")), ("dave", ("dave",))):
        mine = {mid for owner in sees for mid in world.ids[owner]}
        r = client.get(
            "/v1/memory/search", params={"q": "shared words note"}, headers=world.keys[user]
        )
        assert {m["id"] for m in r.json()["results"]} == mine
        r = client.get("/v1/memory", params={"limit": 100}, headers=world.keys[user])
        assert [m["id"] for m in r.json()["memories"]] == sorted(mine, reverse=True)
    figures.add(f"isolation.{_engine(database_url)}.leaks", 0)


# Tables keyed by secret rather than owner: a key is found by its prefix before anyone is known.
NOT_OWNER_SCOPED = {"api_key"}
_TABLE_REF = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+[`\"]?(\w+)[`\"]?", re.IGNORECASE)


def shard_key(table: str) -> str:
    """The column a table's rows are sharded by: user_id (a user's or an org's owner key), or
    org_id for the org audit log."""
    return "user_id" if "user_id" in metadata.tables[table].c else "org_id"


def owner_tables() -> set[str]:
    """Tables that hold per-owner rows: every table with a user_id or org_id column."""
    return {
        t.name for t in metadata.tables.values() if "user_id" in t.c or "org_id" in t.c
    } - NOT_OWNER_SCOPED


def statement_is_owner_scoped(sql: str, key: str = "user_id") -> bool:
    """Whether a statement on owner tables filters (or, inserting, sets) its shard key."""
    flat = " ".join(sql.split())
    upper = flat.upper()
    if upper.startswith("INSERT"):
        columns = flat[flat.index("(") : flat.index(")")] if "(" in flat else ""
        return key in columns
    where = upper.find(" WHERE ")
    return where >= 0 and key.upper() in upper[where:]


@pytest.mark.slow
@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "encrypted"])
def test_every_statement_on_memory_tables_filters_by_user(
    make_service, database_url, figures, sealed
):
    # Encrypted: the owner's data key is read (owner_key) by nearly every statement's request.
    master = {"master_key": encode_master_key(new_master_key())} if sealed else {}
    service = make_service(max_memories_per_user=1000, **master)
    statements: list[str] = []

    def capture(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    # Saves run on the batch pool (MariaDB): its statements are audited too.
    engines = list(dict.fromkeys([service.engine, service.db.saves]))
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        world = build_world(service)
        for _name, surface in ATTACK_SURFACES:
            surface(world, figures, "sql-" + _engine(database_url))
        client = service.client
        for mid in world.ids["alice"]:
            own = {"headers": world.keys["alice"]}
            assert client.get(f"/v1/memory/{mid}", **own).status_code == 200
            assert client.delete(f"/v1/memory/{mid}", **own).status_code == 204
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", capture)
    tables = owner_tables()
    assert {"memory", "memory_context", "memory_term", "memory_user_stats"} <= tables
    checked = 0
    touched: set[str] = set()
    for sql in statements:
        refs = {name.lower() for name in _TABLE_REF.findall(sql)} & tables
        if not refs:
            continue
        checked += 1
        touched |= refs
        for table in refs:
            key = shard_key(table)
            assert statement_is_owner_scoped(sql, key), f"not filtered by {key}: {sql}"
    assert {"memory", "memory_context", "memory_term", "memory_user_stats"} <= touched
    assert ("owner_key" in touched) == sealed
    if sealed:
        return
    assert "org_audit" in touched
    figures.add(f"sql.{_engine(database_url)}.statements_checked", checked)
    figures.note(f"sql.{_engine(database_url)}.tables", sorted(touched))
    json.dumps(statements)  # the capture holds plain strings only


# The embedding worker's cross-owner statements: the head of the claimable outbox (it acts for
# no caller, then works owner by owner), the backlog count (/metrics) and the set-aside count
# (/readyz). Each is matched whole, so no other condition can hide in one. Nothing else is
# exempt.
_BIND = r"(\?|%s|%\(\w+\)s)"  # a bound value as each driver spells it
_CROSS_OWNER = [
    re.compile(
        r"SELECT embedding_job\.id, embedding_job\.user_id, embedding_job\.memory_id "
        r"FROM embedding_job WHERE embedding_job\.set_aside IS NULL AND "
        rf"\(embedding_job\.claimed_until IS NULL OR embedding_job\.claimed_until < {_BIND}\) "
        rf"ORDER BY embedding_job\.id LIMIT {_BIND}( OFFSET {_BIND}| FOR UPDATE( SKIP LOCKED)?)?"
    ),
    re.compile(
        r"SELECT count\(\*\) AS count_1 FROM embedding_job WHERE embedding_job\.set_aside IS NULL"
    ),
    re.compile(
        r"SELECT embedding_job\.set_aside, count\(\*\) AS count_1 FROM embedding_job "
        r"WHERE embedding_job\.set_aside IS NOT NULL GROUP BY embedding_job\.set_aside"
    ),
]


def _cross_owner_by_design(sql: str) -> bool:
    flat = " ".join(sql.split())
    return any(pattern.fullmatch(flat) for pattern in _CROSS_OWNER)


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "encrypted"])
def test_every_statement_on_vector_tables_filters_by_user(make_service, sealed):
    """With semantic search on: saves (the outbox row), the worker (vectors, versions), every
    search mode, readiness and deletes, each statement carries its owner."""
    from memory_bank.app import state_of
    from memory_bank.domain import vector_jobs

    master = {"master_key": encode_master_key(new_master_key())} if sealed else {}
    service = make_service(embeddings="local", embeddings_worker=False, **master)
    semantic = state_of(service.app).semantic
    statements: list[str] = []

    def capture(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    engines = list(dict.fromkeys([service.engine, service.db.saves]))
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        client = service.client
        ids = []
        for user in ("alice", "bob"):
            headers = service.auth(user)
            for text in ("Leo has football practice", "The repositories live on Gitea"):
                r = client.post("/v1/memory", json={"content": text}, headers=headers)
                ids.append((headers, r.json()["memory"]["id"]))
        assert vector_jobs.pending(service.db) == 4
        assert vector_jobs.drain_once(service.db, semantic) == 4
        for headers, _ in ids:
            for mode in ("hybrid", "semantic", "lexical"):
                r = client.get(
                    "/v1/memory/search", params={"q": "sport", "mode": mode}, headers=headers
                )
                assert r.json()["mode"] == mode
        for headers, mid in ids:
            assert client.delete(f"/v1/memory/{mid}", headers=headers).status_code == 204
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", capture)
    tables = owner_tables()
    vector_tables = {"memory_vector", "embedding_job", "vector_version"}
    assert vector_tables <= tables
    touched: set[str] = set()
    exempt = 0
    for sql in statements:
        refs = {name.lower() for name in _TABLE_REF.findall(sql)} & tables
        if not refs:
            continue
        if _cross_owner_by_design(sql):
            exempt += 1
            continue
        touched |= refs
        for table in refs:
            assert statement_is_owner_scoped(sql, shard_key(table)), f"not scoped: {sql}"
    assert vector_tables <= touched
    assert exempt >= 2  # the outbox scan and the backlog count were seen, and only they


def test_the_statement_check_catches_unscoped_sql():
    assert not statement_is_owner_scoped("SELECT memory.id FROM memory WHERE memory.id = ?")
    assert not statement_is_owner_scoped("DELETE FROM memory_term")
    assert not statement_is_owner_scoped("INSERT INTO memory (id, content) VALUES (?, ?)")
    assert statement_is_owner_scoped("SELECT id FROM memory WHERE memory.user_id = ? AND id = ?")
    assert statement_is_owner_scoped("INSERT INTO memory_term (user_id, term) VALUES (?, ?)")
    assert not statement_is_owner_scoped("SELECT id FROM org_audit WHERE id < ?", "org_id")
    assert statement_is_owner_scoped("SELECT id FROM org_audit WHERE org_id = ?", "org_id")
    assert {"memory", "memory_context", "memory_term", "memory_user_stats"} <= owner_tables()
    assert "org_audit" in owner_tables() and shard_key("org_audit") == "user_id"


@pytest.mark.slow
def test_statements_name_only_the_callers_owners(make_service, database_url):
    """Every statement made for a caller binds only the caller's own shard keys: a user without
    an org never names an org, and an org's member never names another org."""
    service = make_service()
    world = build_world(service)
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        captured.append((statement, parameters))

    def bound(parameters: Any) -> set[str]:
        """Every string value bound to a statement (lists of rows included)."""
        rows = parameters if isinstance(parameters, list) else [parameters]
        found: set[str] = set()
        for row in rows:
            values = row.values() if isinstance(row, dict) else row or ()
            for value in values:
                items = value if isinstance(value, (list, tuple)) else [value]
                found |= {v for v in items if isinstance(v, str)}
        return found

    engines = list(dict.fromkeys([service.engine, service.db.saves]))
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", capture)
    tables = owner_tables()
    try:
        for user, foreign in (("dave", {"org:acme", "org:other"}), ("carol", {"org:acme"})):
            captured.clear()
            headers = world.keys[user]
            for mid in world.ids["org:acme"][:1] + world.ids["org:other"][:1]:
                service.client.get(f"/v1/memory/{mid}", headers=headers)
                service.client.delete(f"/v1/memory/{mid}", headers=headers)
            for scope in ("all", "org", "user"):
                service.client.get("/v1/memory", params={"scope": scope}, headers=headers)
                service.client.get(
                    "/v1/memory/search",
                    params={"q": "shared words", "scope": scope},
                    headers=headers,
                )
            service.client.get("/v1/memory/drafts", headers=headers)
            service.client.post(
                "/v1/memory", json={"content": "x", "scope": "org"}, headers=headers
            )
            on_owner_tables = [
                (sql, params)
                for sql, params in captured
                if {n.lower() for n in _TABLE_REF.findall(sql)} & tables
            ]
            assert on_owner_tables
            for sql, params in on_owner_tables:
                assert not bound(params) & foreign, f"{user} reached {foreign}: {sql} {params}"
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", capture)
