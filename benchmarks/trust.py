"""Search an agent can trust: fits the score calibration and prints the relevance floor's table.

Every question of benchmarks/fusion.py (LoCoMo under the plain protocol, both paraphrase sets)
plus the questions with no answer (fusion.unanswerable_asks: benchmarks/data/unanswerable.json
in four languages, each paraphrase question asked without its set's pairs, each LoCoMo question
asked of another conversation's user) is ranked in-process with the server's index, model and
fusion code. Split by fixed rules: LoCoMo conv-26, conv-30, conv-41 and the paraphrase sets'
tuning pairs tune, the rest is held out; the written questions tune at even index.

`--fit` fits the model's relevance models (search/calibration.py: over the cosine alone, and
read against the query's level among the shipped background, search/background.py, when the
model has one) and the default floor on the tuning half and writes them to
src/memory_bank/search/calibration.json (for HEADS' models with a head's weights beside it; the
ranking's order curves and the hint thresholds are kept); `--levels` compares ways of reading
the cosine against that background on the tuning half; `--heads` compares answerability heads
over the vectors (Question.memories) by cross-validation within the tuning half; `--head L2`
prints the q⊙d head's floor table beside the shipped calibration's; then, or on its own, the
floor table is printed for the held-out half, or with `--half tune` for the tuning half
(abstention: share of unanswerable questions answered with no result in the default hybrid
mode; paraphrase hit@5 and LoCoMo recall@10 with the floor; ROC AUC of the top result's score
at min_score=0, answerable paraphrase questions against unanswerable ones), beside the fusion
before calibration, and written to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import fusion
import locomo
from fusion import Question

RESULTS = common.REPO / "benchmarks" / "results"
CALIBRATION = common.REPO / "src" / "memory_bank" / "search" / "calibration.json"
MODELS = {
    "all-mpnet-base-v2": "local:all-mpnet-base-v2-int8",
    "all-MiniLM-L6-v2": "local:all-MiniLM-L6-v2-int8",
}
FLOORS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
SHOWN = 10  # the results each question's fit looks at, per mode
Ranker = Callable[[Question, int], list[tuple[str, float]]]


def _dense(
    q: Question, n: int, having: Callable[[str], bool] | None = None
) -> list[tuple[str, float]]:
    items = [kv for kv in q.cosine.items() if having is None or having(kv[0])]
    return sorted(items, key=lambda kv: (kv[1], kv[0]), reverse=True)[:n]


def half(label: str) -> bool:
    """Whether a memory's vector is made in the half-made case (a fixed hash of its label)."""
    return zlib.crc32(label.encode()) % 2 == 0


_LEVELS: dict[tuple[int, str], Any] = {}


def level(q: Question, model: str) -> Any:
    """The question's level among the model's shipped background (search/background.py; None
    without one)."""
    from memory_bank.search import background

    key = (id(q), model)
    if key not in _LEVELS:
        _LEVELS[key] = None if q.vector is None else background.level(model, q.vector)
    return _LEVELS[key]


def ranker(
    mode: str, cal: Any, vectors: Callable[[str], bool] | None = None, blend: Any = None
) -> Ranker:
    """The server's ranking of a question's candidates in this mode, with calibrated scores
    (vectors: which memories have a vector, None: all; blend: a search.fusion.Blend, None: the
    shipped one)."""
    from memory_bank.search import fusion as shipped
    from memory_bank.search.calibration import descending

    blend = blend or shipped.BLEND

    def rank(q: Question, limit: int) -> list[tuple[str, float]]:
        if mode == "lexical":
            return descending((m, cal.lexical(q.shares.get(m, 0.0))) for m, _ in q.lexical[:limit])
        dense = _dense(q, blend.candidates, vectors)
        at = level(q, cal.model) if cal.leveled else None
        if mode == "semantic":
            return [(m, cal.meaning(c, at)) for m, c in dense[:limit]]
        cosine = q.cosine if vectors is None else {m: c for m, c in q.cosine.items() if vectors(m)}
        fused = shipped.fuse(
            q.lexical[: blend.candidates],
            dense,
            cosine,
            blend.dense_weight(q.coverage),
            limit,
            q.attainable,
            cal,
            blend.lexical_scale,
        )
        pair = None
        head = cal.head_of(q.vector) if at is not None and q.vector is not None else None
        if head is not None:
            assert q.memories is not None, "candidates built without their vectors"
            pair = {m: float(q.memories[m].astype(np.float32) @ head) for m, _ in fused}
        return shipped.relevance(fused, cosine, q.shares, cal, at, pair)

    return rank


