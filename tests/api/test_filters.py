"""Filters on list and search (tag, created_after, created_before, updated_after, source), on
both engines: each alone, combined, with scope, before ranking, and the 400s that name them."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest

from mcp import Client
from memory_bank.ids import iso
from memory_bank.mcp import manifest
from memory_bank.mcp.executor import IN_PROCESS_BASE, Executor
from memory_bank.mcp.server import build_server

from .filter_bank import DAY, NOW, found, listed, plant

MEMBER = ("mcp:read", "mcp:write", "org:write")


@pytest.fixture
def bank(service: Any) -> tuple[Any, dict[str, str], dict[str, str]]:
    """Alice's memories over two months, three sources, some tags and one edit; their ids."""
    ids = {
        "old": plant(
            service, "budget plan for the offsite", ["Deploy", "ops"], created=NOW - 60 * DAY
        ),
        "month": plant(
            service, "budget review with finance", ["finance"], created=NOW - 30 * DAY, source="ci"
        ),
        "edited": plant(
            service,
            "budget numbers were revised",
            ["deploy"],
            created=NOW - 40 * DAY,
            updated=NOW - DAY,
            source="ci",
        ),
        "week": plant(service, "budget freeze announced", ["OPS", "deploy"], created=NOW - 5 * DAY),
        "today": plant(service, "budget meeting moved", [], created=NOW, source="cursor"),
    }
    plant(service, "budget of someone else", ["deploy"], user="bob", created=NOW - 5 * DAY)
    return service, service.auth("alice"), ids


# Each filter alone, on list and lexical search alike: (parameters, the memories that pass).
ALONE = [
    ({"tag": "deploy"}, {"old", "edited", "week"}),
    ({"tag": "DEPLOY"}, {"old", "edited", "week"}),
    ({"tag": ["deploy", "ops"]}, {"old", "week"}),
    ({"tag": ["deploy", "Ops", "finance"]}, set()),
    ({"tag": "nothing-has-this"}, set()),
    ({"created_after": iso(NOW - 30 * DAY)}, {"month", "week", "today"}),
    ({"created_before": iso(NOW - 30 * DAY)}, {"old", "edited"}),
    (
        {"created_after": (NOW - 45 * DAY).strftime("%Y-%m-%d")},
        {"month", "edited", "week", "today"},
    ),
    ({"updated_after": iso(NOW - 2 * DAY)}, {"edited", "today"}),
    ({"source": "ci"}, {"month", "edited"}),
    ({"source": "nobody"}, set()),
]


@pytest.mark.parametrize(("params", "expected"), ALONE)
def test_each_filter_narrows_list_and_search_alike(bank, params, expected):
    service, headers, ids = bank
    want = {ids[name] for name in expected}
    assert set(listed(service, headers, **params)) == want
    assert set(found(service, headers, "budget", **params)) == want


def test_filters_combine_with_and(bank):
    service, headers, ids = bank
    params = {
        "tag": "deploy",
        "source": "ci",
        "created_after": iso(NOW - 50 * DAY),
        "created_before": iso(NOW - 10 * DAY),
        "updated_after": iso(NOW - 3 * DAY),
    }
    assert listed(service, headers, **params) == [ids["edited"]]
    assert found(service, headers, "budget", **params) == [ids["edited"]]
    # Each bound alone would let in more; together they keep one.
    params["updated_after"] = iso(NOW)
    assert listed(service, headers, **params) == []


