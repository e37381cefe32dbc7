"""The time slice store: the Aggregate Store of the slicing paper (section 5.2, Fig. 7).

Slices are disjoint intervals ``[start, end)`` of event time in increasing order,
each with the aggregate of its tuples (in ``(timestamp, arrival)`` order), their
number, and the timestamps of its first and last tuple. No slice contains an
edge of any query strictly inside it, so every window is a run of whole slices.

Tuples arrive here in event-time order (the engine sorts what the watermark
releases), except late tuples (behind the watermark, within the allowed lateness),
which :meth:`TimeSlices.insert_late` puts into the slice that covers them. The raw
tuples of a slice are kept only when a late tuple may need them (the decision tree
of Fig. 4): to insert into the middle of a non-commutative aggregate, or to split a
slice at a late punctuation. ``keep_tuples`` is that decision; the engine drops the
tuples of slices the watermark has left behind the allowed lateness.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any, Callable

_INF = float("inf")


class TimeSlices:
    """Parallel lists, one entry per slice, sorted by start (bisect on ``starts``)."""

    def __init__(self, monoid: Any, edges: Callable[[Any], tuple[Any, Any]], keep_tuples: bool) -> None:
        self.monoid = monoid
        #: ``edges(t) -> (floor, next)``: the largest query edge <= t and the smallest > t
        self.edges = edges
        self.keep_tuples = keep_tuples
        self.starts: list[Any] = []
        self.ends: list[Any] = []
        self.aggs: list[Any] = []
        self.counts: list[int] = []
        self.firsts: list[Any] = []
        self.lasts: list[Any] = []
        #: per slice, its tuples ``(ts, partial)`` in order (None when not kept)
        self.tuples: list[list | None] = []
        #: where the dropped slices ended: a new slice starts there at the earliest, unless
        #: its tuple is older (what was folded out of the store, e.g. into an open session's
        #: prefix, stays out: such a prefix ends by the horizon, before any tuple to come)
        self.low: Any = -_INF
        #: called with the start of a slice changed out of order (late tuple, split, new slice
        #: between others) so that the final aggregation can refresh what it derived from it
        self.on_change: Callable[[Any], None] = lambda start: None
        #: prefix sums of ``counts`` for :meth:`count`: ``_cum[m]`` is the number of tuples in
        #: slices ``0..m-1`` plus a constant (those of dropped slices), for every ``m <
        #: len(_cum) <= max(1, len(self))``. Never the newest slice's count: that one grows in
        #: place (appends, the typed ingest); a change to an older slice cuts ``_cum`` after it.
        self._cum: list[int] = [0]

    def __len__(self) -> int:
        return len(self.starts)

    # -- in order --------------------------------------------------------------------

    def append(self, ts: Any, partial: Any) -> None:
        """Add the newest tuple (``ts`` >= every tuple here), starting a slice at its edge."""
        if not self.starts or ts >= self.ends[-1]:
            floor, nxt = self.edges(ts)
            self._new(len(self.starts), max(floor, self.ends[-1] if self.starts else min(self.low, ts)), nxt)
        self._add_last(-1, ts, partial)

    def _add_last(self, i: int, ts: Any, partial: Any) -> None:
        if i >= 0:
            del self._cum[i + 1:]
        if self.counts[i]:
            self.aggs[i] = self.monoid.combine(self.aggs[i], partial)
        else:
            self.aggs[i] = partial
            self.firsts[i] = ts
        self.counts[i] += 1
        self.lasts[i] = ts
        tuples = self.tuples[i]
        if tuples is not None:
            tuples.append((ts, partial))

    def _new(self, i: int, start: Any, end: Any) -> None:
        del self._cum[i + 1:]
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        self.aggs.insert(i, self.monoid.identity)
        self.counts.insert(i, 0)
        self.firsts.insert(i, None)
        self.lasts.insert(i, None)
        self.tuples.insert(i, [] if self.keep_tuples else None)

    def cut(self, t: Any) -> None:
        """Make ``t`` a slice edge (a session start, a punctuation): split the slice that
        covers it (paper section 5.2, Split), or end the newest slice at ``t``."""
        i = bisect_right(self.starts, t) - 1
        if i >= 0 and self.starts[i] == t:
            return
        if i < 0 or t >= self.ends[i]:  # no slice covers t yet: open an empty one there
            nxt = self.edges(t)[1]
            self._new(i + 1, t, nxt if i + 1 == len(self.starts) or nxt <= self.starts[i + 1] else self.starts[i + 1])
            self.on_change(t)
            return
        self._split(i, t)

    def reopen_last(self) -> None:
        """Recompute the end of the newest slice if it is empty (after a query was added,
        its edges may come before the end computed without it)."""
        if self.starts and not self.counts[-1]:
            self.ends[-1] = self.edges(self.starts[-1])[1]

    def _split(self, i: int, t: Any) -> None:
        # Split step 1-3; a split at t starts the right part at t (half-open slices, so
        # not t + 1 as the paper's integer time has it).
        end = self.ends[i]
        self.ends[i] = t
        self._new(i + 1, t, end)
        if not self.counts[i] or self.firsts[i] >= t:  # every tuple moves right
            self._swap(i, i + 1)
        elif self.lasts[i] >= t:  # tuples on both sides: recompute both (needs the tuples)
            tuples = self.tuples[i]
            if tuples is None:
                raise AssertionError("internal: a split through a slice whose tuples were not kept")
            k = bisect_left(tuples, t, key=_ts)
            self._set(i, tuples[:k])
            self._set(i + 1, tuples[k:])
        self.on_change(self.starts[i])
        self.on_change(t)

    def _swap(self, i: int, j: int) -> None:
        del self._cum[min(i, j) + 1:]
        for column in (self.aggs, self.counts, self.firsts, self.lasts):
            column[i], column[j] = column[j], column[i]
        if self.keep_tuples:
            self.tuples[i], self.tuples[j] = self.tuples[j], self.tuples[i]

    def _set(self, i: int, tuples: list) -> None:
        """Recompute slice i from its tuples (in order)."""
        monoid = self.monoid
        del self._cum[i + 1:]
        self.tuples[i] = tuples
        self.counts[i] = len(tuples)
        self.aggs[i] = monoid.fold(monoid.identity, [p for _, p in tuples])
        self.firsts[i] = tuples[0][0] if tuples else None
        self.lasts[i] = tuples[-1][0] if tuples else None

    # -- out of order (late tuples) ------------------------------------------------------

    def insert_late(self, ts: Any, partial: Any) -> Any:
        """Add a tuple older than the newest one, after every tuple of equal timestamp;
        return the start of its slice."""
        i = bisect_right(self.starts, ts) - 1
        if i < 0 or ts >= self.ends[i]:  # in a gap between slices: a new slice at its edges
            floor, nxt = self.edges(ts)
            i += 1
            start = max(floor, self.ends[i - 1] if i else min(self.low, ts))
            self._new(i, start, nxt if i == len(self.starts) or nxt <= self.starts[i] else self.starts[i])
        if not self.counts[i] or ts >= self.lasts[i]:
            self._add_last(i, ts, partial)
        else:
            tuples = self.tuples[i]
            del self._cum[i + 1:]
            if ts < self.firsts[i]:
                self.aggs[i] = self.monoid.combine(partial, self.aggs[i])
                self.firsts[i] = ts
                self.counts[i] += 1
                if tuples is not None:
                    tuples.insert(0, (ts, partial))
            elif self.monoid.commutative:
                self.aggs[i] = self.monoid.combine(self.aggs[i], partial)
                self.counts[i] += 1
                if tuples is not None:
                    tuples.insert(bisect_right(tuples, ts, key=_ts), (ts, partial))
            else:  # into the middle of a non-commutative aggregate: recompute (paper 5.2, Update)
                if tuples is None:
                    raise AssertionError("internal: a late tuple inside a non-commutative slice without its tuples")
                tuples.insert(bisect_right(tuples, ts, key=_ts), (ts, partial))
                self._set(i, tuples)
        self.on_change(self.starts[i])
        return self.starts[i]

    # -- reading and dropping ---------------------------------------------------------------

    def span(self, start: Any, end: Any) -> tuple[int, int]:
        """The indexes ``i:j`` of the slices with ``start <= slice start < end``."""
        starts = self.starts
        return bisect_left(starts, start), bisect_left(starts, end)

    def count(self, i: int, j: int) -> int:
        """The number of tuples in slices ``i:j`` (``sum(self.counts[i:j])``, by prefix sums)."""
        if i >= j:
            return 0
        counts, cum = self.counts, self._cum
        last = j - 1
        m = len(cum)
        while m <= last:
            cum.append(cum[m - 1] + counts[m - 1])
            m += 1
        return cum[last] - cum[i] + counts[last]

    def drop_before(self, t: Any) -> int:
        """Forget the slices that end at or before ``t``; return how many."""
        k = bisect_right(self.ends, t)
        if k:
            self.low = max(self.low, self.ends[k - 1])
            if k < len(self._cum):
                del self._cum[:k]
            else:
                self._cum = [0]
            for column in (self.starts, self.ends, self.aggs, self.counts, self.firsts, self.lasts, self.tuples):
                del column[:k]
        return k

    def release_tuples(self, t: Any) -> None:
        """Drop the kept tuples of the slices ending at or before ``t`` (no late tuple reaches them)."""
        if self.keep_tuples:
            tuples = self.tuples
            for i in range(bisect_right(self.ends, t)):
                tuples[i] = None

    # -- state ---------------------------------------------------------------------------

    def state(self) -> tuple:
        return (self.starts, self.ends, self.aggs, self.counts, self.firsts, self.lasts, self.tuples, self.low)

    def load(self, state: tuple) -> None:
        *columns, self.low = state
        self._cum = [0]
        (self.starts, self.ends, self.aggs, self.counts, self.firsts, self.lasts, tuples) = (list(c) for c in columns)
        self.tuples = [None if t is None else [tuple(x) for x in t] for t in tuples]


_ts = itemgetter(0)
