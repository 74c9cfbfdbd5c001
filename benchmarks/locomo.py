"""LoCoMo retrieval benchmark: our search over the real REST API vs OpenWork v0's FULLTEXT SQL.

One user per conversation, one memory per dialogue turn, each question of categories 1-4 searched
with limit 10; prints recall@10 and hit@10 per category and overall for both strategies.
`--ablation` instead runs the index in-process on SQLite for a series of variants (each adds one
change to the previous) and prints the recall@10 each one reaches.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LIMIT = 10
TUNE_CONVS = {"conv-26", "conv-30", "conv-41"}  # the tuning split (fusion.py); others held out
# MEMORY_BANK_LOCOMO_DATA points elsewhere (a checkout whose parent holds no shared/ folder).
DEFAULT_DATA = Path(
    os.environ.get(
        "MEMORY_BANK_LOCOMO_DATA",
        common.REPO.parent / "shared" / "datasets" / "locomo" / "locomo-dev5.json",
    )
)


@dataclass
class Turn:
    """One dialogue turn, saved as one memory."""

    dia_id: str
    body: dict[str, Any]


@dataclass
class Conversation:
    """One LoCoMo conversation: its turns as memories and its questions."""

    sample_id: str
    turns: list[Turn]
    questions: list[tuple[str, int, set[str]]] = field(default_factory=list)


def _session_date(raw: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '8 May 2023' (the day is what people ask about)."""
    day = raw.split(" on ", 1)[-1]
    return day.replace(",", "").strip()


def _line(turn: dict[str, Any]) -> str:
    """A turn as a person would note it: who said it, what, and what a shared photo shows."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shared a photo: {turn['blip_caption']}]"
    return text


def build_memory(
    sample_id: str,
    turns: list[dict[str, Any]],
    i: int,
    date: str,
    *,
    date_in_content: bool = False,
    tags: bool = True,
    contexts: bool = True,
) -> dict[str, Any]:
    """The postMemory body an agent would save for turn i of a session."""
    turn = turns[i]
    content = _line(turn)
    if date_in_content:
        content = f"[{date}] {content}"
    body: dict[str, Any] = {"content": content}
    if tags:
        body["tags"] = [turn["speaker"], date]
    if contexts:
        body["contexts"] = [
            {
                "snippet": _line(turns[j]),
                "conversation_id": sample_id,
                "message_id": turns[j]["dia_id"],
                "origin": "active_conversation",
            }
            for j in (i - 1, i + 1)
            if 0 <= j < len(turns)
        ]
    return body


def plain_memory(sample_id: str, turn: dict[str, Any], n: int, date: str) -> dict[str, Any]:
    """The plain protocol: the turn, tagged with its speaker and session, its session as context."""
    session = f"session {n}, {date}"
    return {
        "content": _line(turn),
        "tags": [turn["speaker"], f"session {n}", date],
        "contexts": [
            {
                "snippet": session,
                "conversation_id": sample_id,
                "message_id": turn["dia_id"],
                "origin": "active_conversation",
            }
        ],
    }


def load(
    path: Path, plain: bool = False, held_out: bool = False, **save: bool
) -> list[Conversation]:
    """The conversations of the dataset with the memory each turn becomes.

    plain: the plain protocol (plain_memory) instead of neighbouring turns as contexts.
    held_out: only the conversations outside the tuning split.
    """
    data = json.loads(path.read_text())
    out = []
    for sample in data:
        if held_out and sample["sample_id"] in TUNE_CONVS:
            continue
        conv = sample["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            session = conv[f"session_{n}"]
            date = _session_date(conv.get(f"session_{n}_date_time", ""))
            for i, turn in enumerate(session):
                if plain:
                    body = plain_memory(sample["sample_id"], turn, n, date)
                else:
                    body = build_memory(sample["sample_id"], session, i, date, **save)
                turns.append(Turn(turn["dia_id"], body))
            n += 1
        known = {t.dia_id for t in turns}
        item = Conversation(sample["sample_id"], turns)
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            # A few annotations hold several ids in one string ("D8:6; D9:17"): split them.
            evidence = {e for raw in qa["evidence"] for e in re.split(r"[;,\s]+", raw)}
            evidence &= known
            if evidence:
                item.questions.append((qa["question"], qa["category"], evidence))
        out.append(item)
    return out


@dataclass
class Scores:
    """Recall@10 and hit@10 sums per category."""

    recall: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    hit: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    count: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, category: int, evidence: set[str], found: list[str]) -> None:
        """Score one question's top results against its evidence turns."""
        got = evidence & set(found[:LIMIT])
        self.recall[category] += len(got) / len(evidence)
        self.hit[category] += 1.0 if got else 0.0
        self.count[category] += 1

    def overall(self) -> tuple[float, float]:
        """Recall@10 and hit@10 averaged over all questions."""
        n = sum(self.count.values()) or 1
        return sum(self.recall.values()) / n, sum(self.hit.values()) / n

    def row(self, category: int) -> tuple[float, float, int]:
        """Recall@10, hit@10 and question count of one category."""
        n = self.count[category] or 1
        return self.recall[category] / n, self.hit[category] / n, self.count[category]


