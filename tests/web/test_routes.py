"""The panel's routes: served at / with a strict CSP, and a plain 404 when switched off."""

from __future__ import annotations

from memory_bank.web.routes import CSP


def test_panel_is_served_with_a_strict_policy(service):
    r = service.client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "frame-ancestors 'none'" in CSP
    assert "unsafe-inline" not in CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="/panel/app.js"></script>' in r.text
    js = service.client.get("/panel/app.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert js.headers["content-security-policy"] == CSP
    assert service.client.get("/panel/nope.js").status_code == 404
    assert service.client.get("/panel/..%2Fcli.py").status_code == 404


def test_docs_keep_their_inline_script(service):
    r = service.client.get("/docs/")
    assert r.status_code == 200 and "content-security-policy" not in r.headers


def test_panel_off_is_404_and_the_api_still_works(make_service):
    service = make_service(panel_enabled=False)
    for path in ("/", "/panel/app.js", "/panel/panel.css"):
        r = service.client.get(path)
        assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    headers = service.auth()
    assert (
        service.client.post("/v1/memory", json={"content": "x"}, headers=headers).status_code == 201
    )
    assert service.client.get("/v1/memory", headers=headers).status_code == 200
