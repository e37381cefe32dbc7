"""Panes as a multi-query aggregator: keep the partials, fold the newest r for each answer.

The dissertation's naive final aggregation (section 2.3.2, Table 2): no state but the
partials, ``r - 1`` combines per answer, ``n^2/2`` per slide for every range 1..n. It is
the baseline the multi-query algorithms are measured against and the oracle's shape.
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Any, Sequence

from mta.algorithms.multi_query import MultiQueryAggregator
from mta.monoid import Monoid


class Panes(MultiQueryAggregator):
    name = "panes"
    any_range = True

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        self.partials: deque = deque(maxlen=self.capacity)

    def insert(self, partial: Any) -> None:
        self.partials.append(partial)

    def query(self, r: int) -> Any:
        if type(r) is not int or not 1 <= r <= self.capacity:
            raise self._unknown_range(r)
        partials = self.partials
        n = len(partials)
        if not n:
            return self.monoid.identity
        first = 0 if r >= n else n - r
        return self.monoid.fold(partials[first], list(islice(partials, first + 1, None)))

    def __len__(self) -> int:
        return len(self.partials)

    def clear(self) -> None:
        self.partials.clear()
