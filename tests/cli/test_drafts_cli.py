"""`memory-bank drafts audit`: the review decisions of an owner, read back without content."""

from __future__ import annotations

from memory_bank import cli


def test_the_audit_lists_each_decision_newest_first_without_content(make_service, capsys):
    service = make_service(review_required=True)
    agent = service.auth("alice", scopes=("mcp:read", "mcp:write"), source="agent-x")
    reviewer = service.auth("alice", scopes=("mcp:read", "memory:review"), source="panel")
    drafts = []
    for text in ("the secret plan one", "the secret plan two"):
        r = service.client.post("/v1/memory", json={"content": text}, headers=agent)
        assert r.status_code == 202
        drafts.append(r.json()["draft"]["id"])
    kept = service.client.post(f"/v1/memory/drafts/{drafts[0]}/confirm", headers=reviewer)
    assert kept.status_code == 201
    assert service.client.post(f"/v1/memory/drafts/{drafts[1]}/reject", headers=reviewer)
    url = str(service.engine.url.render_as_string(hide_password=False))

    code = cli.main(["--database-url", url, "drafts", "audit", "--user", "alice"])
    out, _ = capsys.readouterr()
    assert code == 0
    lines = [line.split("\t") for line in out.splitlines()]
    assert lines[0] == ["AT", "ACTION", "DRAFT", "MEMORY", "KEY", "SOURCE"]
    events = [(f[1], f[2], f[3], f[5]) for f in lines[1:]]
    memory_id = kept.json()["memory"]["id"]
    assert events == [
        ("rejected", drafts[1], "-", "panel"),
        ("confirmed", drafts[0], memory_id, "panel"),
        ("created", drafts[1], "-", "agent-x"),
        ("created", drafts[0], "-", "agent-x"),
    ]
    assert "secret plan" not in out
    assert (
        cli.main(["--database-url", url, "drafts", "audit", "--user", "alice", "--limit", "1"]) == 0
    )
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert cli.main(["--database-url", url, "drafts", "audit", "--user", "bob"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == []
    assert cli.main(["--database-url", url, "drafts", "audit", "--user", "a", "--limit", "0"]) != 0
