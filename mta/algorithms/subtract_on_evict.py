"""Subtract-on-Evict: a running aggregate corrected with the monoid's inverse.

The invertible baseline of Tangwongsan, Hirzel, Schneider, "Low-latency
sliding-window aggregation in worst-case constant time" (DEBS 2017); Panes (Inv)
/ R-Int in the incremental-window-aggregation dissertation (section 2.3.2), and
the inverse-function shortcut discussed in the MTA paper (section 4.2.3).
O(1) per operation, but only for invertible monoids (sum, count, mean, ...).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Iterator

from mta.algorithms.base import Aggregator
from mta.monoid import Monoid


class SubtractOnEvict(Aggregator):
    """Keeps ``agg = combine(oldest, ..., newest)``; eviction applies ``monoid.invert``."""

    name = "subtract_on_evict"

    def __init__(self, monoid: Monoid) -> None:
        self.check_monoid(monoid)
        super().__init__(monoid)
        self._items: deque[Any] = deque()
        self._agg: Any = monoid.identity

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        if not getattr(monoid, "invertible", False):
            raise TypeError(
                f"{cls.__name__} needs an invertible monoid (one that declares "
                f"invertible = True and implements invert); {monoid!r} is not"
            )

    def insert(self, partial: Any) -> None:
        self._items.append(partial)
        self._agg = self.monoid.combine(self._agg, partial)

    def evict(self, k: int = 1) -> None:
        self._check_evict(k)
        for _ in range(k):
            self._evict_one()

    def _evict_one(self) -> None:
        items = self._items
        front = items.popleft()
        # an empty window restarts from the identity (no drift for float sums)
        self._agg = self.monoid.invert(self._agg, front) if items else self.monoid.identity

    def _oldest(self) -> Any:
        return self._items[0]

    def query(self) -> Any:
        return self._agg

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def clear(self) -> None:
        self._items.clear()
        self._agg = self.monoid.identity
