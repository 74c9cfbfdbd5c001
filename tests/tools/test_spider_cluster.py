"""tools/spider_cluster.py: real backends and a Spider head on loopback, a table split by key
across them, one backend stopped and started again, and everything stopped by `down`."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

pytestmark = [pytest.mark.spider, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "spider_cluster.py"
PLUGIN = Path("/usr/lib/mysql/plugin/ha_spider.so")
URL = re.compile(r"^mysql\+pymysql://root@127\.0\.0\.1:(\d+)/memory_bank$")
USERS = [f"user{n}" for n in range(40)]
# ER_CONNECT_TO_FOREIGN_DATA_SOURCE: Spider could not reach a partition's backend.
SPIDER_UNREACHABLE = 1429


def _require_servers() -> None:
    """Skip without MariaDB's server binaries (or Spider, unless we may install it); fail in CI."""
    problem = None
    if not shutil.which("mariadbd") or not shutil.which("mariadb-install-db"):
        problem = "mariadbd and mariadb-install-db are not installed"
    elif not PLUGIN.exists() and os.geteuid() != 0:
        problem = f"{PLUGIN} is missing: install mariadb-plugin-spider"
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(problem)
        pytest.skip(problem)


def _tool(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the tool as a user would."""
    result = subprocess.run(
        [sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=300
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def _port(line: str, prefix: str) -> int:
    """The port of a printed `PREFIX=<url>` line."""
    assert line.startswith(prefix), line
    match = URL.match(line.removeprefix(prefix))
    assert match, line
    return int(match.group(1))


def _connect(port: int) -> pymysql.Connection:
    """An autocommit connection to the cluster's database on one server."""
    return pymysql.connect(
        host="127.0.0.1", port=port, user="root", database="memory_bank", autocommit=True
    )


def _one(conn: pymysql.Connection, sql: str, args: tuple[object, ...] = ()) -> list[tuple]:
    """All rows of one statement."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def _running(pid: int) -> bool:
    """Whether pid is a live process (a zombie has an empty command line)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except FileNotFoundError:
        return False


def _refuses(port: int) -> bool:
    """Whether nothing listens on the loopback port."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Path, list[str]]]:
    """Two backends and a head, in a short temporary path (unix sockets cap it at 107 bytes)."""
    _require_servers()
    folder = Path(tempfile.mkdtemp(prefix="mb-spider-"))
    try:
        lines = _tool("up", str(folder), "--shards", "2").stdout.splitlines()
        yield folder, lines
    finally:
        _tool("down", str(folder), check=False)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def split(cluster: tuple[Path, list[str]]) -> tuple[int, list[int]]:
    """Table t on each backend, and on the head a Spider table split BY KEY(user_id) over them,
    with one row per user written through the head. The head's port and the backends'."""
    _, lines = cluster
    shards = [_port(line, "SHARD=") for line in lines[:-1]]
    head = _port(lines[-1], "MEMORY_BANK_DATABASE_URL=")
    # The database's collation, utf8mb4_bin, as the app's tables have. (Under utf8mb4_general_ci
    # KEY over 2 partitions put every one of 1,000 userN, hex or uuid ids on the first.)
    columns = "user_id VARCHAR(64) NOT NULL, n INT NOT NULL, PRIMARY KEY (user_id, n)"
    for port in shards:
        with _connect(port) as conn:
            _one(conn, f"CREATE TABLE t ({columns}) ENGINE=InnoDB")
    with _connect(head) as conn:
        for index, port in enumerate(shards):
            _one(
                conn,
                f"CREATE SERVER s{index} FOREIGN DATA WRAPPER mysql OPTIONS "
                f"(HOST '127.0.0.1', PORT {port}, USER 'root', DATABASE 'memory_bank')",
            )
        partitions = ", ".join(
            f"PARTITION p{index} COMMENT = 'srv \"s{index}\"'" for index in range(len(shards))
        )
        _one(
            conn,
            f'CREATE TABLE t ({columns}) ENGINE=SPIDER COMMENT=\'wrapper "mysql", table "t"\' '
            f"PARTITION BY KEY (user_id) ({partitions})",
        )
        for n, user in enumerate(USERS):
            _one(conn, "INSERT INTO t VALUES (%s, %s)", (user, n))
    return head, shards


def _holder(shards: list[int]) -> dict[str, int]:
    """Which backend (by index) each user's row is stored on, read from the backends."""
    held: dict[str, int] = {}
    for index, port in enumerate(shards):
        with _connect(port) as conn:
            for (user,) in _one(conn, "SELECT user_id FROM t"):
                assert user not in held, f"{user} is on backends {held[user]} and {index}"
                held[user] = index
    return held


def test_up_prints_each_backend_then_the_head_last_and_resumes(cluster):
    folder, lines = cluster
    assert len(lines) == 3
    shards = [_port(line, "SHARD=") for line in lines[:2]]
    head = _port(lines[2], "MEMORY_BANK_DATABASE_URL=")
    assert len({*shards, head}) == 3
    for port in shards:
        with _connect(port) as conn:
            assert _one(conn, "SELECT @@collation_database, @@bind_address") == [
                ("utf8mb4_bin", "127.0.0.1")
            ]
            spider = "SELECT COUNT(*) FROM information_schema.engines WHERE engine = 'SPIDER'"
            assert _one(conn, spider) == [(0,)]
    with _connect(head) as conn:
        assert _one(
            conn, "SELECT support FROM information_schema.engines WHERE engine = 'SPIDER'"
        ) == [("YES",)]
        settings = (
            "SELECT @@spider_direct_aggregate, @@spider_connect_retry_count, "
            "@@spider_disable_group_by_handler"
        )
        assert _one(conn, settings) == [(0, 0, 1)]
    # Up again on a running cluster: the same lines, nothing new started.
    assert _tool("up", str(folder), "--shards", "2").stdout.splitlines() == lines
    other = _tool("up", str(folder), "--shards", "3", check=False)
    assert other.returncode == 1
    assert "a cluster of 2 shard(s) and 1 head(s)" in other.stderr
    assert other.stdout == ""


def test_rows_written_through_the_head_land_on_exactly_one_backend(split):
    head, shards = split
    held = _holder(shards)
    assert sorted(held) == sorted(USERS)
    assert set(held.values()) == {0, 1}  # 40 keys do not all hash to one side
    with _connect(head) as conn:
        assert _one(conn, "SELECT COUNT(*) FROM t") == [(len(USERS),)]
        assert _one(conn, "SELECT n FROM t WHERE user_id = 'user7'") == [(7,)]


def test_a_stopped_backend_fails_only_queries_that_need_it(cluster, split):
    folder, _ = cluster
    head, shards = split
    held = _holder(shards)
    live = next(user for user, index in held.items() if index == 1)
    gone = next(user for user, index in held.items() if index == 0)
    with _connect(head) as conn:
        _one(conn, "SELECT * FROM t")  # the head now holds a connection to each backend
        _tool("stop-shard", str(folder), "0")
        assert _refuses(shards[0])
        # Partition pruning: a query on the live backend's key never touches the stopped one.
        assert _one(conn, "SELECT n FROM t WHERE user_id = %s", (live,)) == [(USERS.index(live),)]
        _one(conn, "INSERT INTO t VALUES (%s, 100)", (live,))
        for sql, args in [
            ("SELECT n FROM t WHERE user_id = %s", (gone,)),
            ("SELECT COUNT(*) FROM t", ()),
            ("INSERT INTO t VALUES (%s, 100)", (gone,)),
        ]:
            with pytest.raises(pymysql.err.OperationalError) as failed:
                _one(conn, sql, args)
            assert failed.value.args[0] == SPIDER_UNREACHABLE, failed.value
        _tool("start-shard", str(folder), "0")
        # Same port and datadir: the rows are back, on the head connection that saw the outage.
        assert _one(conn, "SELECT n FROM t WHERE user_id = %s", (gone,)) == [(USERS.index(gone),)]
        assert _one(conn, "SELECT COUNT(*) FROM t") == [(len(USERS) + 1,)]
        _one(conn, "DELETE FROM t WHERE n = 100")
    assert _tool("stop-shard", str(folder), "2", check=False).returncode == 1


def test_down_stops_every_server_it_started(tmp_path):
    _require_servers()
    folder = Path(tempfile.mkdtemp(prefix="mb-spider-"))
    try:
        lines = _tool("up", str(folder), "--shards", "1").stdout.splitlines()
        ports = [_port(lines[0], "SHARD="), _port(lines[1], "MEMORY_BANK_DATABASE_URL=")]
        pids = [int((folder / name / "mariadbd.pid").read_text()) for name in ("shard0", "head")]
        _tool("down", str(folder))
        assert all(_refuses(port) for port in ports)
        assert not any(_running(pid) for pid in pids)
        # A second down has nothing left to stop; up again resumes on the same ports.
        _tool("down", str(folder))
        assert _tool("up", str(folder), "--shards", "1").stdout.splitlines() == lines
    finally:
        _tool("down", str(folder), check=False)
        shutil.rmtree(folder, ignore_errors=True)
    # A directory that holds something else is not taken over.
    (tmp_path / "notes.txt").write_text("mine")
    refused = _tool("up", str(tmp_path), "--shards", "1", check=False)
    assert refused.returncode == 1
    assert "holds no cluster" in refused.stderr


def test_up_refuses_a_dir_too_long_for_the_sockets(tmp_path):
    deep = tmp_path / ("d" * 100)
    refused = _tool("up", str(deep), "--shards", "2", check=False)
    assert refused.returncode == 1
    assert "too long for a unix socket" in refused.stderr
    assert not deep.exists()


def test_several_heads_need_the_tables_they_replicate(tmp_path):
    refused = _tool("up", str(tmp_path / "c"), "--shards", "1", "--heads", "2", check=False)
    assert refused.returncode == 1
    assert "several heads need --replicate" in refused.stderr
    assert not (tmp_path / "c").exists()
