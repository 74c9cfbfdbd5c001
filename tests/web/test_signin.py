"""The one-time panel sign-in code: works once, briefly, for its user only."""

from __future__ import annotations

from memory_bank.app import state_of
from memory_bank.web import signin


def _state(service):
    return state_of(service.app)


def test_code_is_traded_once_for_a_short_lived_key(service):
    code = signin.make_code(_state(service).secret, "local", 15)
    r = service.client.post("/v1/panel/session", json={"code": code})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["user_id"] == "local" and body["key"].startswith("mb_")
    assert r.headers["cache-control"] == "no-store"
    headers = {"Authorization": f"Bearer {body['key']}"}
    assert service.client.get("/v1/memory/drafts", headers=headers).status_code == 200
    saved = service.client.post("/v1/memory", json={"content": "from the panel"}, headers=headers)
    assert saved.json()["memory"]["source"] == "panel"
    again = service.client.post("/v1/panel/session", json={"code": code})
    assert again.status_code == 401 and "already used" in again.json()["detail"]


def test_expired_forged_and_malformed_codes_are_401(service):
    secret = _state(service).secret
    expired = signin.make_code(secret, "local", -1)
    assert service.client.post("/v1/panel/session", json={"code": expired}).status_code == 401
    forged = signin.make_code(b"another server's secret", "local", 15)
    assert service.client.post("/v1/panel/session", json={"code": forged}).status_code == 401
    payload, _, mac = signin.make_code(secret, "local", 15).partition(".")
    other = signin.make_code(secret, "bob", 15).partition(".")[0]
    assert (
        service.client.post("/v1/panel/session", json={"code": f"{other}.{mac}"}).status_code == 401
    )
    for junk in ("x", "a.b", "....", "é.ü", f"{payload}.ü"):
        assert service.client.post("/v1/panel/session", json={"code": junk}).status_code == 401
    assert service.client.post("/v1/panel/session", json={}).status_code == 400


def test_no_sign_in_when_the_panel_is_off(make_service):
    service = make_service(panel_enabled=False)
    code = signin.make_code(_state(service).secret, "local", 15)
    r = service.client.post("/v1/panel/session", json={"code": code})
    assert r.status_code == 404


def test_serve_prints_a_link_for_the_local_user(database_url, capsys):
    from memory_bank.cli.panel import print_local_link
    from memory_bank.cli.serve import ensure_local_key
    from memory_bank.settings import Settings
    from memory_bank.store.database import Database
    from memory_bank.store.engine import make_engine
    from memory_bank.store.migrate import migrate

    engine = make_engine(database_url, 1)
    migrate(engine)
    db = Database(engine)
    settings = Settings(database_url=database_url)
    print_local_link(settings, db, "http://0.0.0.0:8080")
    assert "#signin=" not in capsys.readouterr().out  # no local user yet: no link
    ensure_local_key(db)
    print_local_link(settings, db, "http://0.0.0.0:8080")
    out = capsys.readouterr().out
    assert "http://127.0.0.1:8080/#signin=" in out
    print_local_link(settings.replace(panel_enabled=False), db, "http://x:1")
    assert "#signin=" not in capsys.readouterr().out
    db.dispose()


def test_link_code_and_key_stay_out_of_the_server_log(tmp_path):
    import re

    import httpx

    from live_server import start_server, stop_server

    server = start_server(
        f"sqlite:///{tmp_path / 'log.db'}", extra_env={"MEMORY_BANK_LOG_LEVEL": "info"}
    )
    try:
        link = re.search(r"(http://\S+)/#signin=(\S+)", server.first_output)
        assert link, server.first_output
        base, code = link.groups()
        assert httpx.get(base + "/").status_code == 200  # what the browser fetches: no fragment
        r = httpx.post(base + "/v1/panel/session", json={"code": code})
        key = r.json()["key"]
        headers = {"Authorization": f"Bearer {key}"}
        assert httpx.get(base + "/v1/memory", headers=headers).status_code == 200
        server.process.terminate()
        server.process.wait(timeout=15)
        log = server.process.stdout.read() or ""  # type: ignore[union-attr]
    finally:
        stop_server(server)
    # The access log is on (the service's JSON lines), and so the test can fail:
    assert '"method":"GET","route":"other","path":"/","status":200' in log
    assert '"path":"/v1/panel/session"' in log
    assert code not in log and key not in log
