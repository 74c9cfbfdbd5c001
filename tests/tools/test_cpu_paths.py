"""tools/cpu_paths.py: the packaged MiniLM's reference check on x86-64 with AVX2 only (no VNNI),
under `qemu-x86_64 -cpu Haswell`, whatever CPU runs the suite (issue 29: the suite exercises the
non-VNNI path on any machine).

Only the short reference texts (--short): emulated, they run the same int8 kernels in about
13 s of CPU, where all three texts took about 160 s (the third reaches the model's cut) and
all-mpnet-base-v2's seven about 375 s; `python tools/cpu_paths.py` runs them all (docs/search.md,
"Reference cosines by CPU path")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "cpu_paths.py"
MINILM = "all-MiniLM-L6-v2"


def _require_qemu() -> None:
    """Skip without Debian's qemu-user; fail in CI, where `make test` installs it."""
    if shutil.which("qemu-x86_64") is None:
        problem = "qemu-x86_64 is not installed (apt-get install qemu-user; make test does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(problem)
        pytest.skip(problem)


def _rows(*args: str) -> list[dict[str, object]]:
    """The tool's rows as JSON."""
    done = subprocess.run(
        [sys.executable, str(TOOL), "--json", *args], capture_output=True, text=True, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    rows: list[dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


def test_minilm_matches_the_original_model_on_avx2_without_vnni() -> None:
    _require_qemu()
    [row] = _rows("--paths", "haswell", "--models", MINILM, "--short")
    assert row["model"] == MINILM, row["note"]
    # The emulated CPU is the path meant: AVX2, and neither VNNI extension.
    features = str(row["note"]).removeprefix("cpu: ").split()
    assert "avx2" in features
    assert not {"avx_vnni", "avx512_vnni", "avx512f"} & set(features)
    cosines = row["cosines"]
    assert isinstance(cosines, list) and len(cosines) == 2
    assert min(cosines) >= 0.98, cosines
