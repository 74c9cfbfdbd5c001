"""A Spider cluster for the scale-out tests: the one make test-spider brought up and made a
head with `memory-bank shards init` (MEMORY_BANK_TEST_SPIDER_DIR), or one of their own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from databases import wipe
from memory_bank import state as app_state
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.store import api_keys
from memory_bank.store import migrate as migrations
from memory_bank.store.engine import make_engine, writing
from memory_bank.store.migrate import head_revision, init_shards

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "spider_cluster.py"
DATABASE = "memory_bank"


@dataclass(frozen=True)
class Cluster:
    """Backends and a Spider head on loopback (tools/spider_cluster.py), under dir."""

    dir: Path
    head_port: int
    shard_ports: list[int]

    def url(self, port: int, database: str = DATABASE) -> str:
        """A server's URL, for one of its databases."""
        return f"mysql+pymysql://root@127.0.0.1:{port}/{database}"

    @property
    def head(self) -> str:
        return self.url(self.head_port)

    @property
    def shards(self) -> list[str]:
        return [self.url(port) for port in self.shard_ports]

    def tool(self, *args: str) -> None:
        """Run the cluster tool (stop-shard, start-shard) on this cluster."""
        done = subprocess.run(
            [sys.executable, str(TOOL), args[0], str(self.dir), *args[1:]],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr

    def stop(self, k: int) -> None:
        self.tool("stop-shard", str(k))

    def start(self, k: int) -> None:
        self.tool("start-shard", str(k))


def _read(directory: Path) -> Cluster:
    ports = json.loads((directory / "cluster.json").read_text())
    return Cluster(directory, int(ports["head"]), [int(p) for p in ports["shards"]])


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The cluster of make test-spider, or three backends and a head made here (and stopped)."""
    given = os.environ.get("MEMORY_BANK_TEST_SPIDER_DIR")
    if given:
        yield _read(Path(given))
        return
    # Short: the servers' socket paths must fit in 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="mbsp", dir="/tmp"))
    shutil.rmtree(directory)
    done = subprocess.run(
        [sys.executable, str(TOOL), "up", str(directory), "--shards", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    made = _read(directory)
    try:
        head = make_engine(made.head, 2)
        init_shards(head, made.shards)
        head.dispose()
        yield made
    finally:
        subprocess.run([sys.executable, str(TOOL), "down", str(directory)], timeout=300)
        shutil.rmtree(directory, ignore_errors=True)


@dataclass
class HeadService:
    """An app on the Spider head, its client, and keys."""

    app: Any
    client: TestClient
    engine: sa.Engine

    def auth(
        self, user: str, org: str | None = None, scopes: tuple[str, ...] = ()
    ) -> dict[str, str]:
        """Authorization headers for a fresh key of this user (and org)."""
        wanted = scopes or (
            ("mcp:read", "mcp:write", "org:write") if org else ("mcp:read", "mcp:write")
        )
        secret, _ = writing(
            self.engine, lambda c: api_keys.create_key(c, user, wanted, "scaleout", org)
        )
        return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def head_service(cluster: Cluster) -> Iterator[Callable[..., HeadService]]:
    """Apps on the emptied head (every backend's owner rows emptied through it)."""
    wipe(cluster.head)
    built: list[HeadService] = []

    def build(**changes: Any) -> HeadService:
        settings = Settings(
            database_url=cluster.head,
            validate_responses=True,
            allowed_hosts="testserver",
            embeddings="off",
        ).replace(**changes)
        app = create_app(settings)
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        made = HeadService(app, client, state_of(app).db.engine)
        built.append(made)
        return made

    yield build
    for made in built:
        made.client.__exit__(None, None, None)
        app_state.dispose(state_of(made.app))


THROWAWAY = '''"""A throw-away column (tests/scaleout): an owner table, a head table and a data step."""

import sqlalchemy as sa
from alembic import op

revision = "0999_throwaway"
down_revision = "{down}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The columns, and every memory's revision moved by 100 (so a second run shows)."""
    op.add_column("memory", sa.Column("throwaway", sa.String(16), nullable=True))
    op.execute("UPDATE memory SET revision = revision + 100")
    op.add_column("api_key", sa.Column("throwaway", sa.String(16), nullable=True))


def downgrade() -> None:
    """Not needed."""
'''


@pytest.fixture
def later_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This code's migrations plus the throw-away one, as if it shipped later."""
    scripts = tmp_path / "migrations"
    shutil.copytree(
        Path(migrations._SCRIPTS), scripts, ignore=shutil.ignore_patterns("__pycache__")
    )
    version = scripts / "versions" / "0999_throwaway.py"
    version.write_text(THROWAWAY.format(down=head_revision()))
    yield lambda: monkeypatch.setattr(migrations, "_SCRIPTS", str(scripts))
