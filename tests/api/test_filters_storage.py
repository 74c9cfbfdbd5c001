"""What tag filters store and read, on both engines: keyed hashes of tags under encryption (and
their conversion both ways), tag rows for memories saved before they existed, and filters that
read one owner's range of an index, never every memory."""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from memory_bank.cli import main
from memory_bank.domain import filters, tag_index
from memory_bank.search import index
from memory_bank.search.document import postings_of
from memory_bank.store import memories as store
from memory_bank.store import memory_writes
from memory_bank.store.owners import Owner
from memory_bank.store.schema import memory_tag, service_state
from memory_bank.store.sealing import crypto

from .filter_bank import found, listed


def new_key() -> str:
    """A fresh master key, as its text."""
    return crypto.encode_master_key(crypto.new_master_key())


def tag_rows(engine: sa.Engine, user: str) -> list[str]:
    """A user's stored tags (memory_tag.tag), sorted."""
    with engine.connect() as conn:
        found = conn.execute(sa.select(memory_tag.c.tag).where(memory_tag.c.user_id == user))
        return sorted(found.scalars())


def save(service: Any, headers: dict[str, str], content: str, tags: list[str]) -> str:
    """Save through the API; the id."""
    r = service.client.post("/v1/memory", json={"content": content, "tags": tags}, headers=headers)
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


def test_plain_tag_rows_are_the_folded_tags(service):
    save(service, service.auth("alice"), "Release notes", ["Deploy", "DEPLOY", "Straße"])
    # One row per folded tag (Deploy and DEPLOY are one), as the filter compares them.
    assert tag_rows(service.engine, "alice") == ["=deploy", "=strasse"]


def test_sealed_tag_rows_are_keyed_hashes_per_owner(make_service):
    service = make_service(master_key=new_key())
    alice, bob = service.auth("alice"), service.auth("bob")
    mine = save(service, alice, "Release notes", ["Deploy", "ops"])
    save(service, bob, "Release notes", ["deploy"])
    stored = tag_rows(service.engine, "alice")
    assert len(stored) == 2 and all(t.startswith(crypto.HASHED_TERM_PREFIX) for t in stored)
    assert not any("deploy" in t or "ops" in t for t in stored)
    # Another owner's key hashes the same tag otherwise: rows cannot be matched across owners.
    assert not set(tag_rows(service.engine, "bob")) & set(stored)
    # ...nor with the same word in the owner's own postings (another input is hashed).
    with service.engine.connect() as conn:
        terms = set(conn.execute(sa.text("SELECT term FROM memory_term")).scalars())
    assert not terms & set(stored)
    assert listed(service, alice, tag="DEPLOY") == [mine]
    assert listed(service, alice, tag=["deploy", "ops"]) == [mine]


def test_encrypt_and_decrypt_existing_convert_tag_rows(make_service, monkeypatch, database_url):
    plain = make_service()
    headers = plain.auth("alice")
    ids = [save(plain, headers, f"note {i}", ["Deploy"] if i % 2 else ["ops"]) for i in range(5)]
    tagged = [ids[3], ids[1]]  # newest first
    assert set(tag_rows(plain.engine, "alice")) == {"=deploy", "=ops"}
    key = new_key()
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_BANK_MASTER_KEY", key)
    assert main(["crypto", "encrypt-existing", "--batch", "2", "--quiet"]) == 0
    sealed = make_service(master_key=key)
    stored = tag_rows(sealed.engine, "alice")
    assert len(stored) == 5 and all(t.startswith(crypto.HASHED_TERM_PREFIX) for t in stored)
    assert listed(sealed, sealed.auth("alice"), tag="deploy") == tagged
    assert main(["crypto", "decrypt-existing", "--batch", "3", "--quiet"]) == 0
    assert set(tag_rows(sealed.engine, "alice")) == {"=deploy", "=ops"}
    assert listed(sealed, sealed.auth("alice"), tag="deploy") == tagged


