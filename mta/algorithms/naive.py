"""Naive window aggregation: a FIFO of partials folded again on every query.

The recompute baseline of the MTA paper (section 5.2): insertion and eviction
touch only the queue, the aggregate is recomputed from scratch (O(n) combines)
when queried and cached until the next change.
"""

from __future__ import annotations

from collections import deque
from functools import reduce
from typing import Any, Iterator

from mta.algorithms.base import Aggregator
from mta.monoid import Monoid

_STALE = object()


class Naive(Aggregator):
    """A deque of partials; ``query`` folds it oldest to newest (result cached)."""

    name = "naive"

    def __init__(self, monoid: Monoid) -> None:
        super().__init__(monoid)
        self._items: deque[Any] = deque()
        self._cache: Any = monoid.identity

    def insert(self, partial: Any) -> None:
        self._items.append(partial)
        self._cache = _STALE

    def evict(self, k: int = 1) -> None:
        self._check_evict(k)
        if k:
            popleft = self._items.popleft
            for _ in range(k):
                popleft()
            self._cache = _STALE

    def _oldest(self) -> Any:
        return self._items[0]

    def query(self) -> Any:
        if self._cache is _STALE:
            self._cache = reduce(self.monoid.combine, self._items, self.monoid.identity)
        return self._cache

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def clear(self) -> None:
        self._items.clear()
        self._cache = self.monoid.identity