def test_times_are_inclusive_after_and_exclusive_before(bank):
    service, headers, ids = bank
    at = iso(NOW - 5 * DAY)
    assert ids["week"] in listed(service, headers, created_after=at)
    assert ids["week"] not in listed(service, headers, created_before=at)
    # An offset names the same instant: 2 hours ahead of UTC.
    local = (NOW - 5 * DAY + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+02:00")
    assert ids["week"] in listed(service, headers, created_after=local)
    assert ids["week"] not in listed(service, headers, created_before=local)


def test_a_date_alone_means_midnight_utc(service):
    headers = service.auth("alice")
    day = NOW.replace(hour=0, minute=0, second=0) - 3 * DAY
    before = plant(service, "late on the day before", created=day - timedelta(milliseconds=1))
    first = plant(service, "the first moment of the day", created=day)
    date = day.strftime("%Y-%m-%d")
    assert listed(service, headers, created_after=date) == [first]
    assert listed(service, headers, created_before=date) == [before]


def test_the_list_pages_through_what_passes(service):
    headers = service.auth("alice")
    tagged = [
        plant(service, f"note {i}", ["keep"] if i % 3 == 0 else [], created=NOW - i * DAY)
        for i in range(30)
    ]
    want = [mid for i, mid in enumerate(tagged) if i % 3 == 0]  # newest first
    seen: list[str] = []
    cursor = None
    while True:
        params = {"tag": "keep", "limit": 3, **({"cursor": cursor} if cursor else {})}
        r = service.client.get("/v1/memory", params=params, headers=headers)
        assert r.status_code == 200, r.text
        seen += [m["id"] for m in r.json()["memories"]]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == want


def test_the_list_is_newest_first_by_creation_time(service):
    headers = service.auth("alice")
    # Imported memories keep their times: ids need not follow them.
    late = plant(service, "written last", created=NOW - DAY)
    early = plant(service, "written first but dated later", created=NOW)
    assert listed(service, headers)[:2] == [early, late]


def test_filters_apply_to_org_memories_with_scope(service):
    alice = service.auth("alice", org="acme", scopes=MEMBER, source="claude-desktop")
    bob = service.auth("bob", org="acme", scopes=MEMBER, source="ci")

    def save(headers: dict[str, str], content: str, tags: list[str], scope: str) -> str:
        body = {"content": content, "tags": tags, "scope": scope}
        r = service.client.post("/v1/memory", json=body, headers=headers)
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    mine = save(alice, "incident runbook lives in the wiki", ["Incident"], "user")
    shared = save(bob, "incident channel is #ops-incidents", ["incident"], "org")
    other = save(bob, "incident retro on Friday", ["retro"], "org")
    for params, want in (
        ({"tag": "incident"}, {mine, shared}),
        ({"tag": "incident", "scope": "org"}, {shared}),
        ({"tag": "incident", "scope": "user"}, {mine}),
        ({"source": "ci", "scope": "all"}, {shared, other}),
        ({"source": "ci", "scope": "user"}, set()),
    ):
        assert set(listed(service, alice, **params)) == want, params
        assert set(found(service, alice, "incident", **params)) == want, params


def test_top_k_are_the_best_k_that_pass(service):
    headers = service.auth("alice")
    # Strong matches without the tag, then weak matches with it: an unfiltered top 5 holds
    # none of the tagged ones, so filtering after ranking would return nothing.
    for i in range(20):
        plant(service, f"invoice invoice invoice {i}", created=NOW - i * DAY)
    for i in range(8):
        plant(
            service,
            f"invoice among many other words about the quarterly {i} report and travel",
            ["billing"],
            created=NOW - i * DAY,
        )
    everything = service.client.get(
        "/v1/memory/search", params={"q": "invoice", "limit": 50}, headers=headers
    ).json()["results"]
    assert not any("billing" in m["tags"] for m in everything[:5])
    best_tagged = [(m["id"], m["score"]) for m in everything if "billing" in m["tags"]][:5]
    r = service.client.get(
        "/v1/memory/search", params={"q": "invoice", "limit": 5, "tag": "billing"}, headers=headers
    )
    assert [(m["id"], m["score"]) for m in r.json()["results"]] == best_tagged
    assert len(best_tagged) == 5


def test_a_source_with_a_trailing_space_is_another_source(service):
    # One answer on both engines (MariaDB's PAD SPACE collation would ignore the space): exact.
    headers = service.auth("alice")
    sources = {"plain": "alice-src", "spaced": "alice-src ", "tagged": "alice-src"}
    ids = {
        name: plant(
            service, f"budget from {name}", ["deploy"] if name == "tagged" else [], source=src
        )
        for name, src in sources.items()
    }
    for source in ("alice-src", "alice-src ", "alice-src  "):
        want = {ids[name] for name, src in sources.items() if src == source}
        assert set(listed(service, headers, source=source)) == want, source
        assert set(found(service, headers, "budget", source=source)) == want, source
        tagged = {ids["tagged"]} & want
        assert set(listed(service, headers, source=source, tag="deploy")) == tagged, source
        assert set(found(service, headers, "budget", source=source, tag="deploy")) == tagged


def test_tags_follow_edits(bank):
    service, headers, ids = bank
    r = service.client.patch(
        f"/v1/memory/{ids['today']}",
        json={"tags": ["Deploy"]},
        headers={**headers, "Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 200, r.text
    assert ids["today"] in listed(service, headers, tag="deploy")
    r = service.client.patch(
        f"/v1/memory/{ids['old']}",
        json={"tags": []},
        headers={**headers, "Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 200, r.text
    assert ids["old"] not in listed(service, headers, tag="deploy")
    assert ids["old"] in listed(service, headers, updated_after=iso(NOW))
    assert service.client.delete(f"/v1/memory/{ids['week']}", headers=headers).status_code == 204
    assert set(listed(service, headers, tag="deploy")) == {ids["edited"], ids["today"]}


BAD = [
    ({"created_after": "yesterday"}, "created_after"),
    ({"created_after": "2026-12-01T09:30:00"}, "created_after"),  # no offset
    ({"created_before": "2026-02-30"}, "created_before"),
    ({"updated_after": "2026-12-01T25:00:00Z"}, "updated_after"),
    # RFC 3339 in ASCII only: not another script's digits, not a trailing newline.
    ({"created_after": "２０２６-１２-０１"}, "created_after"),
    ({"created_before": "2026-12-01\n"}, "created_before"),
    ({"updated_after": "2026-12-01T09:30:00Z\n"}, "updated_after"),
    ({"tag": ""}, "tag"),
    ({"tag": "   "}, "tag"),
    ({"tag": "x" * 65}, "tag"),
    ({"tag": [f"t{i}" for i in range(33)]}, "tag"),
    ({"source": "s" * 129}, "source"),
    ({"source": ""}, "source"),
]


@pytest.mark.parametrize("path", ["/v1/memory", "/v1/memory/search"])
def test_a_window_that_ends_where_it_starts_is_empty_not_an_error(service, path):
    headers = service.auth("alice")
    saved = service.client.post("/v1/memory", json={"content": "budget review"}, headers=headers)
    assert saved.status_code == 201
    day = saved.json()["memory"]["created_at"][:10]
    for after, before in ((day, day), ("2999-01-02", "2999-01-01")):
        query = {"created_after": after, "created_before": before}
        if path.endswith("search"):
            query["q"] = "budget"
        r = service.client.get(path, params=query, headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["results" if path.endswith("search") else "memories"] == []
    # The same day as a half-open window that holds it finds it (the filter is not just off).
    query = {"created_after": day, **({"q": "budget"} if path.endswith("search") else {})}
    r = service.client.get(path, params=query, headers=headers)
    found = r.json()["results" if path.endswith("search") else "memories"]
    assert [m["id"] for m in found] == [saved.json()["memory"]["id"]]


@pytest.mark.parametrize(("params", "field"), BAD)
@pytest.mark.parametrize("path", ["/v1/memory", "/v1/memory/search"])
def test_a_bad_value_is_a_400_naming_the_parameter(service, path, params, field):
    headers = service.auth("alice")
    query = {"q": "budget", **params} if path.endswith("search") else params
    r = service.client.get(path, params=query, headers=headers)
    assert r.status_code == 400, r.text
    problem = r.json()
    assert problem["code"] == "invalid_request"
    # A tag is named with its place in the list (tag.0) when its own shape is wrong.
    assert problem["field"] == field or problem["field"].startswith(f"{field}.")
    assert field in problem["detail"]


def test_a_tool_call_with_a_time_not_in_ascii_is_refused_naming_the_argument(service):
    # MCP tools reach the same REST validation in-process: the same 400, as the tool's answer.
    secret = service.key()
    bad = {
        "created_after": "２０２６-１２-０１",
        "created_before": "2026-12-01\n",
        "updated_after": "2026-12-01T09:30:00Z\n",
    }

    async def run() -> dict[str, Any]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=service.app), base_url=IN_PROCESS_BASE
        ) as http:
            server = build_server(manifest.load(), Executor(http, lambda: secret))
            async with Client(server) as client:
                answers = {}
                for name, value in bad.items():
                    for tool, args in (("getMemory", {}), ("getMemorySearch", {"q": "budget"})):
                        got = await client.call_tool(tool, {**args, name: value})
                        answers[f"{tool}/{name}"] = json.loads(got.content[0].text)
                return answers

    for call, problem in anyio.run(run).items():
        assert problem["status"] == 400 and problem["code"] == "invalid_request", (call, problem)
        assert problem["field"] == call.split("/")[1], (call, problem)


def test_a_cursor_issued_before_time_order_still_pages(service):
    from memory_bank.app import state_of
    from memory_bank.domain import cursor

    headers = service.auth("alice")
    saved = []
    for i in range(4):
        r = service.client.post("/v1/memory", json={"content": f"note {i}"}, headers=headers)
        saved.insert(0, r.json()["memory"]["id"])  # newest first
    # Such a cursor holds the last id alone: the listing resumes at the time that id was minted.
    old = cursor.encode(state_of(service.app).secret, "alice", "memories", saved[1])
    assert listed(service, headers, cursor=old) == saved[2:]


def test_updated_after_lists_new_memories_then_older_ones_edited_since(service):
    headers = service.auth("alice")
    since = NOW - 2 * DAY
    old = [plant(service, f"old {i}", created=NOW - (30 + i) * DAY) for i in range(5)]
    edited = [
        plant(service, f"old but edited {i}", created=NOW - (20 + i) * DAY, updated=NOW - DAY)
        for i in range(2)
    ]
    new = [plant(service, f"new {i}", created=NOW - i * timedelta(hours=5)) for i in range(3)]
    want = [*new, *edited]  # newest first by creation time
    seen: list[str] = []
    cursor = None
    while True:
        params = {"updated_after": iso(since), "limit": 2, **({"cursor": cursor} if cursor else {})}
        r = service.client.get("/v1/memory", params=params, headers=headers)
        assert r.status_code == 200, r.text
        seen += [m["id"] for m in r.json()["memories"]]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == want
    assert not set(old) & set(seen)
    # With a creation range inside the edited span, only the edited ones.
    assert listed(service, headers, updated_after=iso(since), created_before=iso(since)) == edited


@pytest.mark.parametrize("few", [500, 0])
def test_a_filtered_search_past_the_postings_budget_still_finds_k(service, monkeypatch, few):
    from memory_bank.domain import filters
    from memory_bank.search import index

    # A budget of 2 postings sends "harbour" (on every memory) down the candidates-only path:
    # the rare word's memories carry no tag, so none of its candidates pass the filter. With
    # few=0 the passing memories are never ranked by id, so the posting checks must do it.
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 2)
    monkeypatch.setattr(filters, "FEW", few)
    headers = service.auth("alice")
    for i in range(3):
        plant(service, f"zebra sighting at the harbour {i}", created=NOW - i * DAY)
    tagged = [
        plant(service, f"harbour walk {i}", ["walks"], created=NOW - i * DAY) for i in range(4)
    ]
    got = found(service, headers, "zebra harbour", tag="walks", limit=3)
    assert len(got) == 3 and set(got) <= set(tagged)
