"""The out-of-order baseline: a sorted list of keys, folded again on every query.

The recomputation oracle of the out-of-order aggregators (and the slowest of
them): insertion is a binary search and a list insert (O(n) moves, in C), every
query folds the entries it covers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import reduce
from typing import Any, Callable, Iterator

from mta.algorithms.base import OrderedAggregator
from mta.monoid import Monoid


class SortedList(OrderedAggregator):
    """Parallel sorted lists of keys and partials."""

    name = "sorted"

    def __init__(self, monoid: Monoid) -> None:
        super().__init__(monoid)
        self._keys: list[Any] = []
        self._values: list[Any] = []

    def insert(self, key: Any, partial: Any) -> bool:
        keys = self._keys
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            self._values[i] = self.monoid.combine(self._values[i], partial)
            return False
        keys.insert(i, key)
        self._values.insert(i, partial)
        return True

    def evict(self, key: Any) -> bool:
        keys = self._keys
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            del keys[i], self._values[i]
            return True
        return False

    def evict_upto(self, key: Any) -> int:
        i = bisect_right(self._keys, key)
        del self._keys[:i], self._values[:i]
        return i

    def query(self) -> Any:
        return reduce(self.monoid.combine, self._values, self.monoid.identity)

    def query_range(self, low: Any, high: Any) -> Any:
        values = self._values[bisect_left(self._keys, low):bisect_right(self._keys, high)]
        return reduce(self.monoid.combine, values, self.monoid.identity)

    def entries(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        keys = self._keys
        start, stop = bisect_left(keys, low), bisect_right(keys, high)
        return list(zip(keys[start:stop], self._values[start:stop]))

    def search(self, pred: Callable[[Any], bool]) -> tuple[Any, Any] | None:
        combine = self.monoid.combine
        acc = self.monoid.identity
        found = None
        for key, value in zip(self._keys, self._values):
            acc = combine(acc, value)
            if not pred(acc):
                break
            found = (key, acc)
        return found

    def oldest(self) -> tuple[Any, Any] | None:
        return (self._keys[0], self._values[0]) if self._keys else None

    def newest(self) -> tuple[Any, Any] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return zip(self._keys, self._values)

    def clear(self) -> None:
        self._keys.clear()
        self._values.clear()

    def check(self) -> None:
        keys = self._keys
        assert len(keys) == len(self._values), "as many keys as values"
        assert all(a < b for a, b in zip(keys, keys[1:])), "keys strictly increasing"
