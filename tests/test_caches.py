"""PerObject: one value per object by identity, at most a bound of them."""

from __future__ import annotations

from memory_bank.caches import PerObject


def test_a_value_is_made_once_per_object_and_extra():
    cache: PerObject[int] = PerObject(bound=4)
    made: list[str] = []
    key = {"schema": 1}
    twin = {"schema": 1}  # equal, not the same object

    def make(name: str) -> int:
        made.append(name)
        return len(made)

    assert cache.get(key, lambda: make("a")) == 1
    assert cache.get(key, lambda: make("again")) == 1
    assert cache.get(twin, lambda: make("twin")) == 2
    assert cache.get(key, lambda: make("other extra"), "sqlite") == 3
    assert made == ["a", "twin", "other extra"]
    assert cache.has(key) and cache.has(key, "sqlite") and not cache.has(key, "mysql")


def test_the_least_recently_used_goes_beyond_the_bound():
    cache: PerObject[int] = PerObject(bound=2)
    first, second, third = object(), object(), object()
    cache.get(first, lambda: 1)
    cache.get(second, lambda: 2)
    cache.get(first, lambda: 0)  # used again: second is now the oldest
    cache.get(third, lambda: 3)
    assert len(cache) == 2
    assert cache.has(first) and cache.has(third) and not cache.has(second)
    cache.clear()
    assert len(cache) == 0