def before(q: Question, limit: int) -> list[tuple[str, float]]:
    """The hybrid fusion before calibration: cosines min-max normalised among the candidates."""
    from memory_bank.search.fusion import BLEND

    w = BLEND.dense_weight(q.coverage)
    bm25 = dict(q.lexical[: BLEND.candidates])
    dense = _dense(q, BLEND.candidates)
    keys = list(dict.fromkeys([k for k in bm25] + [k for k, _ in dense]))
    top = max(max(bm25.values(), default=0.0), q.attainable)
    cos = [q.cosine[k] for k in keys]
    low, high = (min(cos), max(cos)) if cos else (0.0, 0.0)
    out = []
    for k in keys:
        lex = bm25.get(k, 0.0) / top if top > 0 else 0.0
        sem = (q.cosine[k] - low) / (high - low) if high > low else 0.0
        out.append((k, (1 - w) * lex + w * sem))
    out.sort(key=lambda kv: (kv[1], kv[0]), reverse=True)
    return out[:limit]


def logistic(
    x: np.ndarray, y: np.ndarray, weight: np.ndarray, penalty: np.ndarray | None = None
) -> np.ndarray:
    """The coefficients (one per column of x, then the offset) of the logistic model fitted to
    labels y over features x with these sample weights (Newton's method; a little ridge keeps
    separable data finite; penalty: an L2 penalty per column of x, the offset's is never)."""
    x = np.column_stack([x.reshape(len(y), -1), np.ones(len(y))])
    beta = np.zeros(x.shape[1])
    extra = np.zeros(x.shape[1]) if penalty is None else np.append(penalty, 0.0)
    ridge = np.diag(1e-6 + extra)
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -60, 60)))
        g = x.T @ (weight * (p - y)) + ridge @ beta
        h = (x * (weight * p * (1 - p))[:, None]).T @ x + ridge
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


JOINT = ("cosine", "share", "share_squared")
# The leveled models' features (search/calibration.Against), semantic then hybrid.
AGAINST = ("cosine", "standing", "spread")
AGAINST_JOINT = (*AGAINST, "share", "share_squared")
Features = Callable[[Question, float, float], list[float]]


def plain(q: Question, cosine: float, share: float) -> list[float]:
    """JOINT's features of a result."""
    return [cosine, share, share * share]


def against(model: str, hybrid: bool = True) -> Features:
    """AGAINST_JOINT's features of a result (AGAINST's, hybrid False) for this model."""

    def features(q: Question, cosine: float, share: float) -> list[float]:
        at = level(q, model)
        out = [cosine, at.standing(cosine), at.spread]
        return [*out, share, share * share] if hybrid else out

    return features


def evidence(
    qs: Sequence[Question], mode: str, model: str, features: Features | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The evidence of what a true answer looks like against what nothing relevant looks like:
    each tuning question's answers among its first SHOWN results in this mode (label 1), and
    those first SHOWN results of each question nobody saved an answer for (label 0). The other
    results of answerable questions are left out: nobody judged them. Features: the share of
    the query's terms (lexical), the cosine (semantic), or JOINT's (hybrid, results with a
    vector), or those `features` computes of a result (semantic or hybrid). Weights: each label
    holds half the total, and within the answers the paraphrase sets hold as much as LoCoMo (its
    many word-sharing answers must not set the scale alone)."""
    from memory_bank.search import calibration
    from memory_bank.search import fusion as shipped

    cal = calibration.for_model(MODELS[model])
    xs, ys, group = [], [], []
    for q in qs:
        if mode == "lexical":
            shown = [(m, [q.shares.get(m, 0.0)]) for m, _ in q.lexical[:SHOWN]]
        elif mode == "semantic":
            shown = [(m, features(q, c, 0.0) if features else [c]) for m, c in _dense(q, SHOWN)]
        else:
            blend = shipped.BLEND
            fused = shipped.fuse(
                q.lexical[: blend.candidates],
                _dense(q, blend.candidates),
                q.cosine,
                blend.dense_weight(q.coverage),
                SHOWN,
                q.attainable,
                cal,
            )
            shown = []
            for m, _ in fused:
                shown.append((m, (features or plain)(q, q.cosine[m], q.shares.get(m, 0.0))))
        for m, row in shown:
            if q.expected and m not in q.expected:
                continue
            xs.append(row)
            ys.append(1.0 if m in q.expected else 0.0)
            group.append("none" if not q.expected else q.kind == "locomo")
    return np.array(xs), np.array(ys), _balanced(group)


def _balanced(group: Sequence[Any]) -> np.ndarray:
    """evidence()'s sample weights of rows of these groups ("none": not an answer; True: a
    LoCoMo answer; False: a paraphrase answer): half the total to each label, and the
    paraphrase answers as much as LoCoMo's."""
    weights = np.zeros(len(group))
    shares = {"none": 0.5, True: 0.25, False: 0.25}
    for g, share in shares.items():
        members = [i for i, each in enumerate(group) if each == g]
        for i in members:
            weights[i] = share / len(members) * len(group)
    return weights


