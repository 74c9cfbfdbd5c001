"""The cost of encryption at rest, and proof that it ranks the same: LoCoMo over HTTP, plain and
encrypted (with and without the data-key cache), on SQLite and MariaDB.

For each engine, one fresh database and one real `memory-bank serve` per mode, run side by side:
each LoCoMo turn is saved with POST /v1/memory on every server in turn (timed), then each
question searched on every server in turn (timed), so every mode meets the same machine load.
Prints recall@10 and hit@10, how many questions got exactly the plain server's results (same
memories, order and scores), and save and search p50/p95, next to the machine-speed probe.
"""

from __future__ import annotations

import argparse
import base64
import os
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
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


@dataclass
class Side:
    """One server under test: its keys, ids, timings and rankings."""

    mode: str
    server: common.Server
    client: httpx.Client
    keys: dict[str, str]
    by_id: dict[str, str] = field(default_factory=dict)
    saves: list[float] = field(default_factory=list)
    searches: list[float] = field(default_factory=list)
    ranked: Ranked = field(default_factory=dict)

    def headers(self, user: str) -> dict[str, str]:
        """The user's credential on this server."""
        return {"Authorization": f"Bearer {self.keys[user]}"}


def _start(mode: str, url: str, key: str, convs: list[locomo.Conversation]) -> Side:
    """A server for one mode, with a key per conversation."""
    env = {"MEMORY_BANK_VALIDATE_RESPONSES": "false", "MEMORY_BANK_RATE_LIMIT_PER_MINUTE": "0"}
    env.update(MODES[mode])
    if mode != "plain":
        env["MEMORY_BANK_MASTER_KEY"] = key
    keys = {c.sample_id: common.make_key(url, f"locomo-{c.sample_id}") for c in convs}
    server = common.start_server(url, env=env)
    return Side(mode, server, httpx.Client(base_url=server.base_url, timeout=30), keys)


def run(convs: list[locomo.Conversation], sides: list[Side]) -> dict[str, locomo.Scores]:
    """Save every turn and search every question on every side, in turn (the order rotates),
    so every mode meets the same machine load."""
    for n, (conv, turn) in enumerate((c, t) for c in convs for t in c.turns):
        for side in sides[n % len(sides) :] + sides[: n % len(sides)]:
            start = time.perf_counter()
            r = side.client.post("/v1/memory", json=turn.body, headers=side.headers(conv.sample_id))
            side.saves.append(time.perf_counter() - start)
            r.raise_for_status()
            side.by_id[r.json()["memory"]["id"]] = turn.dia_id
    scores = {}
    for side in sides:

        def search(user: str, question: str, side: Side = side) -> list[str]:
            start = time.perf_counter()
            r = side.client.get(
                "/v1/memory/search",
                params={"q": question, "limit": locomo.LIMIT},
                headers=side.headers(user),
            )
            side.searches.append(time.perf_counter() - start)
            r.raise_for_status()
            found = [(side.by_id[m["id"]], m["score"]) for m in r.json()["results"]]
            side.ranked[(user, question)] = found
            return [dia for dia, _ in found]

        scores[side.mode] = search
    # Questions go round the sides too: question i on each side before question i + 1.
    results = {mode: locomo.Scores() for mode in scores}
    for conv in convs:
        for question, category, evidence in conv.questions:
            for mode, search in scores.items():
                found = search(conv.sample_id, question)
                results[mode].add(category, evidence, found)
    return results


def key_costs(rounds: int = 2000) -> tuple[float, float]:
    """Microseconds per request for the owner's data key: unwrapped and derived afresh (what
    MEMORY_BANK_KEY_CACHE_SIZE=0 does), and found in the cache."""
    from memory_bank.store.sealing import crypto, data_keys

    master = crypto.new_master_key()
    wrapped = crypto.wrap(master, "user:bench", crypto.new_data_key())
    fresh = data_keys.Keyring(master, cache_size=0)
    cached = data_keys.Keyring(master, cache_size=10)
    timings = []
    for keyring in (fresh, cached):
        start = time.perf_counter()
        for _ in range(rounds):
            keyring.data_key("bench", wrapped)
        timings.append((time.perf_counter() - start) / rounds * 1e6)
    return timings[0], timings[1]


def _ms(values: list[float]) -> str:
    """p50 / p95 in milliseconds."""
    return (
        f"{common.percentile(values, 50) * 1000:.2f} / {common.percentile(values, 95) * 1000:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run every engine, the modes side by side, and print the table."""
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
        f"{sum(len(c.questions) for c in convs)} searches per mode; modes side by side"
    )
    fresh, cached = key_costs()
    print(f"data key per request: unwrap + derive {fresh:.1f} us, from the cache {cached:.1f} us")
    rows = [
        "| engine | mode | recall@10 | hit@10 | same results as plain | save p50 / p95 ms "
        "| search p50 / p95 ms | probe ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for engine in args.engines.split(","):
        probe = common.machine_speed()
        with tempfile.TemporaryDirectory() as tmp:
            sides = []
            try:
                for n, mode in enumerate(MODES):
                    if engine == "sqlite":
                        url = f"sqlite:///{tmp}/bench{n}.db"
                    else:
                        url = common.create_database(f"mb_bench_encryption{n}", drop=True)
                    sides.append(_start(mode, url, key, convs))
                scores = run(convs, sides)
            finally:
                for side in sides:
                    side.client.close()
                    side.server.stop()
        probe = (probe + common.machine_speed()) / 2
        plain = sides[0].ranked
        for side in sides:
            same = sum(side.ranked.get(q) == found for q, found in plain.items())
            recall, hit = scores[side.mode].overall()
            line = (
                f"| {engine} | {side.mode} | {recall:.3f} | {hit:.3f} | {same}/{len(plain)} "
                f"| {_ms(side.saves)} | {_ms(side.searches)} | {probe:.0f} |"
            )
            rows.append(line)
            print(line, flush=True)
    print()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
