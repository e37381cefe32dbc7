"""DABA: the De-Amortized Banker's Aggregator, worst-case O(1) combines per operation.

Tangwongsan, Hirzel, Schneider, "Low-latency sliding-window aggregation in
worst-case constant time" (DEBS 2017); summarised in the incremental-window-
aggregation dissertation (section 2.3.2). TwoStacks' flip is spread over the
operations: the queue is split by pointers ``head <= l <= r <= a <= b <= tail``
into the regions

- F = [head, l): aggregate of the element .. b (the finished front);
- L = [l, r):    aggregate of the element .. r (front of the previous cycle);
- R = [r, a):    not yet processed (the back of the previous cycle);
- A = [a, b):    aggregate of the element .. b (R turned into suffixes);
- B = [b, tail): the back, summarised by one running aggregate;

and every insert/evict ends with ``_fixup``: flip when L, R, A are empty
(l == b), otherwise move ``a`` one step left (one combine) and ``l`` one step
right (one combine with the cached aggregate of [r, b), "Cached DABA"). The
invariants ``|L| == |R|`` and ``|[l, b)| + 1 == |front| - |back|`` guarantee
the work is done before the front runs out. Elements live in a circular array
that doubles when full and halves when a quarter full; positions are absolute
integers, so a resize only shifts them.
"""

from __future__ import annotations

from typing import Any, Iterator

from mta.algorithms.base import Aggregator
from mta.monoid import Monoid


class DABA(Aggregator):
    """De-Amortized Banker's Aggregator (Cached DABA) over a growable ring buffer."""

    name = "daba"
    _MIN_CAPACITY = 16

    def __init__(self, monoid: Monoid) -> None:
        super().__init__(monoid)
        self._combine = monoid.combine
        self._identity = monoid.identity
        self.clear()

    @property
    def capacity(self) -> int:
        """Current size of the ring buffer (a power of two)."""
        return self._mask + 1

    def clear(self) -> None:
        cap = self._MIN_CAPACITY
        self._vals: list[Any] = [None] * cap   # raw partials
        self._aggs: list[Any] = [None] * cap   # per-region aggregates (see module doc)
        self._mask = cap - 1
        self._shrink_at = -1  # halve at this size or below (-1: already at the minimum)
        self._head = self._l = self._r = self._a = self._b = self._tail = 0
        self._back = self._identity  # aggregate of B
        self._rb = self._identity    # aggregate of [r, b), fixed between flips

    def insert(self, partial: Any) -> None:
        if self._tail - self._head > self._mask:
            self._resize(2 * (self._mask + 1))
        tail = self._tail
        self._vals[tail & self._mask] = partial
        self._tail = tail + 1
        self._back = self._combine(self._back, partial)
        self._fixup()

    def _fixup(self) -> None:
        l, b = self._l, self._b
        if l == b:  # flip: the whole queue becomes the front, B becomes R
            l, r = self._head, b
            a = b = self._tail
            self._rb = self._back
            self._back = self._identity
        else:
            r, a = self._r, self._a
        if self._head != b:  # front empty means the queue is empty
            mask = self._mask
            aggs = self._aggs
            if a != r:  # shift: turn the last element of R into a suffix of A
                a -= 1
                v = self._vals[a & mask]
                aggs[a & mask] = v if a + 1 == b else self._combine(v, aggs[(a + 1) & mask])
            if l != r:  # shrink: extend an L suffix from r to b
                i = l & mask
                aggs[i] = self._combine(aggs[i], self._rb)
                l += 1
            else:  # L, R empty: the first element of A joins F as it is
                l = r = a = l + 1
        self._l, self._r, self._a, self._b = l, r, a, b

    def evict(self, k: int = 1) -> None:
        if k == 1 and type(k) is int and self._tail != self._head:  # hot path: k is valid
            self._evict_one()
            return
        self._check_evict(k)
        for _ in range(k):
            self._evict_one()

    def _evict_one(self) -> None:
        head = self._head
        i = head & self._mask
        self._vals[i] = self._aggs[i] = None
        self._head = head + 1
        self._fixup()
        if self._tail - self._head <= self._shrink_at:
            self._resize((self._mask + 1) // 2)

    def _resize(self, cap: int) -> None:
        head, n, old = self._head, self._tail - self._head, self._mask + 1
        h = head & self._mask
        pad = [None] * (cap - n)
        if h + n <= old:
            self._vals = self._vals[h:h + n] + pad
            self._aggs = self._aggs[h:h + n] + pad
        else:
            w = h + n - old
            self._vals = self._vals[h:] + self._vals[:w] + pad
            self._aggs = self._aggs[h:] + self._aggs[:w] + pad
        self._mask = cap - 1
        self._shrink_at = cap // 4 if cap > self._MIN_CAPACITY else -1
        self._head = 0
        self._l -= head
        self._r -= head
        self._a -= head
        self._b -= head
        self._tail = n

    def _oldest(self) -> Any:
        return self._vals[self._head & self._mask]

    def query(self) -> Any:
        head = self._head
        if head == self._b:  # front empty: the window is empty
            return self._back
        return self._combine(self._aggs[head & self._mask], self._back)

    def __len__(self) -> int:
        return self._tail - self._head

    def __iter__(self) -> Iterator[Any]:
        vals, mask = self._vals, self._mask
        return (vals[i & mask] for i in range(self._head, self._tail))
