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
wrong for non-commutative monoids; ``query`` then combines the two ranges
explicitly in window order: suffix [head, capacity) first, then [0, end).
"""

from __future__ import annotations

from typing import Any, Iterator

from mta.algorithms.base import Aggregator
from mta.monoid import Monoid


class FlatFAT(Aggregator):
    """A circular buffer of leaves under a flat binary aggregation tree."""

    name = "flatfat"
    _MIN_CAPACITY = 16

    def __init__(self, monoid: Monoid) -> None:
        super().__init__(monoid)
        self._combine = monoid.combine
        self._identity = monoid.identity
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

    def _range(self, lo: int, hi: int) -> Any:
        """Aggregate of leaves [lo, hi) in leaf order, O(log n) combines."""
        tree, combine = self._tree, self._combine
        left = right = self._identity
        lo += self._cap
        hi += self._cap
        while lo < hi:
            if lo & 1:
                left = combine(left, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                right = combine(tree[hi], right)
            lo >>= 1
            hi >>= 1
        return combine(left, right)

    def _oldest(self) -> Any:
        return self._tree[self._cap + self._head]

    def query(self) -> Any:
        end = self._head + self._size
        if end <= self._cap:  # not wrapped: free leaves are the identity
            return self._tree[1]
        return self._combine(self._range(self._head, self._cap), self._range(0, end - self._cap))

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
