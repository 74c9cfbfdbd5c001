"""A loopback MariaDB Spider cluster for tests and demos: N backend servers and Spider heads.

    python tools/spider_cluster.py up DIR --shards 3   # prints SHARD=<url> lines, then the head
    python tools/spider_cluster.py stop-shard DIR 1    # backend 1 down (same port and data kept)
    python tools/spider_cluster.py start-shard DIR 1
    python tools/spider_cluster.py down DIR            # stops every server it started

    # two heads that replicate the named tables to each other (and nothing else):
    python tools/spider_cluster.py up DIR --shards 2 --heads 2 --replicate api_key ...
    python tools/spider_cluster.py stop-head DIR 1     # head 1 down; start-head brings it back

Each server is a `mariadbd` of its own under DIR (datadir, socket, pid file, error log and a
config file read instead of /etc/mysql), listening on a free 127.0.0.1 port, root without a
password. The servers keep running after `up` returns; `down` stops them by their pid files.
Standard library only: the SQL it needs goes through the `mariadb` client.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DATABASE = "memory_bank"
PLUGIN = Path("/usr/lib/mysql/plugin/ha_spider.so")
PLUGIN_PACKAGE = "mariadb-plugin-spider"
PROGRAMS = ("mariadbd", "mariadb-install-db", "mariadb")
STATE = "cluster.json"
HEAD = "head"
# Replication between heads: each head's binary log, in row format, read by the next head.
BINLOG = "mariadb-bin"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
# A unix socket path must fit in sun_path (108 bytes on Linux, with its NUL).
SOCKET_PATH_MAX = 107

# Small enough that a head and several backends share a 2-core CI machine: the Aria page cache
# (128M by default) holds only the system and Spider tables here.
SERVER_SETTINGS = """\
bind-address = 127.0.0.1
skip-networking = 0
skip-name-resolve
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
innodb_log_buffer_size = 4M
aria_pagecache_buffer_size = 8M
key_buffer_size = 1M
query_cache_size = 0
max_connections = 200
"""

# The head's Spider settings; docs/scale-out.md says why each one is there.
HEAD_SETTINGS = """\
plugin-load-add = ha_spider.so
# ON pushes aggregates down to the backends, and CAST(x AS DOUBLE) arrives there as a call to
# double_typecast(), which no server has: every search fails. OFF aggregates on the head.
spider_direct_aggregate = OFF
# A statement that needs a stopped backend retries the connection this many times, 1 s apart
# (spider_connect_retry_interval), before it fails: 2 s with 10.11.19's default of 2, 1000 s
# with the default of 1000 that releases before MDEV-35064 have. 0 fails it at once, and a
# backend that comes back is still reconnected to.
spider_connect_retry_count = 0
# Spider's group-by handler sends a whole join or GROUP BY to one backend and reads the answer
# itself: on 10.11.19 it garbled long text values (a 32,000-byte memory joined to its contexts
# came back cut mid-character). OFF: the head joins and groups the rows it reads.
spider_disable_group_by_handler = ON
# A batched key read sent as one statement, not through a temporary table on the backend (the
# app sets it in its own sessions too, with spider_conn_recycle_mode = 1: docs/scale-out.md).
spider_bka_mode = 2
"""


class ClusterError(Exception):
    """A failure to report on stderr with exit status 1."""


@dataclass(frozen=True)
class Node:
    """One mariadbd under the cluster directory: a backend (shardK) or the Spider head."""

    name: str
    port: int
    home: Path

    @property
    def spider(self) -> bool:
        """Whether this is a head, which loads Spider."""
        return self.name.startswith(HEAD)

    @property
    def cnf(self) -> Path:
        """Its config file, the only one mariadbd reads (--defaults-file)."""
        return self.home / "my.cnf"

    @property
    def datadir(self) -> Path:
        """Its data directory."""
        return self.home / "data"

    @property
    def pid_file(self) -> Path:
        """The pid file mariadbd writes when it starts and removes when it stops."""
        return self.home / "mariadbd.pid"

    @property
    def log(self) -> Path:
        """Its error log."""
        return self.home / "error.log"

    @property
    def tmpdir(self) -> Path:
        """Its own temporary directory: mariadbd deletes every #sql* file in its tmpdir when it
        starts, which in a shared /tmp would be other servers' temporary tables."""
        return self.home / "tmp"

    @property
    def socket(self) -> Path:
        """Its unix socket, so it never touches the system server's."""
        return self.home / "mariadbd.sock"

    @property
    def initialised(self) -> Path:
        """Written once mariadb-install-db has finished, so a half-made datadir is redone."""
        return self.home / "initialised"

    def url(self) -> str:
        """Its SQLAlchemy URL for the cluster's database."""
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/{DATABASE}"