Search = Callable[[str, str], list[str]]


def evaluate(convs: list[Conversation], search: Search) -> Scores:
    """Run every question through a search(user, question) -> dia_ids function."""
    scores = Scores()
    for conv in convs:
        for question, category, evidence in conv.questions:
            scores.add(category, evidence, search(conv.sample_id, question))
    return scores


# --- ours, over HTTP ---------------------------------------------------------------------------


def run_http(
    convs: list[Conversation],
    database_url: str,
    org_half: bool = False,
    env: dict[str, str] | None = None,
) -> tuple[Scores, float]:
    """Save every turn through POST /v1/memory and search through GET /v1/memory/search.

    org_half: each conversation's user belongs to an org of its own, and every other turn is
    saved to the org (`"scope": "org"`), so each search merges the user's and the org's index.
    env: extra settings for the server (a master key for --encrypted).
    """
    keys = {
        c.sample_id: common.make_key(
            database_url, f"locomo-{c.sample_id}", f"org-{c.sample_id}" if org_half else None
        )
        for c in convs
    }
    by_id: dict[str, str] = {}
    latencies: list[float] = []
    serving = common.serve(database_url, env=env)
    with serving as server, httpx.Client(base_url=server.base_url) as client:
        for conv in convs:
            headers = {"Authorization": f"Bearer {keys[conv.sample_id]}"}
            for i, turn in enumerate(conv.turns):
                body = {**turn.body, "scope": "org"} if org_half and i % 2 else turn.body
                r = client.post("/v1/memory", json=body, headers=headers)
                r.raise_for_status()
                by_id[r.json()["memory"]["id"]] = turn.dia_id

        def search(user: str, question: str) -> list[str]:
            headers = {"Authorization": f"Bearer {keys[user]}"}
            start = time.perf_counter()
            r = client.get(
                "/v1/memory/search", params={"q": question, "limit": LIMIT}, headers=headers
            )
            latencies.append(time.perf_counter() - start)
            r.raise_for_status()
            return [by_id[m["id"]] for m in r.json()["results"]]

        scores = evaluate(convs, search)
    return scores, common.percentile(latencies, 50) * 1000


MODES = ("lexical", "semantic", "hybrid")


# The server settings wait_for_embeddings needs: the backlog is a /metrics gauge, not in /readyz.
SEMANTIC_ENV = {"MEMORY_BANK_METRICS_ENABLED": "true"}


