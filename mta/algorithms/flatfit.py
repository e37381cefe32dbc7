"""FlatFIT: the Flat and Fast Index Traverser, a weighted jump table over a circular window.

Shein, Chrysanthis, Labrinidis; the incremental-window-aggregation dissertation,
chapter 3 (Algorithm 1, Figures 9-10). Two circular arrays of ``wSize`` (here
``capacity``) slots: ``partials[i]`` holds the aggregate of the slots ``i ..
pointers[i] - 1`` (circularly, oldest first), so a lookup hops from a range's first
slot along ``pointers`` to ``cur`` (the oldest slot, next to be overwritten) and
combines the partials it visited, newest first, the older always on the left. On
the way it writes each suffix aggregate into the slot where the suffix starts and
points that slot at ``cur`` (all but the range's first slot, as printed): a later
lookup through the slot costs one combine. Exactly 3 (n - 1) combines per n + 1
slides for one query of range n (the "wReset" walk of the whole window once a
period, Section 3.3.1); with every range ``1..n`` asked each slide, about 1.5
combines per range once the pointers settle (measured; Table 3 bounds it by 3).
Any associative monoid, any range ``1..capacity``.

The slots start at ``monoid.identity`` (Alg. 1 lines 10-13), so a window with fewer
than ``capacity`` partials folds identities in its lookups, exactly as the paper
counts them (Example 3: 21 combines against Panes' 40). Those ``2 * capacity`` slots are
allocated at construction and a lookup while the window fills hops through the identity
slots: memory and time for the range, not for what is held. A largest range above
:data:`MAX_CAPACITY` is refused (ValueError); SlideSide, SlickDeque and FlatFAT grow with
what they hold.

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


#: the largest range FlatFIT takes (its slots are allocated for the range up front)
MAX_CAPACITY = 2 ** 22


class FlatFIT(MultiQueryAggregator):
    """Alg. 1: ``partials``/``pointers`` as a jump table, compressed by every lookup."""

    name = "flatfit"
    any_range = True

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        if self.capacity > MAX_CAPACITY:
            raise ValueError(f"flatfit allocates two slots per unit of its largest range: {self.capacity} is "
                             f"above its limit {MAX_CAPACITY} (slideside, slickdeque and flatfat hold what "
                             "they are given)")
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
        """:meth:`query` for every range, with the lookups of one to three hops inlined
        (nearly all of them once every range is asked each slide)."""
        if not self._size:
            return [self.monoid.identity] * len(self.ranges)
        partials, pointers, cur, n, combine = self._partials, self._pointers, self._cur, self.capacity, self._combine
        out: list[Any] = []
        append = out.append
        for r in self.ranges:
            start = cur - r
            if start < 0:
                start += n
            a = pointers[start]
            if a == cur:
                append(partials[start])
                continue
            b = pointers[a]
            if b == cur:
                append(combine(partials[start], partials[a]))
            elif pointers[b] == cur:
                answer = partials[a] = combine(partials[a], partials[b])
                pointers[a] = cur
                append(combine(partials[start], answer))
            else:
                append(self._walk(start, a))
        return out

    def _lookup(self, r: int) -> Any:
        """Alg. 1 lines 26-44 (fixed): the aggregate of the newest ``r`` slots."""
        start = self._cur - r
        if start < 0:
            start += self.capacity
        nxt = self._pointers[start]
        if nxt == self._cur:  # a single hop (line 42 would pop an empty stack)
            return self._partials[start]
        return self._walk(start, nxt)

    def _walk(self, start: int, nxt: int) -> Any:
        """Lines 30-43 from slot ``start``, whose pointer is ``nxt`` (not ``cur``)."""
        partials, pointers, cur = self._partials, self._pointers, self._cur
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
