"""Fresh trust checks over HTTP: benchmarks/data/trust_c.json and _d, written blind, not tuned on.

One fictional user saves the set's 150 memories through the REST API of a server in its
default settings (hybrid mode, the default floor) with the model told (`--model`, `local`
unless told), and waits for every vector. Then each question is asked twice, as an agent asks
it (no `min_score`: the default floor) and with `min_score=0` (the ranking's top 10 with their
scores). Printed per split (the set's halves were fixed when it was written; nothing here was
tuned on either) and for all: abstention (unanswerable questions answered `[]` at the default
floor), hit@5 at the default floor and with none, the ROC AUC of the top result's score
(answerable against unanswerable, at `min_score=0`), and abstention and hit@5 at other floors,
read from the `min_score=0` answers (a score does not depend on the floor; the run checks that
the default floor's answer is the `min_score=0` answer cut at the floor).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import locomo

DATA = Path(__file__).resolve().parent / "data" / "trust_c.json"
# A second set by another blind helper: another person, and half the English answerable
# questions share one ordinary word with their answer (`shares_word`), as real questions do.
SETS = {"c": DATA, "d": DATA.with_name("trust_d.json")}
RESULTS = common.REPO / "benchmarks" / "results"
FLOORS = (0.1, 0.2, 0.3, 0.4, 0.5)
LIMIT = 10
LANGS = ("en", "de", "fr", "es")


@dataclass
class Asked:
    """One question's answers: the default floor's ids, and min_score=0's (id, score) pairs."""

    q: str
    lang: str
    split: str
    kind: str  # "answerable", or the unanswerable question's kind ("near", "far")
    answer: set[str]
    floored: list[str]
    ranked: list[tuple[str, float]]


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """ROC AUC: the chance an answerable question's top score beats an unanswerable one's."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def run(url: str, model: str, data_path: Path = DATA) -> list[Asked]:
    """Save the set for one user and ask every question both ways."""
    data = json.loads(data_path.read_text())
    key = common.make_key(url, "trust-c")
    asked: list[Asked] = []
    with (
        common.serve(url, env={**locomo.SEMANTIC_ENV, "MEMORY_BANK_EMBEDDINGS": model}) as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client,
    ):
        ids: dict[str, str] = {}
        for m in data["memories"]:
            r = client.post("/v1/memory", json={"content": m["content"]})
            r.raise_for_status()
            ids[r.json()["memory"]["id"]] = m["id"]
        locomo.wait_for_embeddings(client)
        # An English question that shares a word with its answer is its own kind of answerable.
        questions = [
            (x, "answerable" + ("+word" if x.get("shares_word") else ""), set(x["answer"]))
            for x in data["answerable"]
        ]
        questions += [(x, x["kind"], set()) for x in data["unanswerable"]]
        for x, kind, answer in questions:
            base = {"q": x["q"], "limit": LIMIT}
            r = client.get("/v1/memory/search", params=base)
            r.raise_for_status()
            floored = [ids[m["id"]] for m in r.json()["results"]]
            r = client.get("/v1/memory/search", params={**base, "min_score": 0})
            r.raise_for_status()
            ranked = [(ids[m["id"]], float(m["score"])) for m in r.json()["results"]]
            asked.append(Asked(x["q"], x["lang"], x["split"], kind, answer, floored, ranked))
    return asked


def figures(asked: Sequence[Asked], floor: float | None) -> dict[str, float]:
    """Abstention, hit@5 and the AUC; floor None reads the server's default floor's answers."""

    def kept(a: Asked) -> list[str]:
        if floor is None:
            return a.floored
        return [m for m, s in a.ranked if s >= floor]

    answerable = [a for a in asked if a.kind.startswith("answerable")]
    unanswerable = [a for a in asked if not a.kind.startswith("answerable")]
    top = [a.ranked[0][1] if a.ranked else 0.0 for a in answerable]
    none = [a.ranked[0][1] if a.ranked else 0.0 for a in unanswerable]
    out = {
        "n_answerable": len(answerable),
        "n_unanswerable": len(unanswerable),
        "abstention": sum(not kept(a) for a in unanswerable) / max(len(unanswerable), 1),
        "hit@5": sum(bool(a.answer & set(kept(a)[:5])) for a in answerable)
        / max(len(answerable), 1),
        "auc": auc(top, none),
    }
    for kind in sorted({a.kind for a in unanswerable}):
        part = [a for a in unanswerable if a.kind == kind]
        out[f"abstention {kind}"] = sum(not kept(a) for a in part) / len(part)
    for kind in sorted({a.kind for a in answerable}):
        mine = [a for a in answerable if a.kind == kind and a.lang == "en"]
        out[f"hit@5 {kind}"] = sum(bool(a.answer & set(kept(a)[:5])) for a in mine) / len(mine)
    for lang in sorted({a.lang for a in asked}):
        mine = [a for a in answerable if a.lang == lang]
        out[f"hit@5 {lang}"] = sum(bool(a.answer & set(kept(a)[:5])) for a in mine) / len(mine)
        mine = [a for a in unanswerable if a.lang == lang]
        out[f"abstention {lang}"] = sum(not kept(a) for a in mine) / len(mine)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run, check the floor's cut, print the table and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["sqlite", "mariadb"], default="sqlite")
    parser.add_argument("--model", default="local", help="MEMORY_BANK_EMBEDDINGS (default local)")
    parser.add_argument("--label", default="", help="a name for the results file")
    parser.add_argument("--set", choices=sorted(SETS), default="c", help="c: trust_c.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.engine == "sqlite":
            url = f"sqlite:///{tmp}/trust_c.db"
        else:
            url = common.create_database("mb_bench_trust_c", drop=True)
        asked = run(url, args.model, SETS[args.set])
    from memory_bank.search import calibration

    default = calibration.for_model(None).floor
    cut = sum(a.floored != [m for m, s in a.ranked if s >= default] for a in asked)
    print(f"default floor {default}: {cut} of {len(asked)} answers differ from the cut ranking")
    rows: dict[str, dict[str, dict[str, float]]] = {}
    print("| split | floor | abstention | near | far | hit@5 | AUC (min_score=0) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for split in ("tune", "holdout", "all"):
        part = [a for a in asked if split in ("all", a.split)]
        for floor in (None, 0.0, *FLOORS):
            f = figures(part, floor)
            name = f"default ({default})" if floor is None else str(floor)
            rows.setdefault(split, {})[name] = f
            print(
                f"| {split} | {name} | {f['abstention']:.3f} | {f.get('abstention near', 0):.3f}"
                f" | {f.get('abstention far', 0):.3f} | {f['hit@5']:.3f} | {f['auc']:.3f} |"
            )
    print("\nBy the question's language (the memories are English), all questions:")
    print("| floor | " + " | ".join(f"{x} hit@5 / abstention" for x in LANGS) + " |")
    print("|---|" + "---:|" * len(LANGS))
    for name, f in rows["all"].items():
        cells = [f"{f[f'hit@5 {x}']:.3f} / {f[f'abstention {x}']:.3f}" for x in LANGS]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if any(a.kind == "answerable+word" for a in asked):
        print("\nhit@5, English questions sharing one word with their answer / sharing none:")
        for name, f in rows["all"].items():
            print(f"| {name} | {f['hit@5 answerable+word']:.3f} | {f['hit@5 answerable']:.3f} |")
    RESULTS.mkdir(exist_ok=True)
    name = f"trust-{args.set}-{args.engine}{'-' + args.label if args.label else ''}.json"
    (RESULTS / name).write_text(
        json.dumps(
            {
                "command": "python benchmarks/trust_c.py " + " ".join(argv or sys.argv[1:]),
                "engine": args.engine,
                "model": args.model,
                "figures": rows,
                "asked": [a.__dict__ | {"answer": sorted(a.answer)} for a in asked],
            },
            indent=1,
            ensure_ascii=False,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
