"""How evenly a Spider head's partitioning spreads owners of real-looking ids over its backends.

`python benchmarks/owner_spread.py [--ids 1000] [--out benchmarks/results/owner-spread.json]`

The head places an owner by `PARTITION BY KEY (user_id)` over a `utf8mb4_bin` column
(store/shards.py). This asks the MariaDB server (MEMORY_BANK_BENCH_MARIADB) to place the same
ids: a table of that key and collation with 2, 3, 4 and 5 partitions, one per server (the
partitioning is the server's, whatever engine stores the rows), and counts each partition's
rows; then the layout `shards init` makes (shards.partition_count partitions, partition k on
server k mod n), counted per server. Beside them, the spread `PARTITION BY HASH` of the ids'
CRC32 would give (HASH is the value modulo the count).
Ids: `userN` (the sequence the issue measured), e-mail addresses, UUIDs and `org:<slug>`, made
from a fixed seed so every run places the same ids. It writes only to mb_bench_spread, which it
drops at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from common import REPO, create_database
from memory_bank.store.shards import partition_count

DATABASE = "mb_bench_spread"
BACKENDS = (2, 3, 4, 5)
DOMAINS = ("gmail.com", "example.com", "acme.io", "outlook.com", "globex.co.uk", "uni-bonn.de")
SYLLABLES = ("ac", "me", "glo", "bex", "ini", "tech", "so", "ft", "lab", "data", "co", "ra", "nova")


def _word(rng: random.Random, low: int, high: int) -> str:
    """A lower-case word of low to high letters."""
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(low, high)))


def _email(rng: random.Random, n: int) -> str:
    """first.last (sometimes with a number) at a common domain."""
    number = str(rng.randint(1, 99)) if rng.random() < 0.3 else ""
    return f"{_word(rng, 3, 8)}.{_word(rng, 4, 10)}{number}@{rng.choice(DOMAINS)}"


def _uuid(rng: random.Random, n: int) -> str:
    """A random (version 4) UUID, as text."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _org(rng: random.Random, n: int) -> str:
    """An org's owner key: org:<slug>, a slug of made-up syllables, sometimes two words."""
    slug = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
    if rng.random() < 0.4:
        slug += "-" + _word(rng, 3, 7)
    return f"org:{slug}{n}"


FAMILIES: dict[str, Callable[[random.Random, int], str]] = {
    "userN": lambda rng, n: f"user{n}",
    "email": _email,
    "uuid": _uuid,
    "org": _org,
}


def ids_of(family: str, count: int) -> list[str]:
    """count distinct ids of the family, the same every run."""
    rng = random.Random(f"owner-spread-{family}")
    made: dict[str, None] = {}
    n = 0
    while len(made) < count:
        made[FAMILIES[family](rng, n)] = None
        n += 1
    return list(made)


def spread(counts: list[int]) -> dict[str, object]:
    """Counts per backend, and the largest over the even share."""
    ideal = sum(counts) / len(counts)
    return {
        "counts": counts,
        "ideal": round(ideal, 2),
        "largest_over_ideal": round(max(counts) / ideal, 2),
    }


def _by_key(conn: sa.Connection, ids: list[str], partitions: int, servers: int) -> list[int]:
    """The ids per server when KEY over utf8mb4_bin makes `partitions` partitions and server
    s holds every partition k with k mod servers = s."""
    conn.exec_driver_sql("DROP TABLE IF EXISTS owners")
    conn.exec_driver_sql(
        "CREATE TABLE owners (user_id VARCHAR(128) NOT NULL, PRIMARY KEY (user_id)) "
        "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin "
        f"PARTITION BY KEY (user_id) PARTITIONS {partitions}"
    )
    conn.execute(sa.text("INSERT INTO owners (user_id) VALUES (:u)"), [{"u": i} for i in ids])
    per = [
        int(conn.exec_driver_sql(f"SELECT COUNT(*) FROM owners PARTITION (p{k})").scalar() or 0)
        for k in range(partitions)
    ]
    return [sum(per[s::servers]) for s in range(servers)]


def place(conn: sa.Connection, ids: list[str], backends: int) -> dict[str, object]:
    """Where KEY partitioning over utf8mb4_bin puts these ids with one partition per server and
    as `shards init` deals them out, and where HASH of CRC32 would."""
    by_key = _by_key(conn, ids, backends, backends)
    dealt = partition_count(backends)
    by_init = _by_key(conn, ids, dealt, backends)
    rows = conn.exec_driver_sql(
        f"SELECT MOD(CRC32(user_id), {backends}) AS k, COUNT(*) FROM owners GROUP BY k"
    ).all()
    found = {int(k): int(c) for k, c in rows}
    by_crc = [found.get(k, 0) for k in range(backends)]
    return {
        "key": spread(by_key),
        "shards_init": {**spread(by_init), "partitions": dealt},
        "hash_crc32": spread(by_crc),
    }


def main() -> None:
    """Place every family over 2-5 backends; write the results file and print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/owner-spread.json")
    args = parser.parse_args()
    engine = sa.create_engine(create_database(DATABASE, drop=True))
    results: dict[str, dict[str, object]] = {}
    try:
        with engine.begin() as conn:
            version = str(conn.exec_driver_sql("SELECT VERSION()").scalar())
            for family in FAMILIES:
                ids = ids_of(family, args.ids)
                results[family] = {str(n): place(conn, ids, n) for n in BACKENDS}
            conn.exec_driver_sql(f"DROP DATABASE `{DATABASE}`")
    finally:
        engine.dispose()
    document = {
        "measured": datetime.now(UTC).date().isoformat(),
        "server": version,
        "ids_per_family": args.ids,
        "families": results,
    }
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    for family, by_n in results.items():
        for n, placed in by_n.items():
            key, init = placed["key"], placed["shards_init"]  # type: ignore[index]
            crc = placed["hash_crc32"]  # type: ignore[index]
            print(
                f"{family:6} {n} backends  KEY {key['counts']} ({key['largest_over_ideal']}x)  "
                f"shards init, {init['partitions']} partitions {init['counts']} "
                f"({init['largest_over_ideal']}x)  "
                f"HASH(CRC32) {crc['counts']} ({crc['largest_over_ideal']}x)"
            )


if __name__ == "__main__":
    main()
