"""The official TypeScript SDK reads /mcp's 401 and 403 (tests/mcp/ts, `make tsclient`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from live_server import start_server, stop_server

CLIENT = Path(__file__).resolve().parent / "ts"
SDK = "@modelcontextprotocol/sdk"
# What StreamableHTTPError's message puts before the response body.
SHOWN_BEFORE_BODY = "Error POSTing to endpoint: "


@pytest.fixture
def live(service, database_url):
    """A real `memory-bank serve` on the test database (keys come from `service`)."""
    server = start_server(database_url)
    yield server
    stop_server(server)


@pytest.fixture
def sdk_version() -> str:
    """The SDK version in tests/mcp/ts/node_modules, failing (never skipping) when it is not
    there or not the pinned one: CI installs it, so a missing client is a broken setup."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: run `make tsclient` (make test does)")
    pinned = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
    wanted = pinned["dependencies"][SDK]
    installed = CLIENT / "node_modules" / SDK / "package.json"
    if not installed.exists():
        pytest.fail(f"{installed.parent} is missing: run `make tsclient` (make test does)")
    version = json.loads(installed.read_text(encoding="utf-8"))["version"]
    if version != wanted:
        pytest.fail(f"{SDK} {version} is installed, {wanted} is pinned: run `make tsclient`")
    return str(version)


def sdk_shows(url: str, key: str) -> dict:
    """What refusal.mjs reports of the SDK's connect() with this key."""
    result = subprocess.run(
        ["node", str(CLIENT / "refusal.mjs"), url, key],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_typescript_sdk_reads_a_refusal(sdk_version, live, service):
    # As check_sdk_reads_a_refusal in test_endpoint.py, through the TypeScript SDK: connect()
    # fails with the refusal's status and its sentence, not an empty or generic message.
    # (sdk_version first: a missing client fails before a server is started for nothing.)
    reviewer = service.key("alice", scopes=("memory:review",))
    for key, status, words in (
        ("mb_not_a_key", 401, "memory-bank keys create"),
        (reviewer, 403, "none of the scopes this needs: mcp:read or mcp:write"),
    ):
        shown = sdk_shows(f"{live.base_url}/mcp", key)
        print(f"TypeScript SDK {sdk_version} ({status}) shows: {json.dumps(shown)}")
        assert shown["connected"] is False, shown
        error = shown["error"]
        assert error["class"] == "StreamableHTTPError", shown
        assert error["code"] == status, shown
        assert words in error["message"], shown
        # This SDK shows any error body as it came, so the sentence would reach its user in a
        # problem document too; what /mcp promises is a JSON-RPC error, so read that as well.
        body = json.loads(error["message"].split(SHOWN_BEFORE_BODY, 1)[1])
        assert body["jsonrpc"] == "2.0" and words in body["error"]["message"], body
