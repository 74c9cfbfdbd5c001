"""`memory-bank keys create --org` with the org scopes, and `memory-bank orgs list`."""

from __future__ import annotations

import re

from memory_bank import cli


def run(capsys, *argv):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_org_keys_share_memories_and_orgs_list_counts_them(service, database_url, capsys):
    base = ["--database-url", database_url]
    made = {}
    for user, org, scopes in (
        ("alice", "acme", "mcp:read,mcp:write,org:write"),
        ("bob", "acme", "mcp:read,mcp:write,org:admin"),
        ("carol", "other", "mcp:read"),
    ):
        code, out, _ = run(
            capsys, *base, "keys", "create", "--user", user, "--org", org, "--scopes", scopes
        )
        assert code == 0, out
        assert f"(org {org})" in out
        made[user] = {"Authorization": "Bearer " + re.search(r"key:\s+(mb_\S+)", out).group(1)}
    r = service.client.post(
        "/v1/memory", json={"content": "Runbook step", "scope": "org"}, headers=made["alice"]
    )
    assert r.status_code == 201, r.text
    assert (
        service.client.get(
            f"/v1/memory/{r.json()['memory']['id']}", headers=made["bob"]
        ).status_code
        == 200
    )
    code, out, _ = run(capsys, *base, "orgs", "list")
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert rows == {"acme": ["2", "1"], "other": ["1", "0"]}
    code, listed, _ = run(capsys, *base, "keys", "list")
    assert "acme" in listed and "org:admin" in listed


def test_org_scopes_need_an_org_and_user_ids_cannot_alias_an_org(database_url, capsys):
    base = ["--database-url", database_url, "keys", "create"]
    code, _, err = run(capsys, *base, "--user", "dave", "--scopes", "mcp:read,org:write")
    assert code == 2 and "need an org" in err
    code, _, err = run(capsys, *base, "--user", "org:acme", "--scopes", "mcp:read")
    assert code == 2 and "must not start with 'org:'" in err
    code, _, err = run(capsys, *base, "--user", "dave", "--org", "x" * 125)
    assert code == 2 and "org id must be" in err
    code, _, err = run(capsys, *base, "--user", "dave", "--scopes", "org:owner")
    assert code == 2 and "org:admin" in err
