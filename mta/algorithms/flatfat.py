"""FlatFAT: the Reactive Aggregator's flat fixed-size aggregation tree.

Tangwongsan, Hirzel, Schneider, Wu, "General incremental sliding-window
aggregation" (VLDB 2015); described in the incremental-window-aggregation
dissertation (section 2.3.2, Figure 5). A complete binary tree in one array
(root at 1, children of i at 2i and 2i + 1, leaves at capacity ..
2 * capacity - 1); the leaves form a circular buffer of the window's partials
and free leaves hold the identity. Insert and evict rewrite one leaf and its
path to the root: O(log n) combines. Capacity doubles when full and halves when
a quarter full (O(n) rebuild, amortized O(1)).

When the window wraps around the end of the leaf array, the root combines the
newer elements (at the start of the array) before the older ones, which is
wrong for non-commutative monoids, and for a monoid with ordered ties (Min,
MinCount, a Record with a Max field, ...) answers a tie (0.0 and -0.0, 2 and 2.0)
with the newer operand's value where the in-order fold keeps the older; ``query``
then folds the minimum covers of the two ranges in window order: suffix
[head, capacity) first, then [0, end).

:class:`FlatFATRanges` (``MULTI_QUERY["flatfat"]``) is the multi-query FlatFAT of
Cutty and the dissertation: the newest ``r`` partials for any ``r``, answered by the
minimum cover of tree nodes (``FlatFAT.newest``); a full window slides by rewriting
the oldest leaf (``FlatFAT.slide``).
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Iterator, Sequence

from mta.algorithms.base import Aggregator
from mta.algorithms.multi_query import MultiQueryAggregator
from mta.monoid import Monoid


class FlatFAT(Aggregator):
    """A circular buffer of leaves under a flat binary aggregation tree."""

    name = "flatfat"
    _MIN_CAPACITY = 16

    def __init__(self, monoid: Monoid) -> None:
        super().__init__(monoid)
        self._combine = monoid.combine
        self._identity = monoid.identity
        # the root answers a wrapped window only for a combine whose operands' order is invisible,
        # on ties too (a selection returns one of its operands: taken to order its ties)
        self._order_free = monoid.commutative and not (monoid.selection or monoid.ordered_ties)
        self.clear()

    @property
    def capacity(self) -> int:
        """Number of leaves (a power of two)."""
        return self._cap

    def clear(self) -> None:
        self._cap = self._MIN_CAPACITY
        self._tree: list[Any] = [self._identity] * (2 * self._cap)
        self._head = 0  # leaf offset of the oldest element
        self._size = 0

    def _set_leaf(self, offset: int, value: Any) -> None:
        """Write leaf ``offset`` and recompute its path to the root."""
        tree, combine = self._tree, self._combine
        i = self._cap + offset
        tree[i] = value
        i >>= 1
        while i:
            tree[i] = combine(tree[2 * i], tree[2 * i + 1])
            i >>= 1

    def insert(self, partial: Any) -> None:
        if self._size == self._cap:
            self._resize(2 * self._cap)
        self._set_leaf((self._head + self._size) & (self._cap - 1), partial)
        self._size += 1

    def evict(self, k: int = 1) -> None:
        self._check_evict(k)
        for _ in range(k):
            self._evict_one()

    def _evict_one(self) -> None:
        self._set_leaf(self._head, self._identity)
        self._head = (self._head + 1) & (self._cap - 1)
        self._size -= 1
        if self._cap > self._MIN_CAPACITY and 4 * self._size <= self._cap:
            self._resize(self._cap // 2)

    def _resize(self, cap: int) -> None:
        """Rebuild with ``cap`` leaves, the oldest element at leaf 0."""
        items = list(self)
        tree = [self._identity] * (2 * cap)
        tree[cap:cap + len(items)] = items
        combine = self._combine
        for i in range(cap - 1, 0, -1):
            tree[i] = combine(tree[2 * i], tree[2 * i + 1])
        self._tree, self._cap, self._head = tree, cap, 0

    def slide(self, partial: Any) -> None:
        """Evict the oldest element and insert ``partial`` (a full fixed-size window's
        step). When the window fills every leaf the new partial takes the oldest's leaf:
        one path to the root rewritten instead of two."""
        if self._size == self._cap:
            self._set_leaf(self._head, partial)
            self._head = (self._head + 1) & (self._cap - 1)
        else:
            self.evict(1)
            self.insert(partial)

    def _cover(self, lo: int, hi: int, nodes: list[Any]) -> None:
        """Append to ``nodes``, in leaf order, the minimum set of tree nodes covering leaves [lo, hi)."""
        tree = self._tree
        right = []
        lo += self._cap
        hi += self._cap
        while lo < hi:
            if lo & 1:
                nodes.append(tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                right.append(tree[hi])
            lo >>= 1
            hi >>= 1
        right.reverse()
        nodes += right

    def newest(self, k: int) -> Any:
        """Aggregate of the newest ``k`` elements (all, if fewer), oldest first: the
        minimum cover of tree nodes (dissertation section 2.3.2, Figure 5), folded with
        one combine fewer than its nodes."""
        size = self._size
        if k >= size:
            return self.query()
        cap = self._cap
        lo = (self._head + size - k) & (cap - 1)
        nodes: list[Any] = []
        if lo + k <= cap:
            self._cover(lo, lo + k, nodes)
        else:  # wrapped: the older part sits at the end of the leaf array
            self._cover(lo, cap, nodes)
            self._cover(0, lo + k - cap, nodes)
        return reduce(self._combine, nodes)

    def _oldest(self) -> Any:
        return self._tree[self._cap + self._head]

    def query(self) -> Any:
        end = self._head + self._size
        if end <= self._cap or self._order_free:  # not wrapped (free leaves are the identity), or order-free
            return self._tree[1]
        nodes: list[Any] = []
        self._cover(self._head, self._cap, nodes)
        self._cover(0, end - self._cap, nodes)
        return reduce(self._combine, nodes)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        # Lazily: the default policy search reads only the oldest few.
        tree, cap = self._tree, self._cap
        start = cap + self._head
        end = start + self._size
        for i in range(start, min(end, 2 * cap)):
            yield tree[i]
        for i in range(cap, end - cap):
            yield tree[i]


class FlatFATRanges(MultiQueryAggregator):
    """Multi-query FlatFAT: a :class:`FlatFAT` holding the newest ``capacity`` partials,
    any range answered by the minimum cover of its tree nodes (O(log n) combines), as
    Cutty and the dissertation run it (the competitor of FlatFIT and SlickDeque)."""

    name = "flatfat"
    any_range = True

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        self._fat = FlatFAT(monoid)

    def insert(self, partial: Any) -> None:
        fat = self._fat
        if len(fat) == self.capacity:
            fat.slide(partial)
        else:
            fat.insert(partial)

    def query(self, r: int) -> Any:
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        return self._fat.newest(r)

    def answers(self) -> list[Any]:
        newest = self._fat.newest
        return [newest(r) for r in self.ranges]

    def __len__(self) -> int:
        return len(self._fat)

    def clear(self) -> None:
        self._fat.clear()
