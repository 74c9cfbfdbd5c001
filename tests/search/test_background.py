"""The fixed background a query's cosines are read against (search/background.py): shipped for
every calibrated local model, made by that model, and read the same whoever asks."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from memory_bank.search import background, calibration
from memory_bank.search.background import Level


def _local_models() -> list[str]:
    """The calibrated local models."""
    models = json.loads(calibration.DATA.read_text())["models"]
    return [m for m in models if m.startswith("local:")]


@pytest.mark.parametrize("model", _local_models())
def test_every_calibrated_model_ships_its_background(model: str) -> None:
    """One float16 unit row per sentence, and leveled relevance models fitted beside them."""
    stored = np.load(background.vectors_file(model))
    assert stored.dtype == np.float16
    assert stored.shape[0] == len(background.texts())
    norms = np.linalg.norm(stored.astype(np.float32), axis=1)
    assert np.allclose(norms, 1.0, atol=2e-3)
    assert calibration.for_model(model).leveled is not None


def test_background_is_small_and_varied() -> None:
    """Hundreds of distinct sentences, some in German, French and Spanish, and a few MB."""
    texts = background.texts()
    assert 500 <= len(set(texts)) == len(texts)
    assert any("Ich " in t for t in texts) and any("Je " in t for t in texts)
    assert any("Mi " in t for t in texts)
    shipped = [background.TEXTS, *background.HERE.glob("background-*.npy")]
    assert sum(p.stat().st_size for p in shipped) < 3 * 2**20


def test_a_level_reads_only_the_query() -> None:
    """The same query vector gets the same level; a model with no background gets none."""
    model = _local_models()[0]
    rows = background.vectors(model)
    assert rows is not None
    query = rows[3] + rows[7]
    query /= np.linalg.norm(query)
    first = background.level(model, query)
    assert first is not None and first == background.level(model, query.copy())
    assert 0 < first.spread < 1
    assert background.level("openai:text-embedding-3-small", query) is None
    assert background.level(model, np.ones(7, dtype=np.float32)) is None


def test_without_a_level_the_cosine_curve_scores() -> None:
    """A query with no level (a model without a background) is scored by the cosine's curves;
    a borrowed calibration reads no level at all."""
    cal = calibration.for_model("local:all-MiniLM-L6-v2-int8")
    assert cal.meaning(0.6, None) == cal.semantic(0.6)
    assert cal.joint(0.6, 0.5, None) == cal.hybrid(0.6, 0.5)
    assert calibration.for_model("openai:text-embedding-3-small").leveled is None


@pytest.mark.parametrize("model", _local_models())
@pytest.mark.parametrize("spread", [0.05, 0.1, 0.2])
def test_a_higher_cosine_never_scores_lower(model: str, spread: float) -> None:
    """For any query's level, relevance rises with the cosine (so a semantic answer's scores
    follow its ranking)."""
    cal = calibration.for_model(model)
    level = Level(0.1, spread)
    cosines = np.linspace(-0.2, 1.0, 61)
    for scored in (
        [cal.meaning(float(c), level) for c in cosines],
        [cal.joint(float(c), 0.3, level) for c in cosines],
    ):
        assert all(b >= a for a, b in itertools.pairwise(scored))


@pytest.mark.model
def test_the_shipped_vectors_are_the_models_own() -> None:
    """The packaged MiniLM embeds the background's sentences as shipped (float16 rounding)."""
    from memory_bank.models.local_model import load

    model = "local:all-MiniLM-L6-v2-int8"
    texts = background.texts()
    picked = [0, 1, len(texts) // 2, len(texts) - 1]
    made = load("all-MiniLM-L6-v2").embed([texts[i] for i in picked])
    stored = np.load(background.vectors_file(model)).astype(np.float32)[picked]
    assert np.all(np.sum(made * stored, axis=1) > 0.999)
