#!/usr/bin/env python3
"""Generate the MCP tool manifest from the OpenAPI spec; `--check` fails when it is stale.

Both also check what a host would load: every tool's input schema must stay in the subset
every major host accepts (mcp/portable.py), and they print the size of `tools/list`.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

from memory_bank.mcp import portable
from memory_bank.mcp.generate import SpecError, build_manifest, render
from memory_bank.mcp.manifest import parse
from memory_bank.mcp.server import tools_for, tools_list_bytes

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "openapi" / "memory-bank.yaml"
MANIFEST = ROOT / "src" / "memory_bank" / "mcp" / "manifest.json"


def _shown(path: Path) -> str:
    """A path relative to the repo when it is inside it (keeps the output deterministic)."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def host_check(manifest: dict[str, Any]) -> list[str]:
    """Print the tools/list size and the host-compatibility result; return the findings."""
    full = parse(manifest)
    tools = tools_for(full)
    findings = [f for tool in tools for f in portable.check(tool.name, tool.input_schema)]
    print(
        f"tools/list: {len(tools)} tools, {tools_list_bytes(full)} bytes "
        f"({tools_list_bytes(full.for_scopes(('mcp:read',)))} for a read-only key)"
    )
    if findings:
        print(f"host compatibility: {len(findings)} finding(s)", file=sys.stderr)
        for finding in findings:
            print(f"  {finding}", file=sys.stderr)
        print(
            "Every host must accept every tool: see docs/mcp.md (Schemas every host accepts).",
            file=sys.stderr,
        )
    else:
        print("host compatibility: every input schema is in the portable subset")
    return findings


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the manifest; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", type=Path, default=SPEC, help="OpenAPI document to read")
    parser.add_argument("--out", type=Path, default=MANIFEST, help="manifest file to write")
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 with a diff when stale"
    )
    args = parser.parse_args(argv)
    try:
        spec = yaml.safe_load(args.spec.read_text(encoding="utf-8"))
        manifest = build_manifest(spec, source=_shown(args.spec))
    except (OSError, yaml.YAMLError, SpecError) as exc:
        print(f"gen_mcp: {exc}", file=sys.stderr)
        return 2
    fresh = render(manifest)
    if host_check(manifest):
        return 1
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current == fresh:
            print(f"{_shown(args.out)} is up to date")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            fresh.splitlines(keepends=True),
            fromfile=f"{_shown(args.out)} (committed)",
            tofile=f"{_shown(args.out)} (from {_shown(args.spec)})",
        )
        sys.stdout.writelines(diff)
        print(
            f"\n{_shown(args.out)} is stale: run `python tools/gen_mcp.py` and commit it.",
            file=sys.stderr,
        )
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(fresh, encoding="utf-8")
    print(f"wrote {_shown(args.out)} ({len(fresh)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
