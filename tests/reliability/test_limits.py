"""Rate limit, per-user quota and body cap: clear problems, nothing half-done."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import sqlalchemy as sa

from memory_bank.spec import load_spec
from memory_bank.store.schema import memory, memory_context, memory_term


def test_rate_limit_is_per_credential_with_retry_after(make_service):
    service = make_service(rate_limit_per_minute=5)
    alice, bob = service.auth("alice"), service.auth("bob")
    codes = [service.client.get("/v1/memory", headers=alice).status_code for _ in range(7)]
    assert codes[:5] == [200] * 5
    assert codes[5:] == [429, 429]
    r = service.client.get("/v1/memory", headers=alice)
    assert r.status_code == 429
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "rate_limited"
    assert int(r.headers["retry-after"]) >= 1
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-request-id"]
    # Another credential has its own allowance; probes are never limited.
    assert service.client.get("/v1/memory", headers=bob).status_code == 200
    assert service.client.get("/healthz").status_code == 200


def test_quota_refuses_with_409_and_frees_on_delete(make_service):
    service = make_service(max_memories_per_user=3)
    alice, bob = service.auth("alice"), service.auth("bob")
    ids = []
    for i in range(3):
        r = service.client.post("/v1/memory", json={"content": f"fact {i}"}, headers=alice)
        assert r.status_code == 201
        ids.append(r.json()["memory"]["id"])
    r = service.client.post(
        "/v1/memory",
        json={"content": "one too many", "contexts": [{"snippet": "x"}]},
        headers=alice,
    )
    assert r.status_code == 409
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "quota_exceeded" and r.json()["limit"] == 3
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 3
        orphans = conn.execute(
            sa.select(sa.func.count())
            .select_from(memory_context)
            .where(memory_context.c.snippet == "x")
        ).scalar()
        assert orphans == 0
        assert conn.execute(
            sa.select(sa.func.count()).select_from(memory_term).where(memory_term.c.term == "mani")
        ).scalar() in (0, None)
    # The quota is per user, and deleting frees room.
    assert service.client.post("/v1/memory", json={"content": "b"}, headers=bob).status_code == 201
    assert service.client.delete(f"/v1/memory/{ids[0]}", headers=alice).status_code == 204
    assert (
        service.client.post("/v1/memory", json={"content": "ok"}, headers=alice).status_code == 201
    )


def test_quota_counts_drafts_waiting_for_review(make_service):
    service = make_service(max_memories_per_user=2, review_required=True)
    agent = service.auth("alice", scopes=("mcp:read", "mcp:write"))
    codes = [
        service.client.post("/v1/memory", json={"content": f"d{i}"}, headers=agent).status_code
        for i in range(3)
    ]
    assert codes == [202, 202, 409]


def test_quota_holds_under_concurrent_saves(make_service):
    service = make_service(max_memories_per_user=5)
    alice = service.auth("alice")

    def save(i: int) -> int:
        return service.client.post(
            "/v1/memory", json={"content": f"race {i}"}, headers=alice
        ).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(save, range(16)))
    assert sorted(set(codes)) == [201, 409]
    assert codes.count(201) == 5
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 5


def test_body_cap_is_413_and_saves_nothing(make_service):
    service = make_service(max_body_bytes=2048)
    alice = service.auth("alice")
    r = service.client.post("/v1/memory", json={"content": "x" * 4000}, headers=alice)
    assert r.status_code == 413
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "payload_too_large"

    def chunks():
        # No Content-Length: the cap must also hold while the body streams in.
        yield b'{"content": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = service.client.post(
        "/v1/memory",
        content=chunks(),
        headers={**alice, "Content-Type": "application/json"},
    )
    assert r.status_code == 413
    assert r.headers["content-type"] == "application/problem+json"
    with service.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(memory)).scalar() == 0
    assert (
        service.client.post("/v1/memory", json={"content": "small"}, headers=alice).status_code
        == 201
    )


def test_a_chunked_body_within_the_cap_is_read_and_validated(make_service):
    service = make_service(max_body_bytes=2048)
    alice = service.auth("alice")
    headers = {**alice, "Content-Type": "application/json"}

    def chunks(*parts: bytes):
        # A generator body goes out with Transfer-Encoding: chunked and no Content-Length.
        def gen():
            yield from parts

        return gen()

    r = service.client.post(
        "/v1/memory", content=chunks(b'{"content": "sent ', b'in chunks"}'), headers=headers
    )
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["content"] == "sent in chunks"
    # And it is validated like any other body.
    r = service.client.post("/v1/memory", content=chunks(b'{"tags": ', b"[]}"), headers=headers)
    assert r.status_code == 400
    assert r.json()["code"] == "invalid_request"


def test_every_operation_documents_the_limits():
    """New operations must list the refusals the middleware can give them."""
    spec = load_spec()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            responses = set(op["responses"])
            if op.get("security", spec.get("security")) != []:
                assert {"401", "403", "429", "503"} <= responses, (method, path)
            if "requestBody" in op:
                assert {"400", "413", "415"} <= responses, (method, path)
