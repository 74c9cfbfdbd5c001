"""Fusion ablation: BM25, dense, RRF, fixed blends and the adaptive blend on two kinds of question.

LoCoMo (questions mostly reuse the turns' words; recall@10 over evidence turns; neighbouring
turns as contexts, or `--plain`) and the two paraphrase sets (benchmarks/paraphrase.py: pairs
that share no content word after stemming; set a among LoCoMo turns, set b among its own
near-miss distractors; hit@5). Runs in-process on SQLite with the same index, analyzer, model
and fusion code as the server: every question's candidates are computed once, then each fusion
variant ranks them.

Tuning split: LoCoMo conversations conv-26, conv-30, conv-41, set a's even-numbered pairs and
set b's 'tune' pairs; held out: conv-42, conv-43, set a's odd pairs and set b's 'holdout' pairs.
`--tune-only` builds and asks the tuning split alone (every pair's memory is still saved), so a
sweep cannot look at held-out data. `--grid` prints the sweep over the tuning split.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo
import paraphrase

TUNE_CONVS = locomo.TUNE_CONVS
USERS = {"a": "paraphrase", "b": "paraphrase-b"}
POOL = 200  # candidates kept per side for every variant


def calibrated() -> Any:
    """The curves the blends score with (any monotone curve keeps a blend's order)."""
    from memory_bank.search import calibration

    return calibration.for_model(None)


EMBED_CONTEXTS = True


@dataclass
class Question:
    """One question's candidates: BM25 top POOL, every memory's cosine, and coverage."""

    kind: str  # "locomo" or "paraphrase"
    tune: bool
    expected: set[str]
    lexical: list[tuple[str, float]]
    cosine: dict[str, float]
    coverage: float
    category: int = 0
    attainable: float = 0.0  # the query's attainable BM25 (search.fusion.attainable)
    query: str = ""
    # The share of the query's terms each lexical candidate holds (search.index.shares).
    shares: dict[str, float] = field(default_factory=dict)
    coverage_terms: float = 0.0  # the largest share among the best 3 BM25 hits
    # The query's unit vector (float32), for evidence that reads the query alone.
    vector: np.ndarray | None = None
    # Every memory's unit vector (float16) of the user asked, by label: one dict shared by the
    # user's questions (and pickled once), for evidence that reads a (query, memory) pair.
    memories: dict[str, np.ndarray] | None = None


@dataclass
class Variant:
    """A named ranking of a question's candidates."""

    name: str
    rank: Callable[[Question, int], list[str]]
    note: str = ""


def _dense(q: Question, n: int) -> list[tuple[str, float]]:
    """The n best memories by cosine."""
    return sorted(q.cosine.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:n]


def bm25(q: Question, limit: int) -> list[str]:
    """BM25 alone."""
    return [m for m, _ in q.lexical[:limit]]


def dense(q: Question, limit: int) -> list[str]:
    """Cosine alone."""
    return [m for m, _ in _dense(q, limit)]


def rrf(k: int = 60, n: int = 50) -> Callable[[Question, int], list[str]]:
    """Reciprocal rank fusion of both top-n lists."""

    def rank(q: Question, limit: int) -> list[str]:
        score: dict[str, float] = {}
        for ranked in (q.lexical[:n], _dense(q, n)):
            for pos, (m, _) in enumerate(ranked):
                score[m] = score.get(m, 0.0) + 1.0 / (k + pos + 1)
        return [m for m, _ in sorted(score.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)][
            :limit
        ]

    return rank


def blend(covered: float, uncovered: float, n: int = 100) -> Callable[[Question, int], list[str]]:
    """The shipped fusion (search/fusion.py) with these weights (linear in coverage from 0 to
    1); covered == uncovered is a fixed blend."""
    from memory_bank.search import fusion

    return blend_of(fusion.Blend(covered, uncovered, 0.0, 1.0, n))


def blend_of(b: Any, against_attainable: bool = True) -> Callable[[Question, int], list[str]]:
    """The shipped fusion with these settings (a search.fusion.Blend); BM25 read against the
    query's attainable score as the server does, or against the best hit alone (the fusion
    before 7 December 2026)."""
    from memory_bank.search import fusion

    def rank(q: Question, limit: int) -> list[str]:
        fused = fusion.fuse(
            q.lexical[: b.candidates],
            _dense(q, b.candidates),
            q.cosine,
            b.dense_weight(q.coverage),
            limit,
            q.attainable if against_attainable else 0.0,
            calibrated(),
        )
        return [m for m, _ in fused]

    return rank


def agreement(b: Any) -> Callable[[Question, int], list[str]]:
    """The adaptive blend with coverage lowered when BM25's best hits are far from the best
    cosine (a variant that was tried, not kept: it trades LoCoMo recall for paraphrases)."""
    from memory_bank.search import fusion

    def rank(q: Question, limit: int) -> list[str]:
        dense = _dense(q, b.candidates)
        near = max((q.cosine.get(m, 0.0) for m, _ in q.lexical[:3]), default=0.0)
        delta = max(dense[0][1] - near - 0.1, 0.0) if dense else 0.0
        fused = fusion.fuse(
            q.lexical[: b.candidates],
            dense,
            q.cosine,
            b.dense_weight(q.coverage - delta),
            limit,
            q.attainable,
            calibrated(),
        )
        return [m for m, _ in fused]

    return rank


@dataclass
class Result:
    """A variant's figures on each split."""

    locomo: dict[str, float] = field(default_factory=dict)
    paraphrase: dict[str, float] = field(default_factory=dict)
    paraphrase_b: dict[str, float] = field(default_factory=dict)


def score(questions: Sequence[Question], rank: Callable[[Question, int], list[str]]) -> Result:
    """LoCoMo recall@10 and paraphrase hit@5 (sets a and b), on the tuning split, held out, and
    all."""
    out = Result()
    for kind in ("locomo", "paraphrase", "paraphrase-b"):
        for split, keep in (("tune", True), ("held-out", False), ("all", None)):
            chosen = [q for q in questions if q.kind == kind and (keep is None or q.tune == keep)]
            total = 0.0
            for q in chosen:
                if kind == "locomo":
                    top = set(rank(q, 10))
                    total += len(q.expected & top) / len(q.expected)
                else:
                    total += 1.0 if q.expected & set(rank(q, 5)) else 0.0
            share = total / len(chosen) if chosen else float("nan")
            if kind == "paraphrase-b":
                out.paraphrase_b[split] = share
            else:
                getattr(out, kind)[split] = share
    return out


def build(
    data: Path,
    model: str,
    plain: bool = False,
    tune_only: bool = False,
    unanswerable: bool = False,
    conversations: set[str] | None = None,
) -> list[Question]:
    """Save every set in-process and compute every question's candidates once (plain: LoCoMo
    under the plain protocol; tune_only: the tuning split's conversations and questions only;
    unanswerable: the questions with no answer too, see unanswerable_asks; conversations: these
    LoCoMo conversations alone, without the paraphrase sets)."""
    from memory_bank.models.embeddings import embed_text
    from memory_bank.models.local_model import load as load_model
    from memory_bank.search import fusion, index
    from memory_bank.search.document import postings_of
    from memory_bank.store import memory_writes
    from memory_bank.store.engine import make_engine, reading, writing
    from memory_bank.store.migrate import migrate
    from memory_bank.store.owners import Owner

    provider = load_model(model)
    convs = [
        c
        for c in locomo.load(data, plain=plain)
        if (not tune_only or c.sample_id in TUNE_CONVS)
        and (conversations is None or c.sample_id in conversations)
    ]
    sets = {which: paraphrase.load(which) for which in ("a", "b")} if conversations is None else {}
    questions: list[Question] = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/fusion.db")
        migrate(engine)
        label: dict[str, str] = {}
        texts: dict[str, dict[str, str]] = {}

        def save(conn: Any) -> None:
            for saved in locomo.insert_turns(conn, convs):
                label[saved.memory_id] = saved.turn.dia_id
                texts.setdefault(saved.user, {})[saved.memory_id] = embed_text(
                    saved.content, saved.snippets if EMBED_CONTEXTS else []
                )
            # Each set for its own user: every distractor and every pair's memory (both halves).
            for which, (pairs, _, distractors) in sets.items():
                user = USERS[which]
                owner = Owner(user, None, "benchmark")
                for k, content in enumerate(distractors):
                    row = memory_writes.insert_memory(
                        conn, owner, content, [], [], postings_of(content, [])
                    )
                    label[row.id] = f"{which}-distractor-{k}"
                    texts.setdefault(user, {})[row.id] = content
                for i, (memory, _) in enumerate(pairs):
                    row = memory_writes.insert_memory(
                        conn, owner, memory, [], [], postings_of(memory, [])
                    )
                    label[row.id] = f"{which}-pair-{i}"
                    texts[user][row.id] = memory

        writing(engine, save)
        matrices: dict[str, tuple[list[str], np.ndarray]] = {}
        vectors: dict[str, dict[str, np.ndarray]] = {}
        started = time.perf_counter()
        for user, by_id in texts.items():
            ids = list(by_id)
            matrices[user] = (ids, provider.embed([by_id[i] for i in ids]))
            half = matrices[user][1].astype(np.float16)
            vectors[user] = {label[m]: row for m, row in zip(ids, half, strict=True)}
        print(
            f"embedded {sum(len(t) for t in texts.values())} memories in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        asked = [
            (conv.sample_id, question, {*evidence}, "locomo", conv.sample_id in TUNE_CONVS, cat)
            for conv in convs
            for question, cat, evidence in conv.questions
        ]
        for which, (pairs, splits, _) in sets.items():
            kind = "paraphrase" if which == "a" else "paraphrase-b"
            for i, (_, question) in enumerate(pairs):
                if tune_only and splits[i] != "tune":
                    continue
                expected = {f"{which}-pair-{i}"}
                asked.append((USERS[which], question, expected, kind, splits[i] == "tune", 0))
        asked = [(*a, "") for a in asked]
        if unanswerable:
            asked += unanswerable_asks(convs, sets, tune_only)
        with reading(engine) as conn:
            for user, question, expected, kind, tune, cat, drop in asked:
                ranking = index.rank(conn, user, question, POOL)
                coverage = index.coverage(conn, user, ranking)
                held = index.shares(conn, user, ranking, [m for m, _ in ranking.hits])
                ids, rows = matrices[user]
                asked_vector = provider.embed([question])[0]
                cos = rows @ asked_vector
                kept = {m for m in ids if not (drop and label[m].startswith(drop))}
                questions.append(
                    Question(
                        kind,
                        tune,
                        expected,
                        [(label[m], s) for m, s in ranking.hits if m in kept],
                        {label[m]: float(c) for m, c in zip(ids, cos, strict=True) if m in kept},
                        coverage,
                        cat,
                        fusion.attainable(ranking.weights),
                        question,
                        {label[m]: v for m, v in held.items() if m in kept},
                        max((held[m] for m, _ in ranking.hits[:3]), default=0.0),
                        asked_vector,
                        vectors[user],
                    )
                )
        engine.dispose()
    return questions


UNANSWERABLE = Path(__file__).resolve().parent / "data" / "unanswerable.json"


def unanswerable_asks(
    convs: Sequence[Any], sets: dict[str, Any], tune_only: bool
) -> list[tuple[str, str, set[str], str, bool, int, str]]:
    """The questions with no answer (expected empty), each with its split and the labels its
    user is asked without (a label prefix; "" keeps all):

    - "none": benchmarks/data/unanswerable.json (written before tuning; even index tunes), asked
      of each paraphrase user and of every LoCoMo conversation's user;
    - "none-paraphrase": each paraphrase question asked of its user without the set's pairs (the
      unrelated memories only; the pairs' split);
    - "none-locomo": each LoCoMo question asked of another conversation's user of its split.
    """
    import json

    out: list[tuple[str, str, set[str], str, bool, int, str]] = []
    written = json.loads(UNANSWERABLE.read_text())["questions"]
    users = [*USERS.values(), *(c.sample_id for c in convs)]
    for i, item in enumerate(written):
        if tune_only and i % 2:
            continue
        out += [(u, item["q"], set(), "none", i % 2 == 0, 0, "") for u in users]
    for which, (pairs, splits, _) in sets.items():
        for i, (_, question) in enumerate(pairs):
            if tune_only and splits[i] != "tune":
                continue
            tune = splits[i] == "tune"
            out.append(
                (USERS[which], question, set(), "none-paraphrase", tune, 0, f"{which}-pair-")
            )
    for split in (True, False):
        ring = [c for c in convs if (c.sample_id in TUNE_CONVS) == split]
        for k, conv in enumerate(ring):
            other = ring[(k + 1) % len(ring)]
            if other is conv:
                continue
            out += [
                (other.sample_id, q, set(), "none-locomo", split, cat, "")
                for q, cat, _ in conv.questions
            ]
    return out


def variants(model: str) -> list[Variant]:
    """The ablation rows."""
    from memory_bank.search.fusion import BLEND

    return [
        Variant("BM25 (lexical)", bm25),
        Variant("dense cosine (semantic)", dense, f"{model} int8"),
        Variant("RRF k=60 over both top-50", rrf()),
        Variant("fixed blend w=0.45", blend(0.45, 0.45), "tuned on LoCoMo in the issue"),
        Variant("fixed blend w=0.70", blend(0.70, 0.70)),
        Variant(
            "  adaptive + cosine agreement (not kept)",
            agreement(BLEND),
            "coverage lowered by (top cosine - best BM25 hit's cosine - 0.1)",
        ),
        Variant(
            "adaptive blend, BM25 over its best hit (before)",
            blend_of(BLEND, against_attainable=False),
            "the fusion until 7 December 2026",
        ),
        Variant(
            "adaptive blend, BM25 over the attainable score (shipped)",
            blend_of(BLEND),
            f"w = {BLEND.dense_when_uncovered} up to coverage {BLEND.low}, "
            f"{BLEND.dense_when_covered} from {BLEND.high}; top-{BLEND.candidates} each",
        ),
    ]


def plot(questions: Sequence[Question], rows: Sequence[Variant], path: Path) -> None:
    """The three tuning-split figures of each variant, as grouped bars (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = [score(questions, v.rank) for v in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(9, 4.4))
    ax.bar(x - 0.27, [s.locomo["tune"] for s in scores], 0.27, label="LoCoMo tune recall@10")
    ax.bar(x, [s.paraphrase["tune"] for s in scores], 0.27, label="paraphrase a tune hit@5")
    ax.bar(
        x + 0.27, [s.paraphrase_b["tune"] for s in scores], 0.27, label="paraphrase b tune hit@5"
    )
    ax.axhline(0.77, color="C0", linestyle=":", linewidth=1)
    ax.axhline(0.92, color="C1", linestyle=":", linewidth=1)
    ax.set_xticks(x, [textwrap.fill(v.name.strip(), 16) for v in rows], fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_title("Fusion ablation (dotted: the issue's targets)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def print_table(questions: Sequence[Question], rows: Sequence[Variant]) -> None:
    """The ablation table, markdown ("-": that split was not built)."""
    print(
        "| variant | LoCoMo R@10 tune | held-out | paraphrase a H@5 tune | held-out | "
        "paraphrase b H@5 tune | held-out |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for v in rows:
        r = score(questions, v.rank)
        print(
            f"| {v.name} | "
            + " | ".join(
                "-" if math.isnan(part[split]) else f"{part[split]:.3f}"
                for part in (r.locomo, r.paraphrase, r.paraphrase_b)
                for split in ("tune", "held-out")
            )
            + " |"
        )


def grid(questions: Sequence[Question]) -> None:
    """The sweep, on the tuning split: best first by the lower of the three targets' shares
    (LoCoMo 0.77, each paraphrase set 0.92), then by their sum."""
    from memory_bank.search.fusion import Blend

    results = []
    for low, high in ((0.0, 1.0), (0.1, 0.8), (0.2, 0.5), (0.2, 0.7), (0.3, 0.7), (0.4, 0.6)):
        for covered in (0.3, 0.35, 0.4, 0.45, 0.5, 0.55):
            for uncovered in (0.7, 0.8, 0.9, 1.0):
                for n in (50, 100, 200):
                    b = Blend(covered, uncovered, low, high, n)
                    results.append((b, score(questions, blend_of(b))))

    def merit(r: Result) -> tuple[float, float]:
        shares = (
            r.locomo["tune"] / 0.77,
            r.paraphrase["tune"] / 0.92,
            r.paraphrase_b["tune"] / 0.92,
        )
        return (min(shares), sum(shares))

    results.sort(key=lambda item: merit(item[1]), reverse=True)
    print(
        "| covered w | uncovered w | low | high | candidates | LoCoMo R@10 tune | "
        "paraphrase a H@5 tune | paraphrase b H@5 tune |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b, r in results[:15]:
        print(
            f"| {b.dense_when_covered} | {b.dense_when_uncovered} | {b.low} | {b.high} | "
            f"{b.candidates} | {r.locomo['tune']:.3f} | {r.paraphrase['tune']:.3f} | "
            f"{r.paraphrase_b['tune']:.3f} |"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the ablation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--grid", action="store_true", help="print the tuning sweep too")
    parser.add_argument("--plain", action="store_true", help="LoCoMo under the plain protocol")
    parser.add_argument(
        "--tune-only", action="store_true", help="build and ask the tuning split alone"
    )
    parser.add_argument("--cache", type=Path, help="keep the candidates in this pickle")
    parser.add_argument("--plot", type=Path, help="write the ablation plot here")
    parser.add_argument(
        "--model", default="", help="local model (default: what MEMORY_BANK_EMBEDDINGS=local runs)"
    )
    args = parser.parse_args(argv)
    from memory_bank.models.embeddings import DEFAULT_LOCAL

    model = args.model or DEFAULT_LOCAL
    import pickle

    if args.cache and args.cache.exists():
        questions = pickle.loads(args.cache.read_bytes())
    else:
        questions = build(args.data, model, args.plain, args.tune_only)
        if args.cache:
            args.cache.write_bytes(pickle.dumps(questions))
    n_lo = sum(q.kind == "locomo" for q in questions)
    n_a = sum(q.kind == "paraphrase" for q in questions)
    n_b = sum(q.kind == "paraphrase-b" for q in questions)
    print(
        f"{n_lo} LoCoMo questions ({'plain' if args.plain else 'neighbouring turns'}), "
        f"{n_a} + {n_b} paraphrase questions (sets a, b); "
        f"machine speed probe {common.machine_speed():.0f} ms"
    )
    print_table(questions, variants(model))
    if args.plot:
        plot(questions, variants(model), args.plot)
    if args.grid:
        grid(questions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
