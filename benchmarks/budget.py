"""How the posting budget trades search time for exactness, on the scale benchmark's data.

`python benchmarks/budget.py [--engine mariadb|sqlite] [--total 1000000] [--queries 150]
[--settings 5000:200,5000:100,2000:200]`

For the 10k-memory user of `scale.py`'s database of --total memories (load it first with
`scale.py --load-only`), each setting BUDGET:CANDIDATES runs the same LoCoMo questions as
`index.search` with those values, and prints the share of top-10 result slots that match
exhaustive BM25 (no budget) and the storage-layer p50/p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import scale
from memory_bank.search import index
from memory_bank.store.engine import make_engine, reading


def main() -> None:
    """Print one line per setting."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["mariadb", "sqlite"], default="mariadb")
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--settings", default="5000:200,5000:100,2000:200,2000:100")
    args = parser.parse_args()
    target = scale.target_for(args.engine, args.total, reset=False)
    engine = make_engine(target.url, pool_size=2)
    if scale.loaded_rows(engine) < args.total:
        raise SystemExit(f"load it first: scale.py --engines {args.engine} --sizes {args.total}")
    _, questions = scale.corpus(scale.locomo.DEFAULT_DATA)
    queries = random.Random(7).sample(questions, args.queries)
    user = scale.user_name(0)

    def run(budget: int, candidates: int) -> tuple[list[list[str]], list[float]]:
        index.POSTINGS_BUDGET, index.CANDIDATES = budget, candidates
        tops, times = [], []
        with reading(engine) as conn:
            for q in queries[:20]:
                index.search(conn, user, q, 10)  # warm the caches
            for q in queries:
                start = time.perf_counter()
                hits = index.search(conn, user, q, 10)
                times.append((time.perf_counter() - start) * 1000)
                tops.append([mid for mid, _ in hits])
        return tops, times

    exact, _ = run(10**9, 10**9)
    print(f"{args.engine}, {args.total:,} memories, {args.queries} questions, 10k-memory user")
    print("budget:candidates  same top-10 set  same top-10 slots  p50 ms  p95 ms")
    for setting in args.settings.split(","):
        budget, candidates = (int(x) for x in setting.split(":"))
        tops, times = run(budget, candidates)
        slots = sum(len(want) for want in exact)
        pairs = list(zip(tops, exact, strict=True))
        in_set = sum(len(set(got) & set(want)) for got, want in pairs)
        # A result list may be shorter than the exhaustive one; missing slots count as different.
        in_place = sum(a == b for got, want in pairs for a, b in zip(got, want, strict=False))
        p50, p95 = common.percentile(times, 50), common.percentile(times, 95)
        print(
            f"{setting:>17}  {in_set / slots:15.1%}  {in_place / slots:17.1%}  "
            f"{p50:6.1f}  {p95:6.1f}"
        )


if __name__ == "__main__":
    main()