def test_several_tags_while_an_owner_is_part_plain_part_sealed(make_service):
    # A master key set on a bank with plain rows makes the owner's key MIXED: a tag is then
    # stored plain on older memories and hashed on newer ones, and a filter must read both
    # forms of each tag (on MySQL/MariaDB by grouping: `tag IN (two forms)` is not the whole
    # key of a tag row, so the join of one tag to the other is not taken).
    plain = make_service()
    headers = plain.auth("alice")
    old_both = save(plain, headers, "deploy runbook for the ops team", ["deploy", "ops"])
    save(plain, headers, "deploy checklist", ["deploy"])
    sealed = make_service(master_key=new_key())
    headers = sealed.auth("alice")
    new_both = save(sealed, headers, "ops deploy window moved", ["Ops", "Deploy"])
    save(sealed, headers, "ops rota", ["ops"])
    stored = tag_rows(sealed.engine, "alice")
    assert "=deploy" in stored and any(t.startswith(crypto.HASHED_TERM_PREFIX) for t in stored)
    assert listed(sealed, headers, tag=["deploy", "ops"]) == [new_both, old_both]
    assert set(found(sealed, headers, "deploy", tag=["deploy", "ops"])) == {new_both, old_both}


@pytest.mark.parametrize("sealed", [False, True])
def test_memories_saved_before_tag_rows_get_them_at_start_up(make_service, sealed):
    key = {"master_key": new_key()} if sealed else {}
    first = make_service(**key)
    headers = first.auth("alice")
    ids = [save(first, headers, f"note {i}", ["Deploy", f"n{i}"]) for i in range(3)]
    # A database from before the tag rows: none, and no record that they were built.
    with first.engine.begin() as conn:
        conn.execute(sa.delete(memory_tag))
        conn.execute(sa.delete(service_state).where(service_state.c.name == tag_index.STATE_NAME))
    assert listed(first, headers, tag="deploy") == []
    restarted = make_service(**key)
    assert listed(restarted, headers, tag="deploy") == list(reversed(ids))
    assert listed(restarted, headers, tag="N1") == [ids[1]]
    stored = tag_rows(restarted.engine, "alice")
    assert all(t.startswith(crypto.HASHED_TERM_PREFIX if sealed else "=") for t in stored)


def _plant_many(service: Any, user: str, n: int) -> list[str]:
    """n memories of one owner in one transaction, every 100th tagged `rare`; their ids."""

    def work(conn: sa.Connection) -> list[str]:
        made = []
        for i in range(n):
            tags = ["rare"] if i % 100 == 0 else ["common"]
            text = f"memory {i} about the harbour"
            row = memory_writes.insert_memory(
                conn, Owner(user, None, "bulk"), text, tags, [], postings_of(text, tags, [])
            )
            made.append(row.id)
        return made

    return list(service.db.writing(work))


def test_a_filter_reads_one_owner_range_not_every_memory(service):
    mine = _plant_many(service, "alice", 1500)
    _plant_many(service, "bob", 300)
    rare = filters.parse(["rare"])
    with service.db.reading() as conn:
        statements = _statements(conn, lambda: store.list_memories(conn, "alice", 20, None, rare))
        page = store.list_memories(conn, "alice", 20, None, rare)
        hits = index.search(
            conn, "alice", "harbour", 50, None, filters.restriction(conn, "alice", rare)
        )
        if conn.dialect.name == "sqlite":
            for sql, params in statements:
                plan = " ".join(
                    str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)
                )
                assert not re.search(r"\bSCAN (memory|memory_tag|memory_term)\b", plan), plan
        else:
            # Index entries and rows the engine read: the tag's 15 rows (and their memories,
            # contexts), not alice's 1500 memories; each statement's own, so that a failure
            # names the statement and its plan.
            for sql, params in statements:
                conn.exec_driver_sql("FLUSH STATUS")
                conn.exec_driver_sql(sql, params).all()
                read = sum(
                    int(value)
                    for _, value in conn.exec_driver_sql(
                        "SHOW SESSION STATUS WHERE Variable_name IN "
                        "('Handler_read_key', 'Handler_read_next', 'Handler_read_prev')"
                    )
                )
                plan = conn.exec_driver_sql("EXPLAIN " + sql, params).all()
                assert read < 200, (read, sql, plan)
    assert [m.id for m in page] == list(reversed(mine[::100]))
    assert {mid for mid, _ in hits} == set(mine[::100])


def _statements(conn: sa.Connection, run: Any) -> list[tuple[str, Any]]:
    """The SELECT statements (SQL and parameters) that run() sends on this connection."""
    seen: list[tuple[str, Any]] = []

    def keep(_c: Any, _cursor: Any, sql: str, params: Any, _ctx: Any, _many: bool) -> None:
        if sql.lstrip().upper().startswith("SELECT"):
            seen.append((sql, params))

    event.listen(conn, "before_cursor_execute", keep)
    try:
        run()
    finally:
        event.remove(conn, "before_cursor_execute", keep)
    return seen
