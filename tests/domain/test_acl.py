"""The ACL table: every operation x {owner, same-org member, same-org admin, other-org user,
no-org user} against an org memory (and org draft), through a real `memory-bank serve` on both
engines. What other-org and no-org users get for an id is byte-identical to a missing id."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from live_server import LiveServer, start_server, stop_server
from memory_bank.auth import Principal
from memory_bank.domain import acl, vector_jobs
from memory_bank.errors import InsufficientScope, OrgScopeForbidden
from memory_bank.ids import new_id
from memory_bank.models import mpnet
from memory_bank.store import api_keys
from memory_bank.store.database import Database
from memory_bank.store.engine import make_engine, writing
from polling import wait_for

ADMIN_URL = os.environ.get(
    "MEMORY_BANK_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
)
REVIEW = "memory:review"
ROLES = {
    # role: (user, org, scopes)
    "owner": ("alice", "acme", ("mcp:read", "mcp:write", "org:write", REVIEW)),
    "member": ("bob", "acme", ("mcp:read", "mcp:write", "org:write", REVIEW)),
    "admin": ("erin", "acme", ("mcp:read", "mcp:write", "org:write", "org:admin", REVIEW)),
    "other_org": ("carol", "globex", ("mcp:read", "mcp:write", "org:write", "org:admin", REVIEW)),
    "no_org": ("dave", None, ("mcp:read", "mcp:write", REVIEW)),
}
# Answers that must be byte-identical to the same request for an id that never existed.
HIDDEN = "404=missing"


@dataclass
class World:
    """A live server, a key per role, and the owner's agent (which saves drafts)."""

    server: LiveServer
    client: httpx.Client
    keys: dict[str, dict[str, str]]
    agent: dict[str, str]
    engine: sa.Engine
    made: list[str] = field(default_factory=list)

    def call(self, role: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request as a role."""
        return self.client.request(method, path, headers=self.keys[role], **kwargs)

    def org_memory(self, words: str = "deploy runbook drain the worker") -> str:
        """A fresh org memory the owner created."""
        body = {"content": f"{words} {secrets.token_hex(3)}", "scope": "org"}
        r = self.call("owner", "POST", "/v1/memory", json=body)
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    def org_draft(self) -> str:
        """A fresh org draft the owner's agent saved (the server requires review)."""
        body = {"content": f"pending team fact {secrets.token_hex(3)}", "scope": "org"}
        r = self.client.post("/v1/memory", json=body, headers=self.agent)
        assert r.status_code == 202, r.text
        return str(r.json()["draft"]["id"])


@contextlib.contextmanager
def _database(kind: str, tmp: Path) -> Iterator[str]:
    """A database of its own for this module (so no other test's wipe can reach it)."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'acl.db'}"
        return
    try:
        admin = sa.create_engine(ADMIN_URL, connect_args={"connect_timeout": 3})
        name = f"mbacl_{os.getpid()}_{secrets.token_hex(4)}"
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    except sa.exc.OperationalError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"MariaDB is required in CI but unreachable: {exc}")
        pytest.skip(f"MariaDB unreachable: {exc}")
    try:
        yield sa.engine.make_url(ADMIN_URL).set(database=name).render_as_string(False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


@pytest.fixture(scope="module", params=["sqlite", "mariadb"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """A real server with review required, and a key per role."""
    # The model is built here, under its file lock and with no deadline: a cold cache on a busy
    # machine takes minutes, longer than start_server waits for /readyz.
    mpnet.ensure()
    with _database(request.param, tmp_path_factory.mktemp("acl")) as url:
        # Semantic search on (the local model), so its modes get rows of their own below.
        server = start_server(
            url, {"MEMORY_BANK_REVIEW_REQUIRED": "true", "MEMORY_BANK_EMBEDDINGS": "local"}
        )
        engine = make_engine(url, pool_size=1)
        try:

            def key(user: str, org: str | None, scopes: tuple[str, ...]) -> dict[str, str]:
                secret, _ = writing(
                    engine, lambda conn: api_keys.create_key(conn, user, scopes, "acl-test", org)
                )
                return {"Authorization": f"Bearer {secret}"}

            made = {role: key(*spec) for role, spec in ROLES.items()}
            agent = key("alice", "acme", ("mcp:read", "mcp:write", "org:write"))
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                yield World(server, client, made, agent, engine)
        finally:
            engine.dispose()
            stop_server(server)


def _normalised(r: httpx.Response, probe: str) -> tuple[int, dict[str, str], str]:
    """Status, headers (without the volatile ones) and body, with the probed id blanked."""
    headers = {
        k: v.replace(probe, "<ID>")
        for k, v in r.headers.items()
        if k.lower() not in {"date", "x-request-id"}
    }
    return r.status_code, headers, r.text.replace(probe, "<ID>")


# An operation on a target: (its id kind, method, path template, json body, what to check).
Case = tuple[str, str, str, dict[str, Any] | None]
ID_OPERATIONS: dict[str, Case] = {
    "getMemoryById": ("memory", "GET", "/v1/memory/{id}", None),
    "deleteMemoryById": ("memory", "DELETE", "/v1/memory/{id}", None),
    "patchMemoryById": ("memory", "PATCH", "/v1/memory/{id}", {"content": "edited by a role"}),
    "getMemoryRevisions": ("memory", "GET", "/v1/memory/{id}/revisions", None),
    "postMemoryRestore": ("memory", "POST", "/v1/memory/{id}/revisions/1/restore", None),
    "getMemoryDraftById": ("draft", "GET", "/v1/memory/drafts/{id}", None),
    "postMemoryDraftConfirm": ("draft", "POST", "/v1/memory/drafts/{id}/confirm", None),
    "postMemoryDraftReject": ("draft", "POST", "/v1/memory/drafts/{id}/reject", None),
}
ID_TABLE: dict[str, dict[str, int | str]] = {
    "getMemoryById": {"owner": 200, "member": 200, "admin": 200},
    "deleteMemoryById": {"owner": 204, "member": 403, "admin": 204},
    # Editing and restoring follow deleting: the creator (org:write) or an org:admin.
    "patchMemoryById": {"owner": 200, "member": 403, "admin": 200},
    "getMemoryRevisions": {"owner": 200, "member": 200, "admin": 200},
    "postMemoryRestore": {"owner": 200, "member": 403, "admin": 200},
    "getMemoryDraftById": {"owner": 200, "member": 200, "admin": 200},
    "postMemoryDraftConfirm": {"owner": 201, "member": 201, "admin": 201},
    "postMemoryDraftReject": {"owner": 204, "member": 204, "admin": 204},
}
for _row in ID_TABLE.values():
    _row.update({"other_org": HIDDEN, "no_org": HIDDEN})


@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("operation", list(ID_OPERATIONS))
def test_acl_table_by_id(world: World, operation: str, role: str) -> None:
    kind, method, template, body = ID_OPERATIONS[operation]
    target = world.org_memory() if kind == "memory" else world.org_draft()
    expected = ID_TABLE[operation][role]
    r = world.call(role, method, template.format(id=target), json=body)
    if expected == HIDDEN:
        ghost = new_id("mem" if kind == "memory" else "mdr")
        missing = world.call(role, method, template.format(id=ghost), json=body)
        assert r.status_code == 404, r.text
        assert _normalised(r, target) == _normalised(missing, ghost)
    else:
        assert r.status_code == expected, r.text
        if expected == 403:
            assert r.json()["code"] == "insufficient_scope"
            assert r.json()["required_scope"] == "org:admin"
    # Whatever was tried, the target is as the table says: gone only after a permitted change.
    if kind == "memory":
        after = world.call("owner", "GET", f"/v1/memory/{target}")
        assert after.status_code == (404 if expected == 204 else 200)


# Listings and searches: whether the org memory (or draft) shows up for the role.
LISTING_TABLE: dict[str, dict[str, bool]] = {
    "getMemory": {"owner": True, "member": True, "admin": True},
    "getMemorySearch": {"owner": True, "member": True, "admin": True},
    "getMemorySearch mode=semantic": {"owner": True, "member": True, "admin": True},
    "getMemorySearch mode=hybrid": {"owner": True, "member": True, "admin": True},
    "getMemoryDrafts": {"owner": True, "member": True, "admin": True},
}
for _seen in LISTING_TABLE.values():
    _seen.update({"other_org": False, "no_org": False})


@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("operation", list(LISTING_TABLE))
def test_acl_table_listings(world: World, operation: str, role: str) -> None:
    words = f"zq{secrets.token_hex(4)}"
    if operation == "getMemoryDrafts":
        target = world.org_draft()
        r = world.call(role, "GET", "/v1/memory/drafts", params={"limit": 100})
        found = [d["id"] for d in r.json()["drafts"]]
    else:
        target = world.org_memory(words)
        if operation == "getMemory":
            r = world.call(role, "GET", "/v1/memory", params={"limit": 100})
            found = [m["id"] for m in r.json()["memories"]]
        elif operation == "getMemorySearch":
            r = world.call(role, "GET", "/v1/memory/search", params={"q": words})
            found = [m["id"] for m in r.json()["results"]]
        else:
            # By meaning: wait for the target's vector, then ask with its own words (nearest).
            mode = operation.split("=")[1]
            content = world.call("owner", "GET", f"/v1/memory/{target}").json()["memory"]
            wait_for(lambda: not vector_jobs.pending(Database(world.engine)), "the embeddings")
            params = {"q": content["content"], "mode": mode, "limit": 5}
            r = world.call(role, "GET", "/v1/memory/search", params=params)
            assert r.json()["mode"] == mode
            found = [m["id"] for m in r.json()["results"]]
    assert r.status_code == 200, r.text
    assert (target in found) is LISTING_TABLE[operation][role]
    # Nothing of acme's is ever in an outsider's answer, whatever its shape.
    if not LISTING_TABLE[operation][role]:
        assert "acme" not in r.text and "alice" not in r.text


SAVE_TABLE = {"owner": 201, "member": 201, "admin": 201, "other_org": 201, "no_org": 403}
AUDIT_TABLE = {"owner": 403, "member": 403, "admin": 200, "other_org": 200, "no_org": 403}


@pytest.mark.parametrize("role", list(ROLES))
def test_acl_table_save_to_org(world: World, role: str) -> None:
    words = f"zq{secrets.token_hex(4)}"
    r = world.call(role, "POST", "/v1/memory", json={"content": words, "scope": "org"})
    assert r.status_code == SAVE_TABLE[role], r.text
    if r.status_code == 403:
        assert r.json()["code"] == "org_scope_forbidden"
        # Nothing stored, not even as personal.
        found = world.call(role, "GET", "/v1/memory/search", params={"q": words}).json()
        assert found["results"] == []
        return
    saved = r.json()["memory"]
    assert saved["scope"] == "org" and saved["created_by"] == ROLES[role][0]
    # The other-org user saved into their own org: acme's members do not see it.
    seen = world.call("member", "GET", f"/v1/memory/{saved['id']}").status_code
    assert seen == (404 if role == "other_org" else 200)


@pytest.mark.parametrize("role", list(ROLES))
def test_acl_table_org_audit(world: World, role: str) -> None:
    world.org_memory()
    r = world.call(role, "GET", "/v1/org/audit", params={"limit": 100})
    assert r.status_code == AUDIT_TABLE[role], r.text
    if r.status_code == 200:
        actors = {e["actor"] for e in r.json()["entries"]}
        if role == "admin":
            assert "alice" in actors
        else:
            # globex's log holds globex's writes only.
            assert actors <= {"carol"}
    else:
        assert r.json()["code"] == "insufficient_scope"


# The rules themselves, without a server.
def _principal(role: str, scopes: tuple[str, ...] | None = None) -> Principal:
    user, org, granted = ROLES[role]
    return Principal(user, org, scopes if scopes is not None else granted, "t", "key_x")


def test_rules_in_one_module() -> None:
    org = "org:acme"
    assert acl.readable_owners(_principal("member")) == ["bob", org]
    assert acl.readable_owners(_principal("member"), "user") == ["bob"]
    assert acl.readable_owners(_principal("member"), "org") == [org]
    assert acl.readable_owners(_principal("no_org"), "org") == []
    assert acl.may_change(_principal("owner"), org, "alice")
    assert not acl.may_change(_principal("member"), org, "alice")
    assert acl.may_change(_principal("admin"), org, "alice")
    assert not acl.may_change(_principal("other_org"), org, "alice")
    assert not acl.may_change(_principal("owner", ("mcp:write",)), org, "alice")
    # Edits and restores ask the same rule as deletes (domain/edits.py calls check_change).
    with pytest.raises(InsufficientScope):
        acl.check_change(_principal("member"), org, "alice")
    assert acl.may_change(_principal("owner"), "alice", None)
    assert not acl.may_change(_principal("admin"), "alice", None)
    with pytest.raises(InsufficientScope):
        acl.check_change(_principal("member"), org, "alice")
    with pytest.raises(OrgScopeForbidden):
        acl.save_owner(_principal("no_org"), "org")
    with pytest.raises(OrgScopeForbidden):
        acl.save_owner(_principal("owner", ("mcp:write",)), "org")
    assert acl.save_owner(_principal("owner"), "org") == org
    assert acl.save_owner(_principal("owner"), None) == "alice"
