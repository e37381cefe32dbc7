"""TwoStacks: a FIFO made of two stacks, each carrying running aggregates.

Tangwongsan, Hirzel, Schneider, "Low-latency sliding-window aggregation in
worst-case constant time" (DEBS 2017), also the incremental-window-aggregation
dissertation (section 2.3.2). Insertions push onto the back stack and extend its
running aggregate; evictions pop the front stack, whose entries carry suffix
aggregates (element .. newest element of the front). When the front is empty
the back is flipped onto it (O(n) once, O(1) amortized). The aggregate is
``combine(front suffix of the oldest, back aggregate)``.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Iterator

from mta.algorithms.base import Aggregator
from mta.monoid import Monoid


class TwoStacks(Aggregator):
    """Front stack (raw partials + suffix aggregates) and back list + running aggregate.

    ``_fvals[-1]`` is the oldest element; ``_faggs[i + 1]`` aggregates
    ``_fvals[i]`` down to ``_fvals[0]`` (oldest of them first), ``_faggs[0]``
    is the identity, so ``_faggs[-1]`` is always the front's aggregate.
    """

    name = "two_stacks"

    def __init__(self, monoid: Monoid) -> None:
        super().__init__(monoid)
        self._combine = monoid.combine
        self._identity = monoid.identity
        self._fvals: list[Any] = []
        self._faggs: list[Any] = [monoid.identity]
        self._bvals: list[Any] = []
        self._bagg: Any = monoid.identity

    def insert(self, partial: Any) -> None:
        self._bvals.append(partial)
        self._bagg = self._combine(self._bagg, partial)

    def _oldest(self) -> Any:
        return self._fvals[-1] if self._fvals else self._bvals[0]

    def _flip(self) -> None:
        """Move the back list onto the (empty) front stack, computing suffix aggregates."""
        vals = self._bvals
        vals.reverse()  # newest first: the oldest ends on top of the stack
        combine = self._combine
        acc = self._identity
        faggs = self._faggs
        append = faggs.append
        for v in vals:
            acc = combine(v, acc)
            append(acc)
        self._fvals = vals
        self._bvals = []
        self._bagg = self._identity

    def evict(self, k: int = 1) -> None:
        fvals = self._fvals
        if k == 1 and fvals and type(k) is int:  # hot path: k already validated
            fvals.pop()
            self._faggs.pop()
            return
        self._check_evict(k)
        while k:
            fvals = self._fvals
            if not fvals:
                self._flip()
                fvals = self._fvals
            m = min(k, len(fvals))
            pop = fvals.pop
            pop_agg = self._faggs.pop
            for _ in range(m):  # one by one: baselines have no bulk eviction
                pop()
                pop_agg()
            k -= m

    def query(self) -> Any:
        return self._combine(self._faggs[-1], self._bagg)

    def __len__(self) -> int:
        return len(self._fvals) + len(self._bvals)

    def __iter__(self) -> Iterator[Any]:
        return chain(reversed(self._fvals), self._bvals)

    def clear(self) -> None:
        self._fvals = []
        self._faggs = [self._identity]
        self._bvals = []
        self._bagg = self._identity
