"""Kill switches: memory off for everyone (503) or for one user (403), checked in one place."""

from __future__ import annotations

from memory_bank.store import user_settings
from memory_bank.store.engine import writing

ROUTES = [
    ("post", "/v1/memory", {"content": "x"}),
    ("get", "/v1/memory", None),
    ("get", "/v1/memory/search?q=x", None),
    ("get", "/v1/memory/mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C", None),
    ("delete", "/v1/memory/mem_01JF3Y9Z0Q8N5W6X7Y8Z9A0B1C", None),
    ("get", "/v1/memory/drafts", None),
    ("get", "/v1/memory/settings", None),
]
ALL = ("mcp:read", "mcp:write", "memory:review")


def _call(service, method, path, body, headers):
    kwargs = {"headers": headers} | ({"json": body} if body is not None else {})
    return getattr(service.client, method)(path, **kwargs)


def test_memory_off_for_everyone_is_503(make_service):
    service = make_service(memory_enabled=False)
    headers = service.auth(scopes=ALL)
    for method, path, body in ROUTES:
        r = _call(service, method, path, body, headers)
        assert r.status_code == 503, (method, path, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "memory_switched_off"
    assert service.client.get("/healthz").status_code == 200


def test_memory_off_for_one_user_is_403_for_that_user_only(make_service):
    service = make_service()
    alice = service.auth("alice", scopes=ALL)
    bob = service.auth("bob", scopes=ALL)
    assert (
        service.client.post("/v1/memory", json={"content": "kept"}, headers=alice).status_code
        == 201
    )
    writing(service.engine, lambda c: user_settings.change(c, "alice", memory_disabled=True))
    for method, path, body in ROUTES:
        r = _call(service, method, path, body, alice)
        assert r.status_code == 403, (method, path, r.text)
        assert r.json()["code"] == "memory_disabled"
    assert service.client.get("/v1/memory", headers=bob).status_code == 200
    writing(service.engine, lambda c: user_settings.change(c, "alice", memory_disabled=False))
    r = service.client.get("/v1/memory", headers=alice)
    assert r.status_code == 200 and len(r.json()["memories"]) == 1


def test_user_switch_from_the_cli(database_url, tmp_path, capsys, monkeypatch):
    from memory_bank.cli import main

    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    assert main(["users", "disable", "carol"]) == 0
    assert "off for user carol" in capsys.readouterr().out
    from memory_bank.store.engine import make_engine

    engine = make_engine(database_url, 1)
    with engine.connect() as conn:
        assert user_settings.get(conn, "carol").memory_disabled is True
    assert main(["users", "enable", "carol"]) == 0
    with engine.connect() as conn:
        assert user_settings.get(conn, "carol").memory_disabled is False
    engine.dispose()


def test_bad_credential_is_still_401_when_memory_is_off(make_service):
    service = make_service(memory_enabled=False)
    r = service.client.get("/v1/memory", headers={"Authorization": "Bearer mb_nope"})
    assert r.status_code == 401
