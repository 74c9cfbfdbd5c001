"""Paraphrase benchmark: questions that share no content word with the memory that answers them.

66 memory/question pairs (benchmarks/data/paraphrase.json; no shared term after the analyzer's
stemming and stop-words, checked at start) saved for one user among 400 LoCoMo turns as
distractors, over the real REST API with semantic search on (the local model). Prints hit@5 and
hit@10 for lexical, semantic and hybrid side by side, and for OpenWork v0's FULLTEXT search over
the same memories.
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

PAIRS = Path(__file__).resolve().parent / "data" / "paraphrase.json"
DISTRACTORS = 400


def load() -> tuple[list[tuple[str, str]], list[str]]:
    """The pairs (checked to share no term) and the distractor turns."""
    pairs = [tuple(p) for p in json.loads(PAIRS.read_text())]
    for memory, question in pairs:
        shared = set(terms(memory)) & set(terms(question, query=True))
        if shared:
            raise SystemExit(f"pair shares {shared}: {question!r}")
    every = [t.body["content"] for c in locomo.load(locomo.DEFAULT_DATA) for t in c.turns]
    step = max(len(every) // DISTRACTORS, 1)
    return pairs, every[::step][:DISTRACTORS]  # type: ignore[return-value]


def run(url: str, pairs: list[tuple[str, str]], distractors: list[str]) -> dict[str, list[int]]:
    """The rank (1-based; 0 = not in the top 10) of each pair's memory, per mode."""
    key = common.make_key(url, "paraphrase")
    ranks: dict[str, list[int]] = {m: [] for m in locomo.MODES}
    with (
        common.serve(url, env={"MEMORY_BANK_EMBEDDINGS": "local"}) as server,
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
            for mid, (_, question) in zip(ids, pairs, strict=True):
                r = client.get(
                    "/v1/memory/search", params={"q": question, "limit": 10, "mode": mode}
                )
                r.raise_for_status()
                found = [m["id"] for m in r.json()["results"]]
                ranks[mode].append(found.index(mid) + 1 if mid in found else 0)
    return ranks


def run_v0(pairs: list[tuple[str, str]], distractors: list[str]) -> list[int]:
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
    args = parser.parse_args(argv)
    pairs, distractors = load()
    with tempfile.TemporaryDirectory() as tmp:
        if args.engine == "sqlite":
            url = f"sqlite:///{tmp}/paraphrase.db"
        else:
            url = common.create_database("mb_bench_paraphrase", drop=True)
        ranks = run(url, pairs, distractors)
    if not args.no_v0:
        ranks["OpenWork v0"] = run_v0(pairs, distractors)
    print(f"{len(pairs)} pairs among {len(distractors)} distractors, {args.engine}")
    print("| mode | hit@5 | hit@10 |")
    print("|---|---:|---:|")
    for mode, r in ranks.items():
        print(f"| {mode} | {hit(r, 5):.3f} | {hit(r, 10):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
