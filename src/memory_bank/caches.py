"""Values worked out once per object and kept for it, at most a bound of them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class PerObject(Generic[V]):
    """A value per object (a schema, a statement, a manifest), compared by identity.

    An entry holds its object, so the object's id cannot be taken by another while the entry
    lives; beyond `bound` entries the least recently used goes, so neither the entries nor the
    objects they keep alive grow without end. `extra` tells apart values of one object made
    for different things (a dialect, a model).
    """

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._entries: OrderedDict[tuple[int, Hashable], tuple[object, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, obj: object, make: Callable[[], V], extra: Hashable = None) -> V:
        """The value for obj (and extra), made by make() the first time."""
        key = (id(obj), extra)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] is obj:
                self._entries.move_to_end(key)
                return hit[1]
        value = make()
        with self._lock:
            self._entries[key] = (obj, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.bound:
                self._entries.popitem(last=False)
        return value

    def has(self, obj: object, extra: Hashable = None) -> bool:
        """Whether a value for obj (and extra) is kept."""
        hit = self._entries.get((id(obj), extra))
        return hit is not None and hit[0] is obj

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