def fit(qs: Sequence[Question], model: str) -> dict[str, Any]:
    """The model's relevance models fitted on the tuning questions."""
    tune = [q for q in qs if q.tune]
    out: dict[str, Any] = {}
    for mode in ("lexical", "semantic"):
        x, y, w = evidence(tune, mode, model)
        slope, offset = logistic(x, y, w)
        out[mode] = {"slope": round(float(slope), 4), "offset": round(float(offset), 4)}
    x, y, w = evidence(tune, "hybrid", model)
    beta = logistic(x, y, w)
    out["hybrid"] = _named(JOINT, beta)
    from memory_bank.search import background

    name = MODELS[model]
    if background.vectors(name) is not None:
        leveled = {}
        for mode, names, hybrid in (("semantic", AGAINST, False), ("hybrid", AGAINST_JOINT, True)):
            x, y, w = evidence(tune, mode, model, against(name, hybrid))
            leveled[mode] = _named(names, logistic(x, y, w))
        if model in HEADS:
            # the hybrid model refitted with the q⊙d head (--heads chose it, --head measured it)
            made = _Heads(tune, model)
            beta = made.fit(tune, _product, HEADS[model])
            leveled["hybrid"] = _named(AGAINST_JOINT, np.r_[beta[: len(AGAINST_JOINT)], beta[-1]])
            head = beta[len(AGAINST_JOINT) : -1]
            # _product's columns are the dimension times q⊙d: the weights carry that factor.
            out["head weights"] = len(head) * head
            leveled["head"] = f"head-{name.removeprefix('local:').replace('/', '--')}.npy"
        out["background"] = leveled
    return out


