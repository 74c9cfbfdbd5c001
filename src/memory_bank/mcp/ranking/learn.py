"""The command that fits the learned model (learned.py) on the spec's texts and writes
learned.npz: `python -m memory_bank.mcp.ranking.learn` (from a checkout, PYTHONPATH=src).

Run it after changing the spec's examples; tests/mcp/ranking/test_learned.py fails while the
shipped file was fitted on other texts. It reads no phrasing set: what the model knows is what
the spec says, and the phrasing sets stay free to tune LEARNED_WEIGHT and to measure.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memory_bank.mcp.ranking.learned import DATA, Model, save, texts_digest, training_texts
from memory_bank.mcp.ranking.nearest import grams

# How hard the weights are pulled to 0 (L2, per example): 1e-3 and 1e-5 scored 20 and 7
# phrasings fewer on the tune halves and probes than this, with LEARNED_WEIGHT 0.4.
PENALTY = 1e-4
STEPS = 400  # Adam steps over all texts at once; the texts are fitted (accuracy 1.0) by then
RATE = 0.05


def fit(texts: list[tuple[str, str]], penalty: float = PENALTY, steps: int = STEPS) -> Model:
    """A multinomial logistic model of capability given text, over unit TF-IDF vectors of
    character 3- to 5-grams, fitted by full-batch Adam from zero (deterministic)."""
    import numpy as np

    names = tuple(dict.fromkeys(name for name, _ in texts))
    found = [grams(text) for _, text in texts]
    df: Counter[str] = Counter()
    for counts in found:
        df.update(counts.keys())
    columns = {g: i for i, g in enumerate(sorted(df))}
    n = len(texts)
    idf = np.array([math.log((1 + n) / (1 + df[g])) + 1 for g in sorted(df)], dtype=np.float32)
    model = Model(
        names,
        columns,
        idf,
        np.zeros((len(columns), len(names)), dtype=np.float32),
        np.zeros(len(names), dtype=np.float32),
        texts_digest(texts),
    )
    rows, values, owner = [], [], []
    for i, (_, text) in enumerate(texts):
        r, v = model.features(text)
        rows.append(r)
        values.append(v)
        owner.append(np.full(len(r), i))
    row, value, of = np.concatenate(rows), np.concatenate(values), np.concatenate(owner)
    target = np.eye(len(names), dtype=np.float32)[[names.index(name) for name, _ in texts]]
    weights, bias = model.weights, model.bias
    first, second = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, steps + 1):
        logits = np.zeros((n, len(names)), dtype=np.float32)
        np.add.at(logits, of, weights[row] * value[:, None])
        logits += bias
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        error = (p - target) / n
        gradient = np.zeros_like(weights)
        np.add.at(gradient, row, value[:, None] * error[of])
        gradient += penalty * weights
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient * gradient
        weights -= RATE * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
        bias -= RATE * error.sum(axis=0)
    return model


def accuracy(model: Model, texts: list[tuple[str, str]]) -> float:
    """The share of texts whose own capability the model puts first."""
    right = 0
    for name, text in texts:
        p = model.probabilities(text)
        right += max(p, key=p.__getitem__) == name
    return right / len(texts)


def main(argv: list[str], path: Path = DATA) -> int:
    """Fit on the shipped spec's texts and write the model."""
    from memory_bank.mcp import manifest
    from memory_bank.mcp.ranking.capability_index import index_of

    del argv
    texts: list[tuple[str, str]] = training_texts(index_of(manifest.load()))
    started = time.perf_counter()
    model: Any = fit(texts)
    save(model, path)
    print(
        f"fitted on {len(texts)} texts of {len(model.names)} capabilities, "
        f"{len(model.columns)} n-grams, in {time.perf_counter() - started:.1f} s; "
        f"training accuracy {accuracy(model, texts):.3f}; wrote {path} "
        f"({path.stat().st_size:,} bytes)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
