"""The default local model: all-mpnet-base-v2 built as int8 ONNX from the pinned packaged parts,
checked against vectors the original model computes (transformers on torch, fp32)."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from memory_bank.models import local_model, mpnet
from memory_bank.models.digest import sha256_file
from memory_bank.models.embeddings import DEFAULT_LOCAL
from memory_bank.models.errors import EmbeddingsMisconfigured

REFERENCE = json.loads((Path(__file__).parent / "data" / "mpnet_reference.json").read_text())


@pytest.fixture(scope="module")
def provider() -> local_model.LocalProvider:
    """`local` as the server loads it (built into the user's cache on first use)."""
    return local_model.load(DEFAULT_LOCAL)


def test_default_local_is_mpnet_int8(provider: local_model.LocalProvider) -> None:
    assert DEFAULT_LOCAL == "all-mpnet-base-v2"
    assert provider.model == "local:all-mpnet-base-v2-int8"
    assert provider.embed(["one"]).shape == (1, 768)


def test_vectors_match_the_original_model(provider: local_model.LocalProvider) -> None:
    # The reference holds short texts, CJK with emoji, and one text past 128 word pieces (the
    # packaged tokenizer's own cut, which the build removes) that reaches the 384 cut.
    got = provider.embed(REFERENCE["texts"])
    want = np.array(REFERENCE["vectors"], dtype=np.float32)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() > 0.98, cosines
    # The ranking the model makes is the original's: each question's nearest memory.
    for question, memory in ((1, 0), (3, 2)):
        candidates = [0, 2, 4]
        assert max(candidates, key=lambda i: float(got[question] @ got[i])) == memory
        assert max(candidates, key=lambda i: float(want[question] @ want[i])) == memory


def test_the_build_is_cached_and_recorded() -> None:
    folder = mpnet.ensure()
    assert folder == mpnet.cache_dir()
    recorded = json.loads((folder / "build.json").read_text())
    assert set(recorded) == {"model.onnx", "tokenizer.json"}
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    assert tokenizer["truncation"] is None and tokenizer["padding"] is None


def test_a_damaged_cache_is_not_taken_as_built(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"model")
    (tmp_path / "tokenizer.json").write_text("{}")
    stamp = {
        "model.onnx": sha256_file(tmp_path / "model.onnx"),
        "tokenizer.json": sha256_file(tmp_path / "tokenizer.json"),
    }
    (tmp_path / "build.json").write_text(json.dumps(stamp))
    assert mpnet._complete(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"half a mod")
    assert not mpnet._complete(tmp_path)
    (tmp_path / "model.onnx").unlink()
    assert not mpnet._complete(tmp_path)


def test_an_altered_slice_in_the_parts_cache_is_not_taken(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # Not installed under these names, so the parts cache is read; there, slices that are not
    # the pinned ones: they count as missing, and the index (which has nothing) is asked.
    parts = [dataclasses.replace(p, project=f"no-such-part-{i}") for i, p in enumerate(mpnet.PARTS)]
    monkeypatch.setattr(mpnet, "PARTS", parts)
    mpnet.parts_dir().mkdir(parents=True)
    for part in parts:
        (mpnet.parts_dir() / part.name).write_bytes(b"not the weights")
    with pytest.raises(mpnet.BuildError, match="could not download"):
        mpnet.part_files("http://127.0.0.1:9/simple")


def test_a_part_that_cannot_be_fetched_refuses_to_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(
        mpnet, "PARTS", [dataclasses.replace(mpnet.PARTS[0], project="no-such-distribution")]
    )
    with pytest.raises(EmbeddingsMisconfigured, match="could not download"):
        local_model.load(DEFAULT_LOCAL, index="http://127.0.0.1:9/simple")
    assert not mpnet.cache_dir().exists()


def test_joined_slices_read_as_one_archive(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a/b.bin", bytes(range(256)) * 300)
        archive.writestr("a/c.txt", "hello")
    whole = buffer.getvalue()
    cuts = [0, 7, 1000, 40000, len(whole)]
    paths = []
    for i, (start, end) in enumerate(itertools.pairwise(cuts)):
        paths.append(tmp_path / f"x.zip.{i:03d}")
        paths[-1].write_bytes(whole[start:end])
    with mpnet.Joined(paths) as joined:
        assert joined.read() == whole
        with zipfile.ZipFile(joined) as archive:
            assert archive.read("a/b.bin") == bytes(range(256)) * 300
            assert archive.read("a/c.txt") == b"hello"


def test_safetensors_are_read_as_written() -> None:
    tensors = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "p": np.arange(4, dtype=np.int64)}
    payload = b"".join(t.tobytes() for t in tensors.values())
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "p": {"dtype": "I64", "shape": [4], "data_offsets": [24, 56]},
    }
    raw = json.dumps(header).encode()
    stream = io.BytesIO(len(raw).to_bytes(8, "little") + raw + payload)
    got = mpnet.read_safetensors(stream)
    assert set(got) == {"w", "p"}
    np.testing.assert_array_equal(got["w"], tensors["w"])
    np.testing.assert_array_equal(got["p"], tensors["p"])


def test_relative_position_buckets() -> None:
    table = mpnet.buckets(514)
    # Near positions get their own bucket, far ones share log-spaced buckets, and the two
    # directions use separate halves of the 32.
    assert table[0, 0] == 0
    assert [int(table[10, 10 + d]) for d in range(1, 8)] == [16 + d for d in range(1, 8)]
    assert [int(table[10 + d, 10]) for d in range(1, 8)] == list(range(1, 8))
    assert table[0, 513] == 31 and table[513, 0] == 15
    # Bucket 16 would be distance 0 looking back, which is distance 0 (bucket 0).
    assert set(np.unique(table)) == set(range(32)) - {16}
