"""The cost of encryption at rest, and proof that it ranks the same: LoCoMo over HTTP, plain and
encrypted (with and without the data-key cache), on SQLite and MariaDB.

For each engine and mode a fresh database and a real `memory-bank serve`: every LoCoMo turn is
saved with POST /v1/memory (timed), every question searched (timed); prints recall@10 and hit@10,
how many questions got exactly the plain run's results (same memories, order and scores), and
save and search p50/p95, next to the machine-speed probe.
"""

from __future__ import annotations

import argparse
import base64
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo

MODES = {
    "plain": {},
    "encrypted": {"MEMORY_BANK_KEY_CACHE_SIZE": "1000"},
    "encrypted, no key cache": {"MEMORY_BANK_KEY_CACHE_SIZE": "0"},
}
Ranked = dict[tuple[str, str], list[tuple[str, float]]]


def run(convs: list[locomo.Conversation], url: str, env: dict[str, str]) -> dict[str, object]:
    """Save and search LoCoMo on one server; scores, rankings and latencies."""
    keys = {c.sample_id: common.make_key(url, f"locomo-{c.sample_id}") for c in convs}
    by_id: dict[str, str] = {}
    saves: list[float] = []
    searches: list[float] = []
    ranked: Ranked = {}
    server = common.start_server(
        url,
        env={
            "MEMORY_BANK_VALIDATE_RESPONSES": "false",
            "MEMORY_BANK_RATE_LIMIT_PER_MINUTE": "0",
            **env,
        },
    )
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            for conv in convs:
                headers = {"Authorization": f"Bearer {keys[conv.sample_id]}"}
                for turn in conv.turns:
                    start = time.perf_counter()
                    r = client.post("/v1/memory", json=turn.body, headers=headers)
                    saves.append(time.perf_counter() - start)
                    r.raise_for_status()
                    by_id[r.json()["memory"]["id"]] = turn.dia_id

            def search(user: str, question: str) -> list[str]:
                headers = {"Authorization": f"Bearer {keys[user]}"}
                start = time.perf_counter()
                r = client.get(
                    "/v1/memory/search",
                    params={"q": question, "limit": locomo.LIMIT},
                    headers=headers,
                )
                searches.append(time.perf_counter() - start)
                r.raise_for_status()
                found = [(by_id[m["id"]], m["score"]) for m in r.json()["results"]]
                ranked[(user, question)] = found
                return [dia for dia, _ in found]

            scores = locomo.evaluate(convs, search)
    finally:
        server.stop()
    ms = 1000
    return {
        "scores": scores,
        "ranked": ranked,
        "save": (common.percentile(saves, 50) * ms, common.percentile(saves, 95) * ms),
        "search": (common.percentile(searches, 50) * ms, common.percentile(searches, 95) * ms),
    }


def main(argv: list[str] | None = None) -> int:
    """Run every engine and mode and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("MEMORY_BANK_LOCOMO", locomo.DEFAULT_DATA))
    )
    parser.add_argument("--engines", default="sqlite,mariadb")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"dataset not found: {args.data} (use --data or MEMORY_BANK_LOCOMO)")
        return 2
    convs = locomo.load(args.data)
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    print(
        f"LoCoMo {args.data.name}: {sum(len(c.turns) for c in convs)} saves, "
        f"{sum(len(c.questions) for c in convs)} searches per run"
    )
    header = (
        "| engine | mode | recall@10 | hit@10 | same results as plain | save p50 / p95 ms "
        "| search p50 / p95 ms | probe ms |"
    )
    rows = [header, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for engine in args.engines.split(","):
        plain: Ranked | None = None
        for mode, env in MODES.items():
            if mode != "plain":
                env = {**env, "MEMORY_BANK_MASTER_KEY": key}
            with tempfile.TemporaryDirectory() as tmp:
                if engine == "sqlite":
                    url = f"sqlite:///{tmp}/bench.db"
                else:
                    url = common.create_database("mb_bench_encryption", drop=True)
                probe = common.machine_speed()
                got = run(convs, url, env)
            ranked = got["ranked"]
            assert isinstance(ranked, dict)
            if plain is None:
                plain = ranked
            same = sum(ranked.get(q) == found for q, found in plain.items())
            scores = got["scores"]
            assert isinstance(scores, locomo.Scores)
            recall, hit = scores.overall()
            save, search = got["save"], got["search"]
            assert isinstance(save, tuple) and isinstance(search, tuple)
            line = (
                f"| {engine} | {mode} | {recall:.3f} | {hit:.3f} | {same}/{len(plain)} "
                f"| {save[0]:.2f} / {save[1]:.2f} | {search[0]:.2f} / {search[1]:.2f} "
                f"| {probe:.0f} |"
            )
            rows.append(line)
            print(line, flush=True)
    print()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
