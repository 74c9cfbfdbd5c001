"""Credentials: 401 for missing or unusable keys, 403 for missing scopes, identity from the key."""

from __future__ import annotations

from datetime import timedelta

from contract import assert_problem, row_counts
from memory_bank.ids import utcnow
from memory_bank.spec import load_spec, requirements
from memory_bank.store import api_keys
from memory_bank.store.engine import writing

OPERATIONS = [
    ("post", "/v1/memory", {"json": {"content": "x"}}),
    ("get", "/v1/memory", {}),
    ("get", "/v1/memory/search", {"params": {"q": "x"}}),
    ("get", "/v1/memory/mem_01ABCDEFGHJKMNPQRSTVWXYZ00", {}),
    ("delete", "/v1/memory/mem_01ABCDEFGHJKMNPQRSTVWXYZ00", {}),
]


def _call(service, method, path, kwargs, headers):
    return getattr(service.client, method)(path, headers=headers, **kwargs)


def _assert_401(r):
    assert_problem(r, 401, "unauthorized")
    assert r.headers["www-authenticate"].startswith("Bearer")


def test_missing_or_malformed_credentials_are_401(service):
    before = row_counts(service.engine)
    for method, path, kwargs in OPERATIONS:
        for headers in (
            {},
            {"Authorization": ""},
            {"Authorization": "Bearer"},
            {"Authorization": "Bearer "},
            {"Authorization": "Basic YWxpY2U6c2VjcmV0"},
            {"Authorization": "Token mb_abc"},
            {"Authorization": "Bearer mb_"},
            {"Authorization": "Bearer mb_" + "A" * 43},
            {"Authorization": "Bearer not-a-key"},
        ):
            _assert_401(_call(service, method, path, kwargs, headers))
    assert row_counts(service.engine) == before


def test_a_401_says_how_to_get_a_key_and_whether_the_key_was_bad(service):
    secret = service.key()
    record = next(k for k in _keys(service) if secret[3:].startswith(k.prefix))
    writing(service.engine, lambda conn: api_keys.revoke_key(conn, record.id))
    missing = service.client.get("/v1/memory")
    unknown = service.client.get("/v1/memory", headers={"Authorization": "Bearer mb_" + "A" * 43})
    revoked = service.client.get("/v1/memory", headers={"Authorization": f"Bearer {secret}"})
    for r in (missing, unknown, revoked):
        _assert_401(r)
        assert "memory-bank keys create" in r.json()["detail"]
    # RFC 6750: no error code when no credential came; invalid_token for one that is no key.
    assert missing.headers["www-authenticate"] == 'Bearer realm="memory-bank"'
    for r in (unknown, revoked):
        assert 'error="invalid_token"' in r.headers["www-authenticate"]


def test_a_key_with_one_character_changed_is_401(service):
    secret = service.key()
    last = secret[-1]
    tampered = secret[:-1] + ("A" if last != "A" else "B")
    _assert_401(service.client.get("/v1/memory", headers={"Authorization": f"Bearer {tampered}"}))
    assert service.client.get(
        "/v1/memory", headers={"Authorization": f"Bearer {secret}"}
    ).is_success


def test_revoked_key_is_401(service):
    secret = service.key()
    headers = {"Authorization": f"Bearer {secret}"}
    assert service.client.get("/v1/memory", headers=headers).status_code == 200
    record = next(k for k in _keys(service) if secret[3:].startswith(k.prefix))
    assert writing(service.engine, lambda conn: api_keys.revoke_key(conn, record.id))
    for method, path, kwargs in OPERATIONS:
        _assert_401(_call(service, method, path, kwargs, headers))
    # Revoking twice reports that nothing was left to revoke.
    assert not writing(service.engine, lambda conn: api_keys.revoke_key(conn, record.id))


def test_expired_key_is_401_and_unexpired_key_works(service):
    expired = service.key(expires_at=utcnow() - timedelta(seconds=1))
    fresh = service.key(expires_at=utcnow() + timedelta(days=1))
    for method, path, kwargs in OPERATIONS:
        _assert_401(_call(service, method, path, kwargs, {"Authorization": f"Bearer {expired}"}))
    r = service.client.get("/v1/memory", headers={"Authorization": f"Bearer {fresh}"})
    assert r.status_code == 200


