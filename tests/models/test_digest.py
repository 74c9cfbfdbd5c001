"""File digests: the same hex a pinned sha256 names, for files larger than one read."""

from __future__ import annotations

import hashlib

from memory_bank.models.digest import sha256_file


def test_a_file_spanning_several_reads_hashes_as_a_whole(tmp_path):
    data = bytes(range(256)) * 9000  # about 2.2 MiB: three 1 MiB reads
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    path.write_bytes(data[:-1] + b"\x00")
    assert sha256_file(path) != hashlib.sha256(data).hexdigest()
