"""tools/gen_mcp.py: writes the manifest, and --check fails with a diff when it is stale."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "gen_mcp.py"
SPEC = ROOT / "openapi" / "memory-bank.yaml"
MANIFEST = ROOT / "src" / "memory_bank" / "mcp" / "manifest.json"


def _gen():
    spec = importlib.util.spec_from_file_location("gen_mcp", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_manifest_is_current():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_fails_with_a_readable_diff_on_a_stale_manifest(tmp_path, capsys):
    spec = yaml.safe_load(SPEC.read_text())
    spec["paths"]["/v1/memory"]["get"]["summary"] = "List your memories, oldest last."
    changed = tmp_path / "spec.yaml"
    changed.write_text(yaml.safe_dump(spec, sort_keys=False))
    stale = tmp_path / "manifest.json"
    shutil.copy(MANIFEST, stale)
    gen = _gen()
    assert gen.main(["--spec", str(changed), "--out", str(stale), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "--- manifest.json (committed)" in out and "+++ manifest.json (from spec.yaml)" in out
    assert '-      "description": "List your memories, newest first.' in out
    assert '+      "description": "List your memories, oldest last.' in out
    assert "is stale" in err
    assert stale.read_bytes() == MANIFEST.read_bytes()  # --check never writes
    # Regenerating fixes it, byte for byte the same on a second run.
    assert gen.main(["--spec", str(changed), "--out", str(stale)]) == 0
    first = stale.read_bytes()
    assert gen.main(["--spec", str(changed), "--out", str(stale)]) == 0
    assert stale.read_bytes() == first
    assert gen.main(["--spec", str(changed), "--out", str(stale), "--check"]) == 0
    assert json.loads(first)["source"] == "spec.yaml"


def test_a_spec_error_is_a_message_not_a_traceback(tmp_path, capsys):
    spec = yaml.safe_load(SPEC.read_text())
    spec["paths"]["/v1/memory"]["get"]["description"] = "long " * 200
    broken = tmp_path / "spec.yaml"
    broken.write_text(yaml.safe_dump(spec))
    assert _gen().main(["--spec", str(broken), "--out", str(tmp_path / "m.json")]) == 2
    assert "getMemory" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_check_prints_the_tools_list_size_and_host_compatibility(capsys):
    assert _gen().main(["--check"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"tools/list: \d+ tools, \d+ bytes \(\d+ for a read-only key\)", out), out
    assert "host compatibility: every input schema is in the portable subset" in out


def test_a_tool_outside_the_portable_subset_fails_the_check(tmp_path, capsys):
    # A free-form object and a oneOf: no portable spelling, so no host-facing manifest.
    spec = yaml.safe_load(SPEC.read_text())
    spec["components"]["schemas"]["NewMemory"]["properties"]["meta"] = {"type": "object"}
    spec["paths"]["/v1/memory"]["get"]["parameters"][0]["schema"] = {
        "oneOf": [{"type": "integer"}, {"type": "string"}]
    }
    changed = tmp_path / "spec.yaml"
    changed.write_text(yaml.safe_dump(spec, sort_keys=False))
    out_file = tmp_path / "manifest.json"
    gen = _gen()
    assert gen.main(["--spec", str(changed), "--out", str(out_file), "--check"]) == 1
    err = capsys.readouterr().err
    assert "host compatibility:" in err and "finding(s)" in err
    assert "postMemory: meta: an object needs named `properties`" in err
    assert "getMemory: limit: `oneOf` is not accepted by every host" in err
    assert gen.main(["--spec", str(changed), "--out", str(out_file)]) == 1
    assert not out_file.exists()
