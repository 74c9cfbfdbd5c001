"""The words of the spec's texts, and how like one of them a phrase's word is by its character
3-grams: what tells a misspelt request word ('delte') from the user's own subject."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memory_bank.mcp.ranking.phrase import SLOT, tokens


def trigrams(word: str) -> frozenset[str]:
    """A word's character 3-grams, a space at either end (so its start and end count)."""
    padded = f" {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


class Vocabulary:
    """Every word of some texts, found by the 3-grams they share with another word."""

    def __init__(self, texts: Iterable[str]) -> None:
        words = {w for text in texts for w in tokens(text) if w != SLOT}
        self.grams = {word: trigrams(word) for word in words}
        self.postings: dict[str, list[str]] = {}
        for word, grams in self.grams.items():
            for gram in grams:
                self.postings.setdefault(gram, []).append(word)

    def likeness(self, word: str) -> float:
        """How like the nearest of the words this one is, 0 to 1 (1 for one of them): the
        Dice coefficient of their 3-gram sets."""
        if word in self.grams:
            return 1.0
        mine = trigrams(word)
        shared: Counter[str] = Counter()
        for gram in mine:
            shared.update(self.postings.get(gram, ()))
        return max(
            (2 * n / (len(mine) + len(self.grams[other])) for other, n in shared.items()),
            default=0.0,
        )