def test_read_only_key_gets_403_on_writes_and_changes_nothing(service):
    writer = service.auth()
    mid = service.client.post("/v1/memory", json={"content": "keep me"}, headers=writer).json()[
        "memory"
    ]["id"]
    reader = service.auth(scopes=("mcp:read",))
    before = row_counts(service.engine)
    for r in (
        service.client.post("/v1/memory", json={"content": "nope"}, headers=reader),
        service.client.delete(f"/v1/memory/{mid}", headers=reader),
        # The scope is checked before anything else: no existence leak via 404 vs 403.
        service.client.delete("/v1/memory/mem_unknown", headers=reader),
    ):
        doc = assert_problem(r, 403, "insufficient_scope")
        assert doc["required_scope"] == "mcp:write"
    assert row_counts(service.engine) == before
    assert service.client.get(f"/v1/memory/{mid}", headers=reader).status_code == 200
    assert service.client.get("/v1/memory/search", params={"q": "keep"}, headers=reader).is_success


def test_write_only_key_gets_403_on_reads(service):
    writer = service.auth(scopes=("mcp:write",))
    assert service.client.post("/v1/memory", json={"content": "x"}, headers=writer).is_success
    for r in (
        service.client.get("/v1/memory", headers=writer),
        service.client.get("/v1/memory/search", params={"q": "x"}, headers=writer),
    ):
        assert assert_problem(r, 403, "insufficient_scope")["required_scope"] == "mcp:read"


def test_review_only_key_cannot_use_memory_operations(service):
    reviewer = service.auth(scopes=("memory:review",))
    for method, path, kwargs in OPERATIONS:
        assert_problem(_call(service, method, path, kwargs, reviewer), 403, "insufficient_scope")


def test_scope_and_source_come_from_the_key(service):
    headers = service.auth("alice", source="claude-desktop", org="acme")
    r = service.client.post(
        "/v1/memory",
        json={"content": "Prefers dark mode", "scope": "user", "source": "forged"},
        headers=headers,
    )
    assert r.status_code == 201
    assert r.json()["memory"]["scope"] == "user"
    assert r.json()["memory"]["source"] == "claude-desktop"
    # Without org:write, "org" is refused, never quietly stored as personal; other values are
    # not scopes at all.
    r = service.client.post(
        "/v1/memory", json={"content": "scope org", "scope": "org"}, headers=headers
    )
    assert_problem(r, 403, "org_scope_forbidden")
    for scope in ("team", "global", ""):
        r = service.client.post(
            "/v1/memory", json={"content": f"scope {scope}", "scope": scope}, headers=headers
        )
        assert_problem(r, 400, "invalid_request")
    listed = service.client.get("/v1/memory", headers=headers).json()["memories"]
    assert [m["content"] for m in listed] == ["Prefers dark mode"]


def test_headers_cannot_change_the_user(service):
    alice = service.auth("alice")
    service.client.post("/v1/memory", json={"content": "alice only"}, headers=alice)
    bob = service.auth("bob")
    for extra in ({"X-User-Id": "alice"}, {"X-Forwarded-User": "alice"}):
        r = service.client.get("/v1/memory", headers={**bob, **extra})
        assert r.json()["memories"] == []


def test_only_the_hash_of_a_key_is_stored(service):
    secret = service.key()
    with service.engine.connect() as conn:
        from memory_bank.store.schema import api_key

        rows = [dict(r._mapping) for r in conn.execute(api_key.select()).all()]
    assert rows
    for row in rows:
        assert all(secret not in str(v) and secret[3:] not in str(v) for v in row.values())


def test_keys_are_random_prefixed_and_unique(service):
    secrets_seen = {service.key() for _ in range(5)}
    assert len(secrets_seen) == 5
    assert all(s.startswith("mb_") and len(s) >= 40 for s in secrets_seen)


def test_every_operation_in_the_spec_declares_its_scopes():
    scopes = {op: need.scopes for op, need in requirements(load_spec()).items()}
    assert scopes["postMemory"] == ("mcp:write",)
    assert scopes["deleteMemoryById"] == ("mcp:write",)
    assert scopes["getMemory"] == scopes["getMemorySearch"] == ("mcp:read",)
    assert scopes["getMemoryById"] == ("mcp:read",)
    assert scopes["getHealthz"] == scopes["getReadyz"] == ()


def test_probes_need_no_credential(service):
    assert service.client.get("/healthz").status_code == 200
    assert service.client.get("/readyz").status_code == 200


def _keys(service):
    with service.engine.connect() as conn:
        return api_keys.list_keys(conn)
