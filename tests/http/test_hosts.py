"""The Host header is checked before it is used: a foreign one is a 421, and no link,
redirect or header ever carries a host the operator did not allow."""

from __future__ import annotations

import pytest

from contract import assert_problem
from memory_bank.errors import quoted
from memory_bank.http.urls import allowed_hosts, hostname
from memory_bank.settings import Settings

FOREIGN = ("evil.example", "evil.example:8080", 'evil", error="x', "127.0.0.1.evil.example", "")


def test_a_foreign_host_is_421_before_anything_runs(service):
    headers = service.auth("alice")
    for host in FOREIGN:
        for method, path in (
            ("GET", "/v1/memory"),
            ("GET", "/v1/memory/"),
            ("POST", "/mcp"),
            ("GET", "/.well-known/oauth-protected-resource"),
            ("GET", "/"),
        ):
            r = service.client.request(method, path, headers={**headers, "Host": host})
            assert_problem(r, 421, "misdirected_request", "Host")
            assert "location" not in r.headers and "www-authenticate" not in r.headers
            if host:
                assert host not in r.text
    # Probes are reached by address (load balancers, scrapers) and build no links.
    assert service.client.get("/healthz", headers={"Host": "10.1.2.3:8080"}).status_code == 200


def test_loopback_the_bind_address_and_listed_hosts_are_allowed(make_service):
    service = make_service(allowed_hosts="memory.example.com, *.corp.example", host="10.0.0.5")
    headers = service.auth("alice")
    for host in (
        "localhost",
        "localhost:8080",
        "127.0.0.1:9",
        "[::1]:8080",
        "10.0.0.5:8080",
        "MEMORY.example.com",
        "memory.example.com.",
        "a.corp.example",
    ):
        r = service.client.get("/v1/memory", headers={**headers, "Host": host})
        assert r.status_code == 200, (host, r.text)
    for host in ("corp.example", "memory.example.com.evil", "[::2]"):
        r = service.client.get("/v1/memory", headers={**headers, "Host": host})
        assert r.status_code == 421, host


def test_links_use_the_public_url_or_an_allowed_host_only(make_service):
    service = make_service()
    meta = service.client.get(
        "/.well-known/oauth-protected-resource", headers={"Host": "localhost:7000"}
    )
    assert meta.json()["resource"] == "http://localhost:7000/mcp"
    public = make_service(public_url="https://memory.example.com/")
    meta = public.client.get(
        "/.well-known/oauth-protected-resource", headers={"Host": "memory.example.com"}
    )
    assert meta.json()["resource"] == "https://memory.example.com/mcp"
    # The public URL's host is allowed; links never take the Host header then.
    r = public.client.post("/mcp", json={}, headers={"Host": "localhost"})
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert (
        'resource_metadata="https://memory.example.com/.well-known/oauth-protected-resource"'
        in challenge
    )


def test_api_paths_with_a_trailing_slash_are_404_not_redirects(service):
    headers = service.auth("alice")
    for path in ("/v1/memory/", "/v1/memory/search/", "/healthz/", "/v1/memory/drafts/"):
        r = service.client.get(path, headers=headers, follow_redirects=False)
        assert_problem(r, 404, "not_found")
        assert "location" not in r.headers


def test_header_parameters_are_quoted_strings():
    assert quoted('a"b') == '"a\\"b"'
    assert quoted("a\\b") == '"a\\\\b"'
    assert quoted("line\r\nInjected: yes") == '"lineInjected: yes"'


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("Example.COM:443", "example.com"),
        ("[::1]:80", "::1"),
        ("host.", "host"),
        ("a b", None),
        ('x"y', None),
        ("x/y", None),
        ("", None),
    ],
)
def test_hostname_reads_a_host_header_strictly(header, name):
    assert hostname(header) == name


def test_allowed_hosts_come_from_the_settings():
    allowed = allowed_hosts(Settings(public_url="https://m.example.org:8443/base"))
    assert allowed.allows("m.example.org:8443") and allowed.allows("localhost")
    assert not allowed.allows("example.org")
    wildcard = allowed_hosts(Settings(host="0.0.0.0"))
    assert not wildcard.allows("0.0.0.0") and not wildcard.allows("192.168.1.2")