def wait_for_embeddings(client: httpx.Client, limit_s: float = 3600) -> None:
    """Wait until the server's worker has embedded every saved memory (SEMANTIC_ENV on)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        r = client.get("/metrics")
        r.raise_for_status()
        found = re.search(r"^memory_bank_embeddings_pending (\S+)$", r.text, re.MULTILINE)
        if found is None:
            raise RuntimeError(
                "no memory_bank_embeddings_pending in /metrics: semantic search off?"
            )
        if float(found.group(1)) == 0:
            return
        time.sleep(0.5)
    raise RuntimeError("embeddings still pending")


def run_modes(
    convs: list[Conversation], database_url: str, model: str = "local"
) -> dict[str, Scores]:
    """Save every turn to a server with semantic search on (the local model unless told), let
    its worker embed them, then ask every question in each mode."""
    keys = {c.sample_id: common.make_key(database_url, f"locomo-{c.sample_id}") for c in convs}
    by_id: dict[str, str] = {}
    out: dict[str, Scores] = {}
    with (
        common.serve(database_url, env={**SEMANTIC_ENV, "MEMORY_BANK_EMBEDDINGS": model}) as server,
        httpx.Client(base_url=server.base_url, timeout=60) as client,
    ):
        for conv in convs:
            headers = {"Authorization": f"Bearer {keys[conv.sample_id]}"}
            for turn in conv.turns:
                r = client.post("/v1/memory", json=turn.body, headers=headers)
                r.raise_for_status()
                by_id[r.json()["memory"]["id"]] = turn.dia_id
        wait_for_embeddings(client)
        for mode in MODES:

            def search(user: str, question: str, mode: str = mode) -> list[str]:
                headers = {"Authorization": f"Bearer {keys[user]}"}
                params = {"q": question, "limit": LIMIT, "mode": mode}
                r = client.get("/v1/memory/search", params=params, headers=headers)
                r.raise_for_status()
                assert r.json()["mode"] == mode
                return [by_id[m["id"]] for m in r.json()["results"]]

            out[mode] = evaluate(convs, search)
    return out


def print_modes(scores: dict[str, Scores], v0: Scores | None) -> None:
    """Recall@10 / hit@10 per category, each mode side by side (and v0's FULLTEXT)."""
    cols = dict(scores) | ({"OpenWork v0": v0} if v0 else {})
    print(f"{'category':<14}{'n':>5}  " + "".join(f"{name + ' R/H@10':>22}" for name in cols))
    for cat, name in CATEGORIES.items():
        n = next(iter(cols.values())).row(cat)[2]
        cells = "".join(f"{s.row(cat)[0]:>15.3f} / {s.row(cat)[1]:.3f}" for s in cols.values())
        print(f"{cat} {name:<12}{n:>5}  {cells}")
    n = sum(next(iter(cols.values())).count.values())
    cells = "".join(f"{s.overall()[0]:>15.3f} / {s.overall()[1]:.3f}" for s in cols.values())
    print(f"{'overall':<14}{n:>5}  {cells}")


# --- OpenWork v0: one FULLTEXT index over content, filtered by user ----------------------------


V0_TABLE = """
CREATE TABLE v0_memory (
  id VARCHAR(32) PRIMARY KEY,
  user_id VARCHAR(128) NOT NULL,
  content MEDIUMTEXT NOT NULL,
  KEY ix_user (user_id),
  FULLTEXT KEY ft_content (content)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""
V0_SEARCH = """
SELECT id, MATCH(content) AGAINST(%s IN NATURAL LANGUAGE MODE) AS score
FROM v0_memory
WHERE user_id = %s AND MATCH(content) AGAINST(%s IN NATURAL LANGUAGE MODE)
ORDER BY score DESC LIMIT %s
"""


def run_v0(convs: list[Conversation]) -> Scores:
    """OpenWork v0's search SQL over the same memories' content on MariaDB."""
    url = common.create_database("mb_bench_locomo_v0", drop=True)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(V0_TABLE)
        for conv in convs:
            rows = [
                (f"{conv.sample_id}/{t.dia_id}", conv.sample_id, t.body["content"])
                for t in conv.turns
            ]
            conn.exec_driver_sql("INSERT INTO v0_memory VALUES (%s, %s, %s)", rows)
    with engine.connect() as conn:

        def search(user: str, question: str) -> list[str]:
            rows = conn.exec_driver_sql(V0_SEARCH, (question, user, question, LIMIT)).all()
            return [r[0].split("/", 1)[1] for r in rows]

        scores = evaluate(convs, search)
    engine.dispose()
    return scores


# --- ablation, in-process ----------------------------------------------------------------------


@contextmanager
def patched(obj: Any, **values: Any) -> Iterator[None]:
    """Temporarily set module attributes (for the ablation only)."""
    old = {k: getattr(obj, k) for k in values}
    for k, v in values.items():
        setattr(obj, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(obj, k, v)


@dataclass(frozen=True)
class Saved:
    """A turn saved in-process as its conversation's memory."""

    user: str
    turn: Turn
    memory_id: str
    content: str
    tags: list[str]
    snippets: list[str]


def insert_turns(conn: sa.Connection, convs: list[Conversation]) -> Iterator[Saved]:
    """Save every turn through the storage layer, each conversation as its own user."""
    from memory_bank.search.document import postings_of
    from memory_bank.store import memories as store
    from memory_bank.store import memory_writes
    from memory_bank.store.owners import Owner

    for conv in convs:
        owner = Owner(conv.sample_id, None, "benchmark")
        for t in conv.turns:
            ctxs = [
                store.NewContext(c["snippet"], c["conversation_id"], c["message_id"], None)
                for c in t.body.get("contexts", [])
            ]
            content, tags = t.body["content"], t.body.get("tags", [])
            snippets = [c.snippet for c in ctxs]
            row = memory_writes.insert_memory(
                conn, owner, content, tags, ctxs, postings_of(content, tags, snippets)
            )
            yield Saved(conv.sample_id, t, row.id, content, tags, snippets)


def run_direct(convs: list[Conversation]) -> Scores:
    """Save and search through the storage layer on a fresh SQLite file (same code as HTTP)."""
    from memory_bank.search import index
    from memory_bank.store.engine import make_engine, reading, writing
    from memory_bank.store.migrate import migrate

    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/locomo.db")
        migrate(engine)
        by_id: dict[str, str] = {}

        def save_all(conn: sa.Connection) -> None:
            for saved in insert_turns(conn, convs):
                by_id[saved.memory_id] = saved.turn.dia_id

        writing(engine, save_all)
        with reading(engine) as conn:
            scores = evaluate(
                convs,
                lambda user, q: [by_id[m] for m, _ in index.search(conn, user, q, LIMIT)],
            )
        engine.dispose()
    return scores


def ablation(path: Path) -> list[tuple[str, float, float]]:
    """Recall@10 of each variant; every step keeps the changes above it."""
    from memory_bank.search import analyzer, document, index

    plain = {"date_in_content": False, "tags": False, "contexts": False}
    no_q: frozenset[str] = frozenset()
    steps: list[tuple[str, dict[str, bool], dict[str, Any], dict[str, Any]]] = [
        ("BM25, content only, no query-side question words", plain, {"QUESTION_WORDS": no_q}, {}),
        ("+ query-side question words dropped", plain, {}, {}),
        ("+ tags: speaker, session date", {**plain, "tags": True}, {}, {}),
        (
            "+ neighbouring turns as contexts, indexed at weight 1 vs 3",
            {**plain, "tags": True, "contexts": True},
            {},
            {},
        ),
        (
            "  contexts saved but not indexed",
            {**plain, "tags": True, "contexts": True},
            {},
            {"CONTEXT_WEIGHT": 0},
        ),
        (
            "  contexts indexed at equal weight (1:1)",
            {**plain, "tags": True, "contexts": True},
            {},
            {"CONTENT_WEIGHT": 1, "TAG_WEIGHT": 1},
        ),
        (
            "  contexts at weight 1 vs 2",
            {**plain, "tags": True, "contexts": True},
            {},
            {"CONTENT_WEIGHT": 2, "TAG_WEIGHT": 2},
        ),
        (
            "  contexts at weight 1 vs 5",
            {**plain, "tags": True, "contexts": True},
            {},
            {"CONTENT_WEIGHT": 5, "TAG_WEIGHT": 5},
        ),
        (
            "  BM25 b=0.5",
            {**plain, "tags": True, "contexts": True},
            {},
            {"B": 0.5},
        ),
        (
            "  BM25 k1=1.6",
            {**plain, "tags": True, "contexts": True},
            {},
            {"K1": 1.6},
        ),
    ]
    out = []
    for name, save, analyzer_patch, index_patch in steps:
        weights = {k: v for k, v in index_patch.items() if hasattr(document, k)}
        ranking = {k: v for k, v in index_patch.items() if k not in weights}
        with (
            patched(analyzer, **analyzer_patch),
            patched(document, **weights),
            patched(index, **ranking),
        ):
            recall, hit = run_direct(load(path, **save)).overall()
        print(f"{recall:.3f}  {hit:.3f}  {name}", flush=True)
        out.append((name, recall, hit))
    return out


def print_table(ours: Scores, v0: Scores | None) -> None:
    """The side-by-side table of both strategies."""
    print(f"{'category':<14}{'n':>5}  {'ours R@10':>10}{'ours H@10':>10}", end="")
    print(f"{'v0 R@10':>10}{'v0 H@10':>10}" if v0 else "")
    for cat, name in CATEGORIES.items():
        r, h, n = ours.row(cat)
        print(f"{cat} {name:<12}{n:>5}  {r:>10.3f}{h:>10.3f}", end="")
        print(f"{v0.row(cat)[0]:>10.3f}{v0.row(cat)[1]:>10.3f}" if v0 else "")
    r, h = ours.overall()
    n = sum(ours.count.values())
    print(f"{'overall':<14}{n:>5}  {r:>10.3f}{h:>10.3f}", end="")
    print(f"{v0.overall()[0]:>10.3f}{v0.overall()[1]:>10.3f}" if v0 else "")


def org_half(convs: list[Conversation], engine: str) -> int:
    """Recall@10 with everything personal vs half of each conversation saved to an org."""
    print(f"machine speed probe: {common.machine_speed():.0f} ms")
    results = {}
    for name, split in (("all personal", False), ("half in the org", True)):
        with tempfile.TemporaryDirectory() as tmp:
            if engine == "sqlite":
                url = f"sqlite:///{tmp}/locomo.db"
            else:
                url = common.create_database(f"mb_bench_locomo_org{int(split)}", drop=True)
            results[name] = run_http(convs, url, org_half=split)
    print(f"{'memories':<18}{'R@10':>8}{'H@10':>8}{'search p50 ms':>15}")
    for name, (scores, p50) in results.items():
        recall, hit = scores.overall()
        print(f"{name:<18}{recall:>8.3f}{hit:>8.3f}{p50:>15.1f}")
    gap = results["all personal"][0].overall()[0] - results["half in the org"][0].overall()[0]
    print(f"recall@10 difference: {gap:+.4f} (within 0.01: {abs(gap) <= 0.01})")
    return 0


def _new_master_key() -> str:
    """A random master key in its setting's form."""
    return base64.b64encode(secrets.token_bytes(32)).decode()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("MEMORY_BANK_LOCOMO", DEFAULT_DATA)),
        help="locomo-dev5.json (default ../shared/datasets/locomo/ next to the repository; "
        "or MEMORY_BANK_LOCOMO)",
    )
    parser.add_argument(
        "--engine", choices=["sqlite", "mariadb"], default="sqlite", help="our server's database"
    )
    parser.add_argument("--no-v0", action="store_true", help="skip OpenWork v0's FULLTEXT")
    parser.add_argument(
        "--encrypted", action="store_true", help="our server with encryption at rest on"
    )
    parser.add_argument("--ablation", action="store_true", help="print the ablation table")
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="semantic search on (local model): lexical, semantic and hybrid side by side",
    )
    parser.add_argument(
        "--org-half",
        action="store_true",
        help="save every other turn to the user's org and compare with all personal",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help=f"only the conversations outside the tuning split ({', '.join(sorted(TUNE_CONVS))})",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="plain protocol: each turn tagged with its session, the session as its one context "
        "(no neighbouring turns)",
    )
    parser.add_argument(
        "--model", default="local", help="with --semantic: MEMORY_BANK_EMBEDDINGS (default local)"
    )
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"dataset not found: {args.data} (use --data or MEMORY_BANK_LOCOMO)")
        return 2
    if args.ablation:
        ablation(args.data)
        return 0
    convs = load(args.data, plain=args.plain, held_out=args.held_out)
    print(
        f"LoCoMo {args.data.name}{' held out' if args.held_out else ''}"
        f"{', plain protocol' if args.plain else ''}: {len(convs)} conversations, "
        f"{sum(len(c.turns) for c in convs)} memories, "
        f"{sum(len(c.questions) for c in convs)} questions (categories 1-4)"
    )
    if args.org_half:
        return org_half(convs, args.engine)
    if args.semantic:
        with tempfile.TemporaryDirectory() as tmp:
            if args.engine == "sqlite":
                url = f"sqlite:///{tmp}/locomo.db"
            else:
                url = common.create_database("mb_bench_locomo_semantic", drop=True)
            modes = run_modes(convs, url, args.model)
        print(
            f"memory-bank over HTTP on {args.engine}, MEMORY_BANK_EMBEDDINGS={args.model}; "
            "v0: MariaDB FULLTEXT natural-language mode filtered by user"
        )
        print_modes(modes, None if args.no_v0 else run_v0(convs))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.engine == "sqlite":
            url = f"sqlite:///{tmp}/locomo.db"
        else:
            url = common.create_database("mb_bench_locomo", drop=True)
        # A throw-away master key: the same figures must come out (docs/security.md).
        env = {"MEMORY_BANK_MASTER_KEY": _new_master_key()} if args.encrypted else None
        ours, p50 = run_http(convs, url, env=env)
    v0 = None if args.no_v0 else run_v0(convs)
    print(
        f"ours: memory-bank over HTTP on {args.engine}"
        f"{', encrypted at rest' if args.encrypted else ''} (search p50 {p50:.1f} ms); "
        "v0: MariaDB FULLTEXT natural-language mode filtered by user"
    )
    print_table(ours, v0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