def _named(names: Sequence[str], beta: np.ndarray) -> dict[str, float]:
    """A fitted model's coefficients by feature name, then its offset, rounded."""
    return {
        **{name: round(float(b), 4) for name, b in zip(names, beta, strict=False)},
        "offset": round(float(beta[-1]), 4),
    }


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """ROC AUC: the chance a positive scores above a negative (ties count half)."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def figures(qs: Sequence[Question], rank: Ranker, floor: float) -> dict[str, float]:
    """Abstention, paraphrase hit@5, LoCoMo recall@10 and AUC of these questions at a floor."""
    none = [q for q in qs if not q.expected]
    para = [q for q in qs if q.expected and q.kind.startswith("paraphrase")]
    convs = [q for q in qs if q.expected and q.kind == "locomo"]
    top: dict[int, float] = {}
    abstained = 0
    for q in none:
        found = rank(q, 10)
        top[id(q)] = found[0][1] if found else 0.0
        abstained += not [s for _, s in found if s >= floor]
    hits = 0
    for q in para:
        found = rank(q, 10)
        top[id(q)] = found[0][1] if found else 0.0
        hits += bool(q.expected & {m for m, s in found[:5] if s >= floor})
    recall = 0.0
    for q in convs:
        kept = {m for m, s in rank(q, 10) if s >= floor}
        recall += len(q.expected & kept) / len(q.expected)
    by_kind = {
        kind: sum(
            1 for q in none if q.kind == kind and not [s for _, s in rank(q, 10) if s >= floor]
        )
        / max(1, sum(1 for q in none if q.kind == kind))
        for kind in ("none", "none-paraphrase", "none-locomo")
    }
    return {
        "abstention": abstained / max(1, len(none)),
        **{f"abstention {k}": v for k, v in by_kind.items()},
        "hit@5": hits / max(1, len(para)),
        "recall@10": recall / max(1, len(convs)),
        "auc": auc(
            [top[id(q)] for q in para],
            [top[id(q)] for q in none if q.kind in ("none", "none-paraphrase")],
        ),
        "unanswerable": len(none),
        "paraphrase": len(para),
        "locomo": len(convs),
    }


def choose_floor(qs: Sequence[Question], rank: Ranker) -> float:
    """The floor that serves the tuning half best: the largest abstention + paraphrase hit@5
    (an empty answer where nothing was saved, the answer where it was) while LoCoMo recall@10
    stays within 0.03 of what no floor gives."""
    tune = [q for q in qs if q.tune]
    free = figures(tune, rank, 0.0)
    best, merit = 0.0, -1.0
    for floor in np.arange(0.05, 0.96, 0.05):
        f = figures(tune, rank, float(floor))
        if f["recall@10"] >= free["recall@10"] - 0.03 and f["abstention"] + f["hit@5"] > merit:
            best, merit = round(float(floor), 2), f["abstention"] + f["hit@5"]
    return best


def _statistics(q: Question, model: str) -> dict[str, float]:
    """The question's cosines to the model's background summed up several ways."""
    from memory_bank.search import background

    rows = background.vectors(model)
    assert rows is not None and q.vector is not None
    cos = np.sort(rows @ q.vector.astype(np.float32))[::-1]
    return {
        "top 5": float(cos[:5].mean()),
        "top 20": float(cos[:20].mean()),
        "top 50": float(cos[:50].mean()),
        "95th percentile": float(np.quantile(cos, 0.95)),
        "max": float(cos[0]),
        "mean": float(cos.mean()),
        "spread": float(cos.std()),
    }


def levels(qs: Sequence[Question], model: str) -> None:
    """Ways of reading the cosine against the query's background compared on the tuning half:
    each hybrid relevance model fitted there, the floor chosen by choose_floor, the figures at
    that floor and at 0.2 (the ranking is the shipped one throughout)."""
    from memory_bank.search import calibration
    from memory_bank.search import fusion as shipped
    from memory_bank.search.calibration import descending

    name = MODELS[model]
    cal = calibration.for_model(name)
    stats = {id(q): _statistics(q, name) for q in qs}

    def minus(stat: str) -> Features:
        return lambda q, c, sh: [c - stats[id(q)][stat], sh, sh * sh]

    def beside(stat: str) -> Features:
        return lambda q, c, sh: [c, sh, sh * sh, stats[id(q)][stat]]

    def standing(q: Question, c: float, sh: float) -> list[float]:
        return [(c - stats[id(q)]["mean"]) / stats[id(q)]["spread"], sh, sh * sh]

    variants: dict[str, Features] = {"cosine alone (shipped before)": plain}
    for stat in ("top 5", "top 20", "top 50", "95th percentile", "max"):
        variants[f"cosine - {stat}"] = minus(stat)
        variants[f"cosine, {stat}"] = beside(stat)
    variants["standing alone"] = standing
    variants["cosine, mean, spread"] = lambda q, c, sh: [
        c, sh, sh * sh, stats[id(q)]["mean"], stats[id(q)]["spread"]
    ]  # fmt: skip
    variants["cosine, standing, spread (chosen)"] = against(name)

    def scored(beta: np.ndarray, features: Features) -> Ranker:
        blend = shipped.BLEND
        # figures() ranks each question several times per floor: once is enough.
        memo: dict[tuple[int, int], list[tuple[str, float]]] = {}

        def rank(q: Question, limit: int) -> list[tuple[str, float]]:
            if (id(q), limit) not in memo:
                memo[id(q), limit] = ranked(q, limit)
            return memo[id(q), limit]

        def ranked(q: Question, limit: int) -> list[tuple[str, float]]:
            fused = shipped.fuse(
                q.lexical[: blend.candidates],
                _dense(q, blend.candidates),
                q.cosine,
                blend.dense_weight(q.coverage),
                limit,
                q.attainable,
                cal,
            )
            x = np.array([[*features(q, q.cosine[m], q.shares.get(m, 0.0)), 1.0] for m, _ in fused])
            p = 1 / (1 + np.exp(-np.clip(x @ beta, -60, 60))) if len(x) else []
            return descending((m, float(v)) for (m, _), v in zip(fused, p, strict=True))

        return rank

    tune = [q for q in qs if q.tune]
    print(f"{model}, tuning half: hybrid relevance models over the query's background level")
    print("| evidence | floor | abstention | hit@5 | R@10 | AUC | at 0.2: abstention | hit@5 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = {}
    for label, features in variants.items():
        x, y, w = evidence(tune, "hybrid", model, features)
        rank = scored(logistic(x, y, w), features)
        floor = choose_floor(qs, rank)
        f, at = figures(tune, rank, floor), figures(tune, rank, 0.2)
        rows[label] = {"floor": floor, "chosen floor": f, "floor 0.2": at}
        print(
            f"| {label} | {floor:g} | {f['abstention']:.3f} | {f['hit@5']:.3f} | "
            f"{f['recall@10']:.3f} | {f['auc']:.3f} | {at['abstention']:.3f} | {at['hit@5']:.3f} |",
            flush=True,
        )
    out = RESULTS / f"trust-levels-{model}.json"
    out.write_text(json.dumps({"model": model, "half": "tune", "rows": rows}, indent=2) + "\n")
    print(f"written {out.relative_to(common.REPO)}")


FOLDS = 3  # --heads' cross-validation folds within the tuning half
# The models whose hybrid relevance --fit refits with the q⊙d head, and its L2 penalty: chosen
# by --heads on the tuning half (all-mpnet-base-v2 gained nothing there), then measured once on
# the held-out half with --head (docs/search.md).
HEADS = {"all-MiniLM-L6-v2": 1000.0}
LAMBDAS = (0.01, 1.0, 100.0, 1000.0, 3000.0, 10000.0)  # --heads' L2 penalties on a head's columns


def _folds(tune: Sequence[Question]) -> dict[int, int]:
    """Each tuning question's fold: a LoCoMo question (answerable, or asked of another user)
    by the conversation searched, any other by its text, so that a paraphrase question asked
    with and without its pair, and a written question asked of every user, fall in one fold."""
    searched: list[int] = []
    for q in tune:
        if q.kind == "locomo" and id(q.memories) not in searched:
            searched.append(id(q.memories))
    return {
        id(q): searched.index(id(q.memories)) % FOLDS
        if q.kind in ("locomo", "none-locomo")
        else zlib.crc32(q.query.encode()) % FOLDS
        for q in tune
    }


PairFeatures = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _product(q: np.ndarray, d: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """q⊙d of each candidate row, whose sum is the cosine, times the dimension, so each column
    is about the cosine's size."""
    return len(q) * q[None, :] * d


