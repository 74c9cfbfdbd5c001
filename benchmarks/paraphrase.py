"""Paraphrase benchmark: questions that share no content word with the memory that answers them.

Two sets (`--set`), each checked at start to share no term between a memory and its question
after the analyzer's stemming and stop-words:

- `a`: 66 memory/question pairs (benchmarks/data/paraphrase.json) among 400 LoCoMo turns as
  distractors; its tuning half is the even-numbered pairs, held out the odd ones (as in fusion.py).
- `b`: benchmarks/data/paraphrase_b.json, 90 pairs written by another author in other domains,
  among its own 318 distractors; each pair carries its split ('tune' or 'holdout').

Every memory of the set (both halves) and every distractor is saved for one user, over the real
REST API with semantic search on (`--model`, the default local model unless told), and the
questions of `--split` are asked. Prints hit@5 and hit@10 per split for lexical, semantic and
hybrid side by side, and for OpenWork v0's FULLTEXT search over the same memories.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo
from memory_bank.search.analyzer import terms

DATA = Path(__file__).resolve().parent / "data"
SETS = {"a": DATA / "paraphrase.json", "b": DATA / "paraphrase_b.json"}
SPLITS = ("tune", "holdout")
DISTRACTORS = 400


def load(which: str = "a") -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """The pairs (checked to share no term), each pair's split, and the distractors."""
    raw = json.loads(SETS[which].read_text())
    if which == "a":
        pairs = [(m, q) for m, q in raw]
        splits = [SPLITS[i % 2] for i in range(len(pairs))]
        every = [t.body["content"] for c in locomo.load(locomo.DEFAULT_DATA) for t in c.turns]
        step = max(len(every) // DISTRACTORS, 1)
        distractors = every[::step][:DISTRACTORS]
    else:
        pairs = [(p["memory"], p["question"]) for p in raw["pairs"]]
        splits = [p["split"] for p in raw["pairs"]]
        distractors = [d["content"] for d in raw["distractors"]]
    for memory, question in pairs:
        shared = set(terms(memory)) & set(terms(question, query=True))
        if shared:
            raise SystemExit(f"pair shares {shared}: {question!r}")
    return pairs, splits, distractors


def run(
    url: str,
    pairs: list[tuple[str, str]],
    distractors: list[str],
    asked: list[bool],
    model: str = "local",
) -> dict[str, list[int]]:
    """The rank (1-based; 0 = not in the top 10) of each asked pair's memory, per mode."""
    key = common.make_key(url, "paraphrase")
    ranks: dict[str, list[int]] = {m: [] for m in locomo.MODES}
    with (
        common.serve(url, env={**locomo.SEMANTIC_ENV, "MEMORY_BANK_EMBEDDINGS": model}) as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client,
    ):
        for text in distractors:
            client.post("/v1/memory", json={"content": text}).raise_for_status()
        ids = []
        for memory, _ in pairs:
            r = client.post("/v1/memory", json={"content": memory})
            r.raise_for_status()
            ids.append(r.json()["memory"]["id"])
        locomo.wait_for_embeddings(client)
        for mode in locomo.MODES:
            for mid, (_, question), ask in zip(ids, pairs, asked, strict=True):
                if not ask:
                    continue
                r = client.get(
                    "/v1/memory/search", params={"q": question, "limit": 10, "mode": mode}
                )
                r.raise_for_status()
                assert r.json()["mode"] == mode, r.json()["mode"]
                found = [m["id"] for m in r.json()["results"]]
                ranks[mode].append(found.index(mid) + 1 if mid in found else 0)
    return ranks


def run_v0(pairs: list[tuple[str, str]], distractors: list[str], asked: list[bool]) -> list[int]:
    """OpenWork v0's FULLTEXT search over the same memories (MariaDB)."""
    url = common.create_database("mb_bench_paraphrase_v0", drop=True)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(locomo.V0_TABLE)
        rows = [(f"d{i}", "u", t) for i, t in enumerate(distractors)]
        rows += [(f"p{i}", "u", m) for i, (m, _) in enumerate(pairs)]
        conn.exec_driver_sql("INSERT INTO v0_memory VALUES (%s, %s, %s)", rows)
    ranks = []
    with engine.connect() as conn:
        for i, (_, question) in enumerate(pairs):
            if not asked[i]:
                continue
            found = [
                r[0] for r in conn.exec_driver_sql(locomo.V0_SEARCH, (question, "u", question, 10))
            ]
            ranks.append(found.index(f"p{i}") + 1 if f"p{i}" in found else 0)
    engine.dispose()
    return ranks


def hit(ranks: list[int], k: int) -> float:
    """Share of questions whose memory is in the top k."""
    return sum(1 for r in ranks if 0 < r <= k) / len(ranks)


def main(argv: list[str] | None = None) -> int:
    """Run and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["sqlite", "mariadb"], default="sqlite")
    parser.add_argument("--no-v0", action="store_true")
    parser.add_argument("--set", choices=sorted(SETS), default="a", help="a: paraphrase.json")
    parser.add_argument(
        "--split",
        choices=[*SPLITS, "all"],
        default="all",
        help="which questions to ask (all: each half reported on its own too)",
    )
    parser.add_argument(
        "--model", default="local", help="MEMORY_BANK_EMBEDDINGS for the server (default local)"
    )
    args = parser.parse_args(argv)
    pairs, splits, distractors = load(args.set)
    asked = [args.split in ("all", s) for s in splits]
    with tempfile.TemporaryDirectory() as tmp:
        if args.engine == "sqlite":
            url = f"sqlite:///{tmp}/paraphrase.db"
        else:
            url = common.create_database("mb_bench_paraphrase", drop=True)
        ranks = run(url, pairs, distractors, asked, args.model)
    if not args.no_v0:
        ranks["OpenWork v0"] = run_v0(pairs, distractors, asked)
    print(
        f"set {args.set} ({SETS[args.set].name}): {len(pairs)} pairs saved among "
        f"{len(distractors)} distractors, {args.engine}, MEMORY_BANK_EMBEDDINGS={args.model}"
    )
    kept = [s for s, a in zip(splits, asked, strict=True) if a]
    shown = [*SPLITS, "all"] if args.split == "all" else [args.split]
    print("| split | n | mode | hit@5 | hit@10 |")
    print("|---|---:|---|---:|---:|")
    for split in shown:
        for mode, r in ranks.items():
            part = [x for x, s in zip(r, kept, strict=True) if split in ("all", s)]
            print(f"| {split} | {len(part)} | {mode} | {hit(part, 5):.3f} | {hit(part, 10):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
