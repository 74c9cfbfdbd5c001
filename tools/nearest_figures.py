#!/usr/bin/env python3
"""The blends' figures (mcp/ranking/nearest.py, learned.py), as docs/mcp.md quotes them.

    PYTHONPATH=src python tools/nearest_figures.py --build
    PYTHONPATH=src python tools/nearest_figures.py --weight 0.7 [--learned 0.45] [--split tune]

`--build` prints how long the index takes to make (median of five): the n-grams of every
capability's texts, one language's vectors, each further language's, and one query.
`--weight` prints rank-1 and top-3 on one split of every set written before tuning, with the
blend at that weight (0: the rules alone) and the learned model's at `--learned` (0 unless
told), per language and for negations. The tune split is
the one to choose by (and `python -m memory_bank.mcp.ranking.tune NEAREST_WEIGHT ...` the
command that tunes it); a holdout figure is measured once, when a design is frozen.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_mcp
from memory_bank.mcp import lexicon, manifest
from memory_bank.mcp.ranking import capability_index, learned, nearest


def build_times() -> dict[str, float]:
    """Milliseconds to make the index, by stage (median of five)."""
    index = capability_index.index_of(manifest.load())
    others = [code for code in lexicon.CODES if code != "en"]
    stages: dict[str, list[float]] = {}
    for _ in range(5):
        at = [time.perf_counter()]
        made = nearest.of_index(index)
        at.append(time.perf_counter())
        made.part(("en",))
        at.append(time.perf_counter())
        for code in others:
            made.part((code,))
        at.append(time.perf_counter())
        made.closeness("remember that I'm vegan", ("en",), int(nearest.NEAREST_BEST_OF))
        at.append(time.perf_counter())
        spans = [b - a for a, b in itertools.pairwise(at)]
        spans[2] /= max(1, len(others))
        labels = (
            "n-grams of every text",
            "one language's vectors",
            "each further one's",
            "a query",
        )
        for label, span in zip(labels, spans, strict=True):
            stages.setdefault(label, []).append(span)
    return {label: statistics.median(values) * 1000 for label, values in stages.items()}


def figures(split: str, weight: float, learned_weight: float = 0.0) -> list[str]:
    """One line per set: rank-1 and top-3, all, per language, negations."""
    nearest.NEAREST_WEIGHT = weight
    learned.LEARNED_WEIGHT = learned_weight
    lines = []
    for name in gen_mcp.HELD_OUT_SETS:
        first = gen_mcp.rank_1(split, name)
        top = gen_mcp.rank_1(split, name, within=3)
        groups = " ".join(
            f"{group} {first[group][0]}/{first[group][1]} ({top[group][0]})"
            for group in ("all", *gen_mcp.LANGUAGES, "negations")
            if group in first
        )
        lines.append(f"{name}: {groups}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the figures asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="the index's build time")
    parser.add_argument("--weight", type=float, help="rank-1 (top-3) with the blend at this")
    parser.add_argument("--split", default="tune", choices=("tune", "holdout"))
    parser.add_argument(
        "--learned", type=float, default=0.0, help="and the learned model's blend at this"
    )
    args = parser.parse_args(argv)
    if args.build:
        for label, ms in build_times().items():
            print(f"{label}: {ms:.1f} ms")
    if args.weight is not None:
        print("\n".join(figures(args.split, args.weight, args.learned)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