def _pair_features(model: str) -> dict[str, PairFeatures]:
    """Evidence of a (query, memory) pair beside the shipped features, each over the query's
    unit vector, its candidates' rows and the model's background rows (search/background.py):
    what a score may read without the owner's other memories."""

    def centred(q: np.ndarray, d: np.ndarray, bg: np.ndarray) -> np.ndarray:
        mu = bg.mean(0)
        qc, dc = q - mu, d - mu[None, :]
        return ((dc @ qc) / (np.linalg.norm(dc, axis=1) * np.linalg.norm(qc)))[:, None]

    def memory_level(q: np.ndarray, d: np.ndarray, bg: np.ndarray) -> np.ndarray:
        cos = d @ bg.T
        mean, spread = cos.mean(1), cos.std(1)
        return np.column_stack([mean, spread, (d @ q - mean) / spread])

    return {
        "q⊙d (a weight per dimension)": _product,
        "centred cosine (less the background's mean vector)": centred,
        "the memory's background level (mean, spread, standing)": memory_level,
    }


class _Heads:
    """Hybrid relevance models over AGAINST_JOINT and a head's pair features (_pair_features),
    over the shipped ranking's first SHOWN results of each question."""

    def __init__(self, qs: Sequence[Question], model: str) -> None:
        from memory_bank.search import background, calibration
        from memory_bank.search import fusion as shipped

        name = MODELS[model]
        cal = calibration.for_model(name)
        bg = background.vectors(name)
        assert bg is not None, f"{model} has no shipped background"
        assert all(q.memories is not None for q in qs), "candidates built without their vectors"
        self.bg = bg
        self.shown: dict[int, list[str]] = {}
        self.base: dict[int, np.ndarray] = {}
        blend = shipped.BLEND
        features = against(name)
        for q in qs:
            fused = shipped.fuse(
                q.lexical[: blend.candidates],
                _dense(q, blend.candidates),
                q.cosine,
                blend.dense_weight(q.coverage),
                SHOWN,
                q.attainable,
                cal,
            )
            self.shown[id(q)] = [m for m, _ in fused]
            self.base[id(q)] = np.array(
                [features(q, q.cosine[m], q.shares.get(m, 0.0)) for m in self.shown[id(q)]]
            )

    def rows(self, q: Question, pair: PairFeatures | None) -> np.ndarray:
        """The features of the question's shown results."""
        if pair is None:
            return self.base[id(q)]
        assert q.vector is not None and q.memories is not None
        d = np.stack([q.memories[m].astype(np.float32) for m in self.shown[id(q)]])
        return np.hstack([self.base[id(q)], pair(q.vector.astype(np.float32), d, self.bg)])

    def fit(self, qs: Sequence[Question], pair: PairFeatures | None, penalty: float) -> np.ndarray:
        """The model fitted on these questions' evidence (evidence()'s rows and weights), the L2
        penalty on the head's columns."""
        xs, ys, group = [], [], []
        for q in qs:
            for m, row in zip(self.shown[id(q)], self.rows(q, pair), strict=True):
                if q.expected and m not in q.expected:
                    continue
                xs.append(row)
                ys.append(1.0 if m in q.expected else 0.0)
                group.append("none" if not q.expected else q.kind == "locomo")
        x = np.array(xs)
        columns = np.zeros(x.shape[1])
        columns[len(AGAINST_JOINT) :] = penalty
        return logistic(x, np.array(ys), _balanced(group), columns)

    def scored(
        self, qs: Sequence[Question], pair: PairFeatures | None, beta: np.ndarray
    ) -> dict[int, list[tuple[str, float]]]:
        """Each question's shown results in the shipped order with this model's scores."""
        from memory_bank.search.calibration import descending

        out = {}
        for q in qs:
            z = np.column_stack([self.rows(q, pair), np.ones(len(self.shown[id(q)]))]) @ beta
            p = 1 / (1 + np.exp(-np.clip(z, -60, 60)))
            out[id(q)] = descending(zip(self.shown[id(q)], p.tolist(), strict=True))
        return out