@dataclass(frozen=True)
class Cluster:
    """The backends and the heads recorded in DIR/cluster.json, and the tables the heads
    replicate to each other (none with one head)."""

    root: Path
    shards: tuple[Node, ...]
    heads: tuple[Node, ...]
    replicate: tuple[str, ...] = ()

    @property
    def head(self) -> Node:
        """The first head, whose URL `up` prints last."""
        return self.heads[0]

    @property
    def nodes(self) -> tuple[Node, ...]:
        """Backends first, then the heads."""
        return (*self.shards, *self.heads)

    def lines(self) -> list[str]:
        """What `up` prints: one SHARD= line per backend, a HEADk= line per further head, the
        first head's URL last."""
        shards = [f"SHARD={shard.url()}" for shard in self.shards]
        more = [f"HEAD{k}={head.url()}" for k, head in enumerate(self.heads) if k]
        return [*shards, *more, f"MEMORY_BANK_DATABASE_URL={self.head.url()}"]

    def shard(self, index: int) -> Node:
        """Backend `index` (0-based)."""
        if not 0 <= index < len(self.shards):
            raise ClusterError(
                f"no shard {index}: {self.root} has shards 0..{len(self.shards) - 1}"
            )
        return self.shards[index]

    def head_at(self, index: int) -> Node:
        """Head `index` (0-based)."""
        if not 0 <= index < len(self.heads):
            raise ClusterError(f"no head {index}: {self.root} has heads 0..{len(self.heads) - 1}")
        return self.heads[index]

    def save(self) -> None:
        """Record the ports and what the heads replicate, so later commands find the same."""
        state = {
            "shards": [shard.port for shard in self.shards],
            "head": self.head.port,
            "heads": [head.port for head in self.heads],
            "replicate": list(self.replicate),
        }
        (self.root / STATE).write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, root: Path) -> Cluster:
        """The cluster recorded under root."""
        try:
            state = json.loads((root / STATE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ClusterError(f"{root} holds no cluster (no {STATE}); run `up` first") from None
        heads = [int(port) for port in state.get("heads", [state["head"]])]
        return cls.made(
            root, [int(port) for port in state["shards"]], heads, state.get("replicate", [])
        )

    @classmethod
    def made(
        cls, root: Path, shard_ports: list[int], head_ports: list[int], replicate: list[str]
    ) -> Cluster:
        """A cluster with these ports under root."""
        shards = tuple(
            Node(f"shard{index}", port, root / f"shard{index}")
            for index, port in enumerate(shard_ports)
        )
        names = [HEAD if k == 0 else f"{HEAD}{k}" for k in range(len(head_ports))]
        heads = tuple(Node(n, port, root / n) for n, port in zip(names, head_ports, strict=True))
        return cls(root, shards, heads, tuple(replicate))

    def replication(self, node: Node) -> str:
        """The config lines that make a head a replication source and replica of the others:
        a server id of its own, a binary log in row format, and only the named tables applied
        from the others (the owner tables are Spider tables: replaying their writes would send
        them to the backends twice). Nothing with one head."""
        if not node.spider or len(self.heads) < 2:
            return ""
        k = self.heads.index(node)
        lines = [
            f"server-id = {k + 1}",
            f"gtid-domain-id = {k + 1}",
            f"log-bin = {BINLOG}",
            "binlog-format = ROW",
            # A ring: what a head applies from the previous one goes on to the next.
            "log-slave-updates = ON",
            *(f"replicate-do-table = {DATABASE}.{table}" for table in self.replicate),
        ]
        return "\n".join(lines) + "\n"


def _say(message: str) -> None:
    """Progress on stderr: stdout carries only the URL lines."""
    print(message, file=sys.stderr, flush=True)


def _free_ports(count: int) -> list[int]:
    """Ports the kernel has free on 127.0.0.1, all held open together so they differ."""
    with contextlib.ExitStack() as stack:
        held = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            held.append(sock.getsockname()[1])
        return held


def _as_root() -> bool:
    """Whether we run as root, where mariadbd and mariadb-install-db insist on --user."""
    return os.geteuid() == 0


def _config(node: Node, bootstrap: bool = False, replication: str = "") -> str:
    """The node's my.cnf; for bootstrap (mariadb-install-db), without Spider.

    Spider creates its tables in the `mysql` schema when it loads, which mariadb-install-db has
    not made yet, so loading it there aborts the bootstrap.
    """
    lines = [
        "[mariadbd]",
        f"datadir = {node.datadir}",
        f"port = {node.port}",
        f"socket = {node.socket}",
        f"pid-file = {node.pid_file}",
        f"log-error = {node.log}",
        f"tmpdir = {node.tmpdir}",
    ]
    if _as_root():
        lines.append("user = root")
    text = "\n".join(lines) + "\n" + SERVER_SETTINGS
    return text + HEAD_SETTINGS + replication if node.spider and not bootstrap else text


def _require_programs() -> None:
    """Fail clearly when MariaDB's server or client programs are not installed."""
    missing = [name for name in PROGRAMS if shutil.which(name) is None]
    if missing:
        raise ClusterError(f"not installed: {', '.join(missing)} (Debian: mariadb-server)")


def _ensure_plugin() -> None:
    """Install Debian's Spider plugin package when its library is missing."""
    if PLUGIN.exists():
        return
    sudo = [] if _as_root() else ["sudo"]
    if shutil.which("apt-get") is None or (sudo and shutil.which("sudo") is None):
        raise ClusterError(f"{PLUGIN} is missing: install {PLUGIN_PACKAGE} (MariaDB's Spider)")
    _say(f"{PLUGIN} is missing: installing {PLUGIN_PACKAGE}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "-qq", PLUGIN_PACKAGE]
    if subprocess.run(install, env=env, check=False).returncode != 0:
        # A fresh machine may have no package lists yet.
        subprocess.run([*sudo, "apt-get", "update", "-qq"], env=env, check=False)
        subprocess.run(install, env=env, check=False)
    if not PLUGIN.exists():
        raise ClusterError(f"{PLUGIN} is still missing after `apt-get install {PLUGIN_PACKAGE}`")


def _client(node: Node, sql: str) -> subprocess.CompletedProcess[str]:
    """Run SQL on the node over TCP as root, as the printed URLs will."""
    command = [
        "mariadb",
        "--no-defaults",
        "--protocol=tcp",
        "--host=127.0.0.1",
        f"--port={node.port}",
        "--user=root",
        "--connect-timeout=2",
        "--batch",
        "--skip-column-names",
        f"--execute={sql}",
    ]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def _sql(node: Node, sql: str) -> str:
    """Run SQL on the node; its output, or ClusterError with the client's message."""
    result = _client(node, sql)
    if result.returncode != 0:
        raise ClusterError(f"{node.name}: {sql!r} failed: {result.stderr.strip()}")
    return result.stdout


def _log_tail(node: Node, lines: int = 15) -> str:
    """The end of the node's error log, for failure messages."""
    try:
        text = node.log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no error log)"
    return "\n".join(text.splitlines()[-lines:])


def _pid(node: Node) -> int | None:
    """The pid of the node's running mariadbd, or None.

    The pid file alone could name a process that has since died and whose pid was reused, so
    the process must also be a mariadbd started with this node's config file.
    """
    try:
        pid = int(node.pid_file.read_text(encoding="ascii").strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _is_ours(pid, node) else None


def _is_ours(pid: int, node: Node) -> bool:
    """Whether pid is a live (not zombie) mariadbd reading this node's config."""
    proc = Path(f"/proc/{pid}")
    try:
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        # The state follows the parenthesised command name, which may itself hold spaces.
        state = (proc / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z" and f"--defaults-file={node.cnf}".encode() in cmdline


def _initialise(nodes: list[Node]) -> None:
    """Create the datadirs that are not complete yet, all at once."""
    pending = [node for node in nodes if not node.initialised.exists()]
    running: list[tuple[Node, subprocess.Popen[bytes]]] = []
    for node in pending:
        shutil.rmtree(node.datadir, ignore_errors=True)
        node.tmpdir.mkdir(parents=True, exist_ok=True)
        node.cnf.write_text(_config(node, bootstrap=True), encoding="utf-8")
        command = [
            "mariadb-install-db",
            f"--defaults-file={node.cnf}",
            # root@localhost, root@127.0.0.1 and root@::1 with no password: the URLs carry none.
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
        ]
        with (node.home / "install-db.log").open("wb") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        running.append((node, proc))
    failed = [node.name for node, proc in running if proc.wait() != 0]
    if failed:
        raise ClusterError(f"mariadb-install-db failed for {failed}: see install-db.log there")
    for node in pending:
        node.initialised.touch()


def _launch(node: Node) -> subprocess.Popen[bytes]:
    """Start the node's mariadbd in a session of its own, so it outlives this command."""
    with node.log.open("ab") as out:
        return subprocess.Popen(
            ["mariadbd", f"--defaults-file={node.cnf}"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _await_ready(node: Node, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Return once the node answers SQL on its port; fail if it exits or the deadline passes."""
    # The answer must name this node's datadir: another server may have taken the port since.
    while _client(node, "SELECT @@datadir").stdout.strip() != f"{node.datadir}/":
        if proc.poll() is not None:
            raise ClusterError(
                f"{node.name} exited with {proc.returncode}; {node.log}:\n{_log_tail(node)}"
            )
        if time.monotonic() > deadline:
            raise ClusterError(f"{node.name} not ready on port {node.port}:\n{_log_tail(node)}")
        time.sleep(0.1)


def _start(cluster: Cluster, nodes: list[Node]) -> None:
    """Start the nodes that are not running, together, and wait until each answers."""
    idle = [node for node in nodes if _pid(node) is None]
    for node in idle:
        node.pid_file.unlink(missing_ok=True)  # left by a crash; mariadbd would not mind
        node.cnf.write_text(_config(node, replication=cluster.replication(node)), encoding="utf-8")
    launched = [(node, _launch(node)) for node in idle]
    deadline = time.monotonic() + START_TIMEOUT
    for node, proc in launched:
        _await_ready(node, proc, deadline)
        _say(f"{node.name} ready on 127.0.0.1:{node.port}")


def _stop(node: Node) -> bool:
    """Stop the node's mariadbd (SIGTERM: a clean shutdown) and wait until it is gone.

    Returns whether it was running.
    """
    pid = _pid(node)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):  # it may have just exited by itself
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _is_ours(pid, node):
        if time.monotonic() > deadline:
            raise ClusterError(f"{node.name} (pid {pid}) still running {STOP_TIMEOUT:.0f} s on")
        time.sleep(0.05)
    _say(f"{node.name} stopped")
    return True


def _prepare(node: Node) -> None:
    """Create the database, and check the head's Spider settings took."""
    # As docs/deployment.md creates it (and as the migrations make each table).
    create = f"CREATE DATABASE IF NOT EXISTS `{DATABASE}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    _sql(node, create)
    if node.spider:
        engines = _sql(node, "SELECT support FROM information_schema.engines WHERE engine='SPIDER'")
        if engines.strip() not in {"YES", "DEFAULT"}:
            raise ClusterError(f"the head has no Spider engine:\n{_log_tail(node)}")
        settings = (
            "SELECT @@global.spider_direct_aggregate, @@global.spider_connect_retry_count, "
            "@@global.spider_disable_group_by_handler"
        )
        if _sql(node, settings).split() != ["0", "0", "1"]:
            raise ClusterError(f"the head did not take its Spider settings from {node.cnf}")


def _replicate(cluster: Cluster) -> None:
    """Make each head a replica of the one before it (a ring), where it is not one yet."""
    if len(cluster.heads) < 2:
        return
    for k, head in enumerate(cluster.heads):
        if _sql(head, "SHOW SLAVE STATUS").strip():
            continue
        source = cluster.heads[k - 1]
        # Retry every second, not every minute, after the source was down.
        _sql(
            head,
            f"CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {source.port}, "
            "MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_CONNECT_RETRY = 1, "
            "MASTER_USE_GTID = slave_pos; START SLAVE",
        )


def up(root: Path, shards: int, heads: int = 1, replicate: tuple[str, ...] = ()) -> Cluster:
    """Start (or resume) a cluster of `shards` backends and `heads` heads under root; several
    heads replicate the `replicate` tables to each other."""
    if shards < 1 or heads < 1:
        raise ClusterError("--shards and --heads must be at least 1")
    if heads > 1 and not replicate:
        raise ClusterError("several heads need --replicate: the tables they share")
    root = root.resolve()
    longest = Cluster.made(root, [0] * shards, [0] * heads, []).shards[-1].socket
    if len(str(longest)) > SOCKET_PATH_MAX:
        raise ClusterError(f"{longest} is too long for a unix socket: use a shorter DIR")
    if (root / STATE).exists():
        cluster = Cluster.load(root)
        if len(cluster.shards) != shards or len(cluster.heads) != heads:
            raise ClusterError(
                f"{root} already holds a cluster of {len(cluster.shards)} shard(s) and "
                f"{len(cluster.heads)} head(s): pass --shards {len(cluster.shards)} --heads "
                f"{len(cluster.heads)}, or `down` it and use another DIR"
            )
    else:
        if root.exists() and any(root.iterdir()):
            raise ClusterError(f"{root} is not empty and holds no cluster: use a new DIR")
        root.mkdir(parents=True, exist_ok=True)
        ports = _free_ports(shards + heads)
        cluster = Cluster.made(root, ports[:shards], ports[shards:], list(replicate))
        cluster.save()
    _require_programs()
    _ensure_plugin()
    nodes = list(cluster.nodes)
    _initialise(nodes)
    idle = [node for node in nodes if _pid(node) is None]
    try:
        _start(cluster, idle)
        for node in nodes:
            _prepare(node)
        _replicate(cluster)
    except ClusterError:
        # Leave nothing half-up (the same `up` again retries on the same ports), but keep
        # running what was running before.
        for node in reversed(idle):
            _stop(node)
        raise
    return cluster


def down(root: Path) -> list[str]:
    """Stop the heads, then every backend; the names of those that were running."""
    cluster = Cluster.load(root.resolve())
    # The heads first, so they do not see their backends vanish under open connections.
    return [node.name for node in reversed(cluster.nodes) if _stop(node)]


def stop_shard(root: Path, index: int) -> bool:
    """Stop backend `index`; whether it was running."""
    return _stop(Cluster.load(root.resolve()).shard(index))


def start_shard(root: Path, index: int) -> None:
    """Start backend `index` again on its port and datadir."""
    _require_programs()
    cluster = Cluster.load(root.resolve())
    _start(cluster, [cluster.shard(index)])


def stop_head(root: Path, index: int) -> bool:
    """Stop head `index`; whether it was running."""
    return _stop(Cluster.load(root.resolve()).head_at(index))


def start_head(root: Path, index: int) -> None:
    """Start head `index` again on its port and datadir (it resumes replicating)."""
    _require_programs()
    cluster = Cluster.load(root.resolve())
    _start(cluster, [cluster.head_at(index)])


def main(argv: list[str] | None = None) -> int:
    """The command line: up, down, stop-shard and start-shard."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start N backends and Spider heads under DIR")
    start.add_argument("dir", type=Path, metavar="DIR")
    start.add_argument("--shards", type=int, required=True, metavar="N")
    start.add_argument("--heads", type=int, default=1, metavar="H", help="heads (default 1)")
    start.add_argument(
        "--replicate",
        nargs="+",
        default=[],
        metavar="TABLE",
        help="with several heads: the tables they replicate to each other (the head tables)",
    )
    commands.add_parser("down", help="stop every server under DIR").add_argument(
        "dir", type=Path, metavar="DIR"
    )
    for name, what in (
        ("stop-shard", "stop backend"),
        ("start-shard", "start backend"),
        ("stop-head", "stop head"),
        ("start-head", "start head"),
    ):
        one = commands.add_parser(name, help=f"{what} K (0-based)")
        one.add_argument("dir", type=Path, metavar="DIR")
        one.add_argument("index", type=int, metavar="K")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            made = up(args.dir, args.shards, args.heads, tuple(args.replicate))
            for line in made.lines():
                print(line, flush=True)
        elif args.command == "down":
            down(args.dir)
        elif args.command == "stop-shard":
            stop_shard(args.dir, args.index)
        elif args.command == "start-shard":
            start_shard(args.dir, args.index)
        elif args.command == "stop-head":
            stop_head(args.dir, args.index)
        else:
            start_head(args.dir, args.index)
    except ClusterError as exc:
        print(f"spider_cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
