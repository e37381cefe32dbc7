"""FlatFIT: the Flat and Fast Index Traverser, a weighted jump table over a circular window.

Shein, Chrysanthis, Labrinidis; the incremental-window-aggregation dissertation,
chapter 3 (Algorithm 1, Figures 9-10). Two circular arrays of ``wSize`` (here
``capacity``) slots: ``partials[i]`` holds the aggregate of the slots ``i ..
pointers[i] - 1`` (circularly, oldest first), so a lookup hops from a range's first
slot along ``pointers`` to ``cur`` (the oldest slot, next to be overwritten) and
combines the partials it visited. On the way back it writes every suffix aggregate
it built into the slot it started from and points that slot at ``cur``: the next
lookup through it costs one combine. Amortized 3 combines per slide for one query
(the "wReset" walk of the whole window once every ``capacity + 1`` slides), and
about one combine per query when every range ``1..n`` is asked each slide
(Table 3). Any associative monoid, any range ``1..capacity``.

The slots start at ``monoid.identity`` (Alg. 1 lines 10-13), so a window with fewer
than ``capacity`` partials folds identities in its lookups, exactly as the paper
counts them (Example 3: 21 combines against Panes' 40).

Fixes to the printed pseudocode (DESIGN.md, "Known defects"):

- lines 10-13 loop to ``wSize`` inclusive (one slot past the end): slots ``0 ..
  capacity - 1`` only;
- line 42 pops an empty stack when the lookup is a single hop (the range's first
  slot already points at ``cur``): the answer is that slot's partial, no combine;
- line 38 (``answer ⊕ Partials[tempInd]``) puts the newer part on the left; the
  older slot goes on the left here, so non-commutative monoids work;
- line 48 compares with an undefined ``windowSize``: it is ``wSize``.
"""

from __future__ import annotations

from typing import Any, Sequence

from mta.algorithms.multi_query import MultiQueryAggregator
from mta.monoid import Monoid


class FlatFIT(MultiQueryAggregator):
    """Alg. 1: ``partials``/``pointers`` as a jump table, compressed by every lookup."""

    name = "flatfit"
    any_range = True

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        self._combine = monoid.combine
        self.clear()

    def clear(self) -> None:
        n = self.capacity
        # Alg. 1 lines 7-14: identities, each slot pointing at the next (the last at 0).
        self._partials: list[Any] = [self.monoid.identity] * n
        self._pointers: list[int] = list(range(1, n)) + [0]
        # ``_cur`` is the paper's currInd of the latest insert: the oldest slot, which
        # the next insert overwrites (the newest partial sits just before it). Before the
        # first insert it is n - 1, the paper's initial prevInd (lines 15-16).
        self._cur = n - 1
        self._size = 0

    def insert(self, partial: Any) -> None:
        # Alg. 1 lines 22-23 and 46-50: the new partial takes the oldest slot, points at
        # the next one, which becomes currInd (advanced before the lookups, not after).
        prev = self._cur
        cur = prev + 1
        if cur == self.capacity:
            cur = 0
        self._partials[prev] = partial
        self._pointers[prev] = cur
        self._cur = cur
        if self._size < self.capacity:
            self._size += 1

    def query(self, r: int) -> Any:
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        if not self._size:
            return self.monoid.identity
        return self._lookup(r)

    def answers(self) -> list[Any]:
        if not self._size:
            return [self.monoid.identity] * len(self.ranges)
        lookup = self._lookup
        return [lookup(r) for r in self.ranges]

    def _lookup(self, r: int) -> Any:
        """Alg. 1 lines 26-44 (fixed): the aggregate of the newest ``r`` slots."""
        partials, pointers, cur = self._partials, self._pointers, self._cur
        start = cur - r
        if start < 0:
            start += self.capacity
        nxt = pointers[start]
        if nxt == cur:  # a single hop (line 42 would pop an empty stack)
            return partials[start]
        # lines 30-34: the slots a lookup hops through, oldest first
        positions = [start]
        append = positions.append
        while nxt != cur:
            append(nxt)
            nxt = pointers[nxt]
        pop, combine = positions.pop, self._combine
        answer = partials[pop()]
        # lines 36-41: suffix aggregates, the older slot on the left; each visited slot
        # now holds its suffix and points at cur
        while len(positions) > 1:
            i = pop()
            answer = combine(partials[i], answer)
            partials[i] = answer
            pointers[i] = cur
        # lines 42-43: the first slot is combined but not rewritten (as printed: the
        # counts of Examples 3-4 and the arrays of Figure 10 depend on it)
        return combine(partials[pop()], answer)

    def __len__(self) -> int:
        return self._size
