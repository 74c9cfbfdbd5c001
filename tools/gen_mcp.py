#!/usr/bin/env python3
"""Generate the MCP tool manifest from the OpenAPI spec; `--check` fails when it is stale.

Both also check what a host would load: every tool's input schema must stay in the subset
every major host accepts (mcp/portable.py), and they print the size of `tools/list`.
`--figures` prints the figures docs/mcp.md quotes (tools/list bytes per protocol version,
phrasing counts, search_capabilities' rank-1), measured now; tests/mcp/test_figures.py fails
when the document's copy differs.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import sys
import tempfile
from collections import Counter
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
PHRASINGS = ROOT / "tests" / "mcp"
DOC = ROOT / "docs" / "mcp.md"
# The protocol versions current SDKs negotiate: the last with a handshake, and the first without.
PROTOCOL_VERSIONS = ("2025-11-25", "2026-07-28")
FIGURES_START = (
    "<!-- figures: `tools/gen_mcp.py --figures`, checked by tests/mcp/test_figures.py -->"
)
FIGURES_END = "<!-- end of figures -->"
# Kinds of phrasing counted together as negations.
NEGATIONS = ("negation", "no_save", "negation_trap")
LANGUAGES = ("en", "de", "fr", "es", "it", "pt")
# The sets written before tuning, split into a tune and a held-out half, newest first.
HELD_OUT_SETS = (
    "phrasings_m.json",
    "phrasings_l.json",
    "phrasings_k.json",
    "phrasings_j.json",
    "phrasings_i.json",
    "phrasings_e.json",
    "phrasings_d.json",
    "phrasings_c.json",
    "phrasings_b.json",
)

# The sets the figures with an embedding model are given on.
MODEL_SETS = ("phrasings_i.json", "phrasings_e.json")


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


def tools_list_sizes() -> dict[tuple[str, str], int]:
    """Bytes of a real tools/list answer from /mcp, per (key, protocol version): a key with
    every scope, and a read-only one (an app on a throw-away SQLite database, in-process)."""
    from starlette.testclient import TestClient

    from memory_bank.app import create_app
    from memory_bank.settings import Settings
    from memory_bank.state import dispose, state_of
    from memory_bank.store import api_keys
    from memory_bank.store.engine import writing

    every = ("mcp:read", "mcp:write", "memory:review", "org:write", "org:admin")
    sizes: dict[tuple[str, str], int] = {}
    # The app logs to stdout; only the figures go there.
    with contextlib.redirect_stdout(sys.stderr), tempfile.TemporaryDirectory() as folder:
        app = create_app(Settings(database_url=f"sqlite:///{folder}/figures.db"))
        state = state_of(app)
        try:
            made = {}
            for name, scopes in (("every scope", every), ("mcp:read", ("mcp:read",))):
                made[name] = writing(
                    state.db.engine,
                    lambda conn, s=scopes: api_keys.create_key(conn, "figures", s, "f", "o", None),
                )[0]
            with TestClient(app, base_url="http://127.0.0.1:8080") as client:
                for name, key in made.items():
                    for version in PROTOCOL_VERSIONS:
                        response = client.post(
                            "/mcp",
                            json=_tools_list(version),
                            headers={
                                "Authorization": f"Bearer {key}",
                                "Accept": "application/json, text/event-stream",
                                "MCP-Protocol-Version": version,
                                "Mcp-Method": "tools/list",
                            },
                        )
                        response.raise_for_status()
                        sizes[(name, version)] = len(response.content)
        finally:
            dispose(state)
    return sizes


def _tools_list(version: str) -> dict[str, Any]:
    """A tools/list request as an SDK client sends it at a protocol version (2026-07-28 and
    later carry the client's details in every request: there is no handshake)."""
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    if version >= "2026":
        request["params"] = {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientInfo": {"name": "figures", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        }
    return request


def phrasing_passes(
    manifest: Any, text: str, expected: str | list[str], embedder: Any = None, within: int = 1
) -> bool:
    """Whether search_capabilities puts the expected capability (or one of a list of them)
    first, or among the first `within` (ranking by meaning too with an embedder); for "none" or
    [] (the user declines), whether it offers nothing or nothing that changes anything first."""
    from memory_bank.mcp import ranking
    from memory_bank.mcp.ranking import tune

    ranked = ranking.rank(manifest, text, 3, embedder)
    wanted = tune.expected({"expected": expected})
    if not wanted:
        return not ranked or ranked[0][0].method == "GET"
    return any(capability.name in wanted for capability, _ in ranked[:within])


def rank_1(
    split: str = "holdout", name: str = "phrasings_b.json", embedder: Any = None, within: int = 1
) -> dict[str, tuple[int, int]]:
    """(right first, phrasings) on a split of a set written before tuning (phrasings_b.json to
    phrasings_m.json): all, per language, negations; lexical, or with an embedding model when
    one is given; with `within` 3, right among the first three."""
    from memory_bank.mcp import manifest as manifest_module

    tools = manifest_module.load()
    data = json.loads((PHRASINGS / name).read_text(encoding="utf-8"))
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for entry in data["phrasings"]:
        if entry["split"] != split:
            continue
        # Sets name a language and a kind (phrasings_b to _j) or a language and whether the
        # phrasing negates (phrasings_k).
        lang = entry.get("lang") or entry["language"]
        negation = entry.get("negation", entry.get("kind") in NEGATIONS)
        groups = ["all", lang, *(["negations"] if negation else [])]
        if lang != "en":
            groups.append("non-English")
        good = phrasing_passes(tools, entry["text"], entry["expected"], embedder, within)
        for group in groups:
            total[group] += 1
            passed[group] += good
    return {group: (passed[group], total[group]) for group in total}


def _project_sets() -> dict[str, tuple[int, int]]:
    """(right first, phrasings) on the project's first two sets, `now` part."""
    from memory_bank.mcp import manifest as manifest_module

    tools = manifest_module.load()
    out = {}
    for name in ("phrasings.json", "phrasings_holdout.json"):
        now = json.loads((PHRASINGS / name).read_text(encoding="utf-8"))["now"]
        good = sum(phrasing_passes(tools, text, want) for text, want in now.items())
        out[name] = (good, len(now))
    return out


def figures() -> str:
    """The figures block of docs/mcp.md, measured now."""
    from memory_bank.mcp import manifest as manifest_module

    sizes = tools_list_sizes()
    lines = [FIGURES_START, "", "| `tools/list` bytes | " + " | ".join(PROTOCOL_VERSIONS) + " |"]
    lines.append("|---|" + "---|" * len(PROTOCOL_VERSIONS))
    for key in ("every scope", "mcp:read"):
        row = " | ".join(f"{sizes[(key, v)]:,}" for v in PROTOCOL_VERSIONS)
        lines.append(f"| a key with {key} | {row} |")
    tools = manifest_module.load()
    operations = [*tools.capabilities, *tools.elsewhere]
    examples = sum(len(c.examples) for c in operations)
    with_examples = sum(1 for c in operations if c.examples)
    lines += [
        "",
        f"The spec gives {examples} example phrasings to {with_examples} of its "
        f"{len(operations)} operations.",
        "",
        "| `search_capabilities`: right capability first | phrasings | rank-1 |",
        "|---|---|---|",
    ]
    for name, (good, count) in _project_sets().items():
        lines.append(f"| `tests/mcp/{name}` | {count} | {good / count:.0%} |")
    for name in HELD_OUT_SETS:
        for split in ("tune", "holdout"):
            found = rank_1(split, name)
            for group in ("all", *LANGUAGES, "non-English", "negations"):
                if group not in found:
                    continue  # a language the set has no phrasings in
                good, count = found[group]
                label = f"`{name}` {split}, {group}"
                lines.append(f"| {label} | {count} | {good / count:.0%} |")
    lines += ["", FIGURES_END]
    return "\n".join(lines)


def model_figures_start(model: str) -> str:
    """The line that opens the block of figures measured with an embedding model."""
    return (
        f"<!-- figures with {model}: `tools/gen_mcp.py --figures-with {model}`, checked by "
        "tests/mcp/test_ranking_semantic.py -->"
    )


def model_figures(model: str) -> str:
    """The held-out rank-1 of search_capabilities ranking English phrases by meaning too, with
    a local model (semantic search's), next to the lexical figure, measured now."""
    from memory_bank.models import local_model

    embedder = local_model.load(model)
    lines = [
        model_figures_start(model),
        "",
        f"| held-out rank-1 | phrasings | lexical | with {model} |",
        "|---|---|---|---|",
    ]
    for name in MODEL_SETS:
        lexical, blended = rank_1("holdout", name), rank_1("holdout", name, embedder)
        for group in ("all", *LANGUAGES, "non-English", "negations"):
            if group not in lexical:
                continue
            (plain, count), (good, _) = lexical[group], blended[group]
            shown = f"{plain}/{count} = {plain / count:.0%} | {good}/{count} = {good / count:.0%}"
            lines.append(f"| `{name}` holdout, {group} | {count} | {shown} |")
    lines += ["", FIGURES_END]
    return "\n".join(lines)


def documented_figures(text: str, start_line: str = FIGURES_START) -> str:
    """A figures block as docs/mcp.md has it (empty when it has none)."""
    start = text.find(start_line)
    end = text.find(FIGURES_END, start) if start >= 0 else -1
    return text[start : end + len(FIGURES_END)] if 0 <= start < end else ""


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the manifest; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", type=Path, default=SPEC, help="OpenAPI document to read")
    parser.add_argument("--out", type=Path, default=MANIFEST, help="manifest file to write")
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 with a diff when stale"
    )
    parser.add_argument(
        "--figures", action="store_true", help="print the figures block docs/mcp.md quotes"
    )
    parser.add_argument(
        "--figures-with",
        metavar="MODEL",
        help="print the held-out rank-1 block with a local embedding model (all-MiniLM-L6-v2)",
    )
    args = parser.parse_args(argv)
    if args.figures:
        print(figures())
        return 0
    if args.figures_with:
        print(model_figures(args.figures_with))
        return 0
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
