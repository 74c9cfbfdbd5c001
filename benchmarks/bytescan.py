"""What a thief of the database sees: a unique word saved in every user-text field, counted in the
raw bytes of the SQLite file and WAL, and in a dump of every MariaDB table, plain and encrypted.

Prints, per engine and mode, the bytes scanned, how often the word (and its first ten letters,
which is what the index would hold) occurs, and whether get, list, search, the draft queue and
the export return it. tests/store/test_encryption.py asserts the same on every run.
"""

from __future__ import annotations

import base64
import secrets
import string
import sys
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
from memory_bank.app import create_app, state_of
from memory_bank.settings import Settings
from memory_bank.state import dispose
from memory_bank.store import api_keys
from memory_bank.store.engine import writing


def raw_bytes(engine: sa.Engine, url: str) -> bytes:
    """The SQLite file, its WAL and shared memory; or every MariaDB table, dumped."""
    if engine.dialect.name == "sqlite":
        path = Path(sa.engine.make_url(url).database or "")
        parts = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
        return b"".join(p.read_bytes() for p in parts if p.exists())
    rows = []
    with engine.connect() as conn:
        for name in sa.inspect(conn).get_table_names():
            rows += [repr(tuple(r)) for r in conn.exec_driver_sql(f"SELECT * FROM `{name}`")]
    return "\n".join(rows).encode()


def scan(url: str, master_key: str) -> dict[str, Any]:
    """Save the word everywhere through the API, read it back, count it in the bytes."""
    word = "zqv" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(14))
    app = create_app(
        Settings(
            database_url=url,
            master_key=master_key,
            review_required=True,
            allowed_hosts="testserver",
        )
    )
    engine = state_of(app).engine

    def auth(scopes: tuple[str, ...]) -> dict[str, str]:
        secret, _ = writing(engine, lambda c: api_keys.create_key(c, "alice", scopes, "bench"))
        return {"Authorization": f"Bearer {secret}"}

    reviewer = auth(("mcp:read", "mcp:write", "memory:review"))
    agent = auth(("mcp:read", "mcp:write"))
    body = {
        "content": f"The {word} decision",
        "tags": [f"tag-{word}"],
        "contexts": [
            {"snippet": f"about {word}", "conversation_id": f"c-{word}", "message_id": f"m-{word}"}
        ],
    }
    with TestClient(app) as client:
        mid = client.post("/v1/memory", json=body, headers=reviewer).json()["memory"]["id"]
        client.post("/v1/memory", json={**body, "content": f"Draft {word}"}, headers=agent)
        reads = {
            "get": client.get(f"/v1/memory/{mid}", headers=reviewer).text,
            "list": client.get("/v1/memory", headers=reviewer).text,
            "search": client.get("/v1/memory/search", params={"q": word}, headers=reviewer).text,
            "drafts": client.get("/v1/memory/drafts", headers=reviewer).text,
            "export": client.get("/v1/memory/export", headers=reviewer).text,
        }
        data = raw_bytes(engine, url)
    dispose(state_of(app))
    return {
        "bytes": len(data),
        "word": data.count(word.encode()),
        "stem": data.count(word[:10].encode()),
        "returned": all(word in text for text in reads.values()),
    }


def main() -> int:
    """Scan both engines, plain and encrypted."""
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    print(
        "| engine | mode | bytes scanned | word found | first 10 letters found | reads return it |"
    )
    print("|---|---|---:|---:|---:|---|")
    for engine in ("sqlite", "mariadb"):
        for mode, master in (("plain", ""), ("encrypted", key)):
            with tempfile.TemporaryDirectory() as tmp:
                if engine == "sqlite":
                    url = f"sqlite:///{tmp}/scan.db"
                else:
                    url = common.create_database("mb_bench_bytescan", drop=True)
                got = scan(url, master)
            print(
                f"| {engine} | {mode} | {got['bytes']:,} | {got['word']} | {got['stem']} "
                f"| {'get, list, search, drafts, export' if got['returned'] else 'NO'} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