def heads(qs: Sequence[Question], model: str) -> None:
    """Answerability heads over the frozen vectors compared with the shipped features on the
    tuning half, by FOLDS-fold cross-validation (_folds): each model is fitted on the other
    folds and scores its fold's shipped ranking; the floor is chosen by choose_floor's rule over
    the pooled scores. Needs candidates built with the memories' vectors (Question.memories)."""
    tune = [q for q in qs if q.tune]
    fold = _folds(tune)
    made = _Heads(tune, model)

    def cross_validated(pair: PairFeatures | None, penalty: float) -> Ranker:
        scored: dict[int, list[tuple[str, float]]] = {}
        for f in range(FOLDS):
            beta = made.fit([q for q in tune if fold[id(q)] != f], pair, penalty)
            scored |= made.scored([q for q in tune if fold[id(q)] == f], pair, beta)
        return lambda q, limit: scored[id(q)][:limit]

    variants: list[tuple[str, PairFeatures | None, float]] = [("shipped features", None, 0.0)]
    for label, pair in _pair_features(MODELS[model]).items():
        variants += [(f"+ {label}", pair, penalty) for penalty in LAMBDAS]
    print(f"{model}, tuning half, {FOLDS}-fold cross-validated: hybrid relevance models")
    print(
        "| evidence | L2 | AUC | floor | abstention | paraphrase asked without | "
        "LoCoMo other user | hit@5 | R@10 | at the shipped features' hit@5: abstention | R@10 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    out = {}
    matched = 0.0
    for label, pair, penalty in variants:
        rank = cross_validated(pair, penalty)
        floor = choose_floor(tune, rank)
        f = figures(tune, rank, floor)
        if pair is None:
            matched = f["hit@5"]
        # the most abstention at a floor that keeps the shipped features' hit@5
        same = max(
            (figures(tune, rank, float(v)) for v in np.arange(0.05, 0.96, 0.01)),
            key=lambda g: (
                ok := g["hit@5"] >= matched - 1e-9,
                g["abstention"] if ok else g["hit@5"],
            ),
        )
        key = f"{label}, L2 {penalty:g}"
        out[key] = {"floor": floor, "chosen floor": f, "at the same hit@5": same}
        print(
            f"| {label} | {penalty:g} | {f['auc']:.3f} | {floor:g} | {f['abstention']:.3f} | "
            f"{f['abstention none-paraphrase']:.3f} | {f['abstention none-locomo']:.3f} | "
            f"{f['hit@5']:.3f} | {f['recall@10']:.3f} | {same['abstention']:.3f} | "
            f"{same['recall@10']:.3f} |",
            flush=True,
        )
    path = RESULTS / f"trust-heads-{model}.json"
    path.write_text(
        json.dumps({"model": model, "half": "tune", "folds": FOLDS, "rows": out}, indent=2) + "\n"
    )
    print(f"written {path.relative_to(common.REPO)}")


def head_table(qs: Sequence[Question], model: str, penalty: float, which: str) -> None:
    """The q⊙d head (_pair_features' first) with this L2 penalty, fitted on the whole tuning
    half, beside the shipped calibration: the floor table of this half (held-out: measured once
    the design is frozen by --heads' cross-validation)."""
    from memory_bank.search import calibration

    cal = calibration.for_model(MODELS[model])
    pair = next(iter(_pair_features(MODELS[model]).values()))
    made = _Heads(qs, model)
    beta = made.fit([q for q in qs if q.tune], pair, penalty)
    held = [q for q in qs if q.tune == (which == "tune")]
    scored = made.scored(held, pair, beta)
    head: Ranker = lambda q, limit: scored[id(q)][:limit]  # noqa: E731
    rows: dict[str, Any] = {}
    for label, rank in (("shipped", ranker("hybrid", cal)), (f"q⊙d head, L2 {penalty:g}", head)):
        for floor in (0.0, 0.2, 0.3, 0.4):
            rows[f"{label}, floor {floor:g}"] = figures(held, rank, floor)
    print(
        f"{model}, {which} half: the shipped calibration and the q⊙d head "
        "(fitted on the tuning half)"
    )
    print(
        "| hybrid | abstention | written | paraphrase asked without | LoCoMo other user "
        "| hit@5 | LoCoMo R@10 | AUC |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, f in rows.items():
        print(
            f"| {label} | {f['abstention']:.3f} | {f['abstention none']:.3f} | "
            f"{f['abstention none-paraphrase']:.3f} | {f['abstention none-locomo']:.3f} | "
            f"{f['hit@5']:.3f} | {f['recall@10']:.3f} | {f['auc']:.3f} |"
        )
    path = RESULTS / f"trust-head-{model}{'-tune' if which == 'tune' else ''}.json"
    path.write_text(
        json.dumps({"model": model, "half": which, "penalty": penalty, "rows": rows}, indent=2)
        + "\n"
    )
    print(f"written {path.relative_to(common.REPO)}")


def load(model: str, cache: Path | None) -> list[Question]:
    """The questions with their candidates, from the cache when it is there."""
    if cache and cache.exists():
        loaded: list[Question] = pickle.loads(cache.read_bytes())
        return loaded
    qs = fusion.build(locomo.DEFAULT_DATA, model, plain=True, unanswerable=True)
    if cache:
        cache.write_bytes(pickle.dumps(qs))
    return qs


def grid(qs: Sequence[Question], cal: Any) -> None:
    """The blend's settings swept on the tuning half (LoCoMo recall@10, paraphrase hit@5, AUC)."""
    from dataclasses import replace

    from memory_bank.search import fusion as shipped

    tune = [q for q in qs if q.tune]
    print("| lexical scale | covered w | uncovered w | R@10 | hit@5 | AUC |")
    print("|---:|---:|---:|---:|---:|---:|")
    for scale in (0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
        for covered, uncovered in ((0.5, 0.7), (0.4, 0.7), (0.3, 0.6), (0.5, 0.8), (0.6, 0.8)):
            b = replace(
                shipped.BLEND,
                lexical_scale=scale,
                dense_when_covered=covered,
                dense_when_uncovered=uncovered,
            )
            f = figures(tune, ranker("hybrid", cal, None, b), 0.0)
            print(
                f"| {scale} | {covered} | {uncovered} | {f['recall@10']:.3f} | "
                f"{f['hit@5']:.3f} | {f['auc']:.3f} |"
            )


def main(argv: list[str] | None = None) -> int:
    """Fit (with --fit) and print the floor table for one model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-mpnet-base-v2", choices=sorted(MODELS))
    parser.add_argument("--cache", type=Path, help="keep the candidates in this pickle")
    parser.add_argument("--fit", action="store_true", help="fit and write calibration.json")
    parser.add_argument(
        "--curves-of", choices=sorted(MODELS), help="score with another model's curves"
    )
    parser.add_argument("--grid", action="store_true", help="sweep the blend on the tuning half")
    parser.add_argument(
        "--levels",
        action="store_true",
        help="compare readings of the query's background level on the tuning half",
    )
    parser.add_argument(
        "--heads",
        action="store_true",
        help="compare answerability heads over the vectors on the tuning half (cross-validated)",
    )
    parser.add_argument(
        "--head",
        type=float,
        metavar="L2",
        help="the floor table of the q⊙d head with this penalty beside the shipped calibration",
    )
    parser.add_argument(
        "--half",
        choices=("held-out", "tune"),
        default="held-out",
        help="the half the table is of (tune: what the fit and the floor were chosen on)",
    )
    args = parser.parse_args(argv)
    from memory_bank.search import calibration

    qs = load(args.model, args.cache)
    name = MODELS[args.model]
    if args.grid:
        grid(qs, calibration.for_model(name))
        return 0
    if args.levels:
        levels(qs, args.model)
        return 0
    if args.heads:
        heads(qs, args.model)
        return 0
    if args.head is not None:
        head_table(qs, args.model, args.head, args.half)
        return 0
    if args.fit:
        stored = json.loads(CALIBRATION.read_text()) if CALIBRATION.exists() else {"models": {}}
        curves = fit(qs, args.model)
        weights = curves.pop("head weights", None)
        if weights is not None:
            head = CALIBRATION.with_name(curves["background"]["head"])
            np.save(head, np.asarray(weights, dtype=np.float16))
            calibration._head.cache_clear()
        stored["lexical"] = curves.pop("lexical")
        stored["models"][name] |= curves
        stored.setdefault("floor", 0.5)
        CALIBRATION.write_text(json.dumps(stored, indent=2) + "\n")
        calibration._stored.cache_clear()
        if args.model == "all-mpnet-base-v2":
            cal = calibration.for_model(name)
            stored["floor"] = choose_floor(qs, ranker("hybrid", cal))
            CALIBRATION.write_text(json.dumps(stored, indent=2) + "\n")
            calibration._stored.cache_clear()
    cal = calibration.for_model(MODELS[args.curves_of] if args.curves_of else name)
    held = [q for q in qs if q.tune == (args.half == "tune")]
    floors = sorted({*FLOORS, cal.floor})
    rows: dict[str, Any] = {"before (min-max blend, no floor)": figures(held, before, 0.0)}
    for floor in floors:
        rows[
            f"floor {floor:g}{' (default)' if floor == cal.floor and not args.curves_of else ''}"
        ] = figures(held, ranker("hybrid", cal), floor)
    half_made = {
        "lexical": figures(held, ranker("lexical", cal), 0.0)["recall@10"],
        "hybrid, half the vectors": figures(held, ranker("hybrid", cal, half), 0.0)["recall@10"],
        "semantic": figures(held, ranker("semantic", cal), 0.0)["recall@10"],
    }
    counts = rows[next(iter(rows))]
    print(
        f"{args.model} (curves of {cal.model}); {args.half}: {counts['unanswerable']} "
        f"unanswerable, {counts['paraphrase']} paraphrase, {counts['locomo']} LoCoMo questions"
    )
    print(
        "| hybrid | abstention | written | paraphrase asked without | LoCoMo other user "
        "| hit@5 | LoCoMo R@10 | AUC |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, f in rows.items():
        print(
            f"| {label} | {f['abstention']:.3f} | {f['abstention none']:.3f} | "
            f"{f['abstention none-paraphrase']:.3f} | {f['abstention none-locomo']:.3f} | "
            f"{f['hit@5']:.3f} | {f['recall@10']:.3f} | {f['auc']:.3f} |"
        )
    print(
        f"LoCoMo {args.half} recall@10 at min_score=0: "
        + ", ".join(f"{k} {v:.3f}" for k, v in half_made.items())
    )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / (
        f"trust-{args.model}{'-curves-' + args.curves_of if args.curves_of else ''}"
        f"{'-tune' if args.half == 'tune' else ''}.json"
    )
    out.write_text(
        json.dumps(
            {
                "model": args.model,
                "curves": cal.model,
                "floor": cal.floor,
                "rows": rows,
                "recall": half_made,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written {out.relative_to(common.REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
