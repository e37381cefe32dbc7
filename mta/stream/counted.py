"""The count slice store: slices of tuple positions, shared by the count windows of a stream.

Positions count tuples in ``(timestamp, arrival)`` order from the store's origin. Slice
``i`` always covers positions ``[starts[i], starts[i + 1])``: a late tuple does not
move the edges, it shifts tuples across them. It goes into the slice that covers its
place and every later slice hands its last tuple to the next one (paper section 5.2,
Fig. 6). Each slice's aggregate is the fold of its tuples in order: a tuple that does not go
last is combined in only where that is exact (no float: :func:`rounding_test`), else the slice
is recomputed. Removing that last tuple inverts it out where the monoid is commutative and
invertible and the invert is exact (no float in the aggregate or the tuple:
:func:`rounding_test`), costs nothing where the monoid is a selection and the tuple was
surely not the selected one, and recomputes the slice from its tuples otherwise (section 6.3.2).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any, Callable

from mta.stream.shared import rounding_test


class CountSlices:
    def __init__(self, monoid: Any, next_edge: Callable[[int], int], keep_tuples: bool) -> None:
        self.monoid = monoid
        #: ``next_edge(p)``: the smallest window edge (a position) > p
        self.next_edge = next_edge
        self.keep_tuples = keep_tuples
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.aggs: list[Any] = []
        #: the key ``(ts, arrival)`` of each slice's first tuple, and each slice's last timestamp
        self.firsts: list[tuple] = []
        self.lasts: list[Any] = []
        self.tuples: list[list | None] = []
        #: tuples ever added (the position the next in-order tuple gets)
        self.n = 0
        self._invert = monoid.invertible and monoid.commutative
        #: whether a partial may round when combined or inverted out of order: then the slice is recomputed
        self._rounds = rounding_test(monoid)

    def append(self, key: tuple, partial: Any) -> None:
        """Add the newest tuple (its key greater than every key here)."""
        n = self.n
        if not self.starts or n >= self.ends[-1]:
            self._open(n, key, partial)
        else:
            self.aggs[-1] = self.monoid.combine(self.aggs[-1], partial)
            self.lasts[-1] = key[0]
            if self.keep_tuples:
                self.tuples[-1].append((key, partial))
        self.n = n + 1

    def _open(self, position: int, key: tuple, partial: Any) -> None:
        self.starts.append(position)
        self.ends.append(self.next_edge(position))
        self.aggs.append(partial)
        self.firsts.append(key)
        self.lasts.append(key[0])
        self.tuples.append([(key, partial)] if self.keep_tuples else None)

    def insert_late(self, key: tuple, partial: Any) -> int:
        """Add a tuple older than the newest; return its position (later ones move up by one)."""
        monoid = self.monoid
        j = max(bisect_right(self.firsts, key) - 1, 0)
        if not self.starts or self.lasts[j] <= key[0] and self.firsts[j] <= key:  # after every tuple of slice j
            if j + 1 >= len(self.starts):
                position = self.n
                self.append(key, partial)
                return position
            j += 1  # first in the next slice: the slices before keep their tuples
        tuples = self.tuples[j]
        if tuples is None:
            raise AssertionError("internal: a late tuple reached a count slice whose tuples were not kept")
        k = bisect_right(tuples, key, key=_key)
        position = self.starts[j] + k
        tuples.insert(k, (key, partial))
        self._refresh(j, tuples, partial, k)
        last = len(self.starts) - 1
        for i in range(j, last):  # Fig. 6: hand each slice's last tuple on to the next
            moved = self.tuples[i].pop()
            self._remove_last(i, moved[1])
            nxt = self.tuples[i + 1]
            nxt.insert(0, moved)
            if self._exact(moved[1], self.aggs[i + 1]):
                self.aggs[i + 1] = monoid.combine(moved[1], self.aggs[i + 1])
            else:
                self._recompute(i + 1)
            self.firsts[i + 1] = moved[0]
        if self.starts[last] + len(self.tuples[last]) > self.ends[last]:  # the newest slice overflowed
            moved = self.tuples[last].pop()
            self._remove_last(last, moved[1])
            self._open(self.ends[last], moved[0], moved[1])
        self.n += 1
        return position

    def _refresh(self, i: int, tuples: list, partial: Any, k: int) -> None:
        """Slice i gained ``partial`` at index k of its tuples."""
        if k == len(tuples) - 1:
            self.aggs[i] = self.monoid.combine(self.aggs[i], partial)
        elif not self._exact(partial, self.aggs[i]):  # floats: only a fold in order gives the fold's result
            self._recompute(i)
        elif k == 0:
            self.aggs[i] = self.monoid.combine(partial, self.aggs[i])
        elif self.monoid.commutative:
            self.aggs[i] = self.monoid.combine(self.aggs[i], partial)
        else:
            self._recompute(i)
        self.firsts[i] = tuples[0][0]
        self.lasts[i] = tuples[-1][0][0]

    def _exact(self, a: Any, b: Any) -> bool:
        """Whether combining or inverting partials a and b out of a fold's order gives the fold's
        result: neither holds a float (:func:`rounding_test`)."""
        return not (self._rounds(a) or self._rounds(b))

    def _remove_last(self, i: int, partial: Any) -> None:
        """Slice i lost its last tuple, ``partial`` (its tuples list is already updated)."""
        monoid = self.monoid
        tuples = self.tuples[i]
        if not tuples:
            self.aggs[i] = monoid.identity
        elif self._invert and self._exact(self.aggs[i], partial):
            self.aggs[i] = monoid.invert(self.aggs[i], partial)
        elif not (monoid.selection and _other(self.aggs[i], partial)):  # a selection kept another tuple: unchanged
            self._recompute(i)
        if tuples:
            self.lasts[i] = tuples[-1][0][0]

    def _recompute(self, i: int) -> None:
        monoid = self.monoid
        self.aggs[i] = monoid.fold(monoid.identity, [p for _, p in self.tuples[i]])

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Indexes ``i:j`` of the slices covering positions ``[start, end)`` (edges align)."""
        return bisect_left(self.starts, start), bisect_left(self.starts, end)

    def position_of(self, ts: Any) -> int:
        """The number of tuples here with a timestamp < ts (among the kept slices, whose
        tuples are known; earlier slices all count)."""
        i = bisect_left(self.lasts, ts)  # slices before i end before ts
        if i == len(self.starts):
            return self.n
        tuples = self.tuples[i]
        if tuples is None:
            return self.starts[i]
        return self.starts[i] + bisect_left(tuples, ts, key=_ts)

    def drop_before(self, position: int) -> None:
        """Forget the slices ending at or before ``position``."""
        k = bisect_right(self.ends, position)
        if k:
            for column in (self.starts, self.ends, self.aggs, self.firsts, self.lasts, self.tuples):
                del column[:k]

    def release_tuples(self, position: int) -> None:
        """Drop the tuples of slices ending at or before ``position`` (no shift reaches them)."""
        if self.keep_tuples:
            for i in range(bisect_right(self.ends, position)):
                self.tuples[i] = None

    def state(self) -> tuple:
        return (self.starts, self.ends, self.aggs, self.firsts, self.lasts, self.tuples, self.n)

    def load(self, state: tuple) -> None:
        starts, ends, aggs, firsts, lasts, tuples, self.n = state
        self.starts, self.ends, self.aggs, self.lasts = list(starts), list(ends), list(aggs), list(lasts)
        self.firsts = [tuple(k) for k in firsts]
        self.tuples = [None if t is None else [(tuple(k), p) for k, p in t] for t in tuples]


_key = itemgetter(0)


def _other(agg: Any, partial: Any) -> bool:
    """Whether a selection's aggregate is surely not the removed partial: it differs and equals
    itself (a NaN differs from itself, so a NaN aggregate may be the removed NaN)."""
    return agg is not partial and agg != partial and agg == agg


def _ts(entry: tuple) -> Any:
    return entry[0][0]

