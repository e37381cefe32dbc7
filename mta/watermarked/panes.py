"""One key's time windows over panes filled as events come: each micro-batch's events
go into their panes at once, nothing is held back until the watermark (issue #16).

A pane is ``gcd(size, slide)`` long and aligned with the windows, so a window is a run
of whole panes. The key's state is its panes from the next window to report on, as
two sorted lists (pane starts, pane partials): :meth:`PaneWindow.add` folds a batch's
events by pane and combines each pane partial into its pane (``existing ⊕ new``), or
inserts the pane, wherever its time lies. :meth:`PaneWindow.advance` reports the
windows the watermark passed with one in-order sweep over their panes (an
:class:`~mta.algorithms.amta.AmortizedMTA`: each pane inserted and evicted once, one
O(1) query per window), then drops the panes no open window holds. A late event of
a sliding window needs no special case: it joins its pane, and only the open windows
still read that pane.

Why not a FiBA keyed by pane start (the plan of issue #16, measured in BENCHMARKS.md,
"Out-of-order windows in the Spark operator"): Spark's state store hands the operator
a key's state as bytes at every micro-batch, so a tree is rebuilt each time anyway,
and the windows come out in time order, which a sweep serves with fewer combines than
one range query per window. The sorted lists take an out-of-order pane in one
``bisect`` and one list insert.

Order: a pane's partial combines its events batch by batch in arrival order (each
batch's sorted by time first), which is event-time order only up to reordering, so
the windows take commutative monoids only; :func:`mta.watermarked.key_window`
gives any other monoid (``first``, ``last``, ``collect_list``, ...) the
:class:`~mta.watermarked.held.KeyWindow`, which keeps event-time order.

Same rows, late rule and interface as ``KeyWindow`` (:class:`~mta.watermarked.rule.LateRule`).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from mta.algorithms.amta import AmortizedMTA
from mta.monoid import Monoid
from mta.watermarked.rule import LateRule, Windowing, align_up, check_times, fold_panes


def takes(monoid: Monoid, windowing: Windowing) -> bool:
    """Whether a :class:`PaneWindow` serves ``windowing`` over ``monoid``: time windows
    (``size``, ``slide``, a row per window) of a commutative monoid."""
    return windowing.size is not None and windowing.policy is None and windowing.emit == "window" \
        and monoid.commutative


class PaneWindow(LateRule):
    """The time windows of one key over a commutative monoid: ``add`` takes events in any
    order and puts them in their panes at once, ``advance(until)`` reports every window
    that ends at or before ``until``."""

    def __init__(self, monoid: Monoid, windowing: Windowing, state: dict[str, Any] | None = None) -> None:
        if not takes(monoid, windowing):
            raise ValueError(f"PaneWindow holds time windows (size, slide, emit='window') of a commutative "
                             f"monoid, not {windowing!r} over {monoid!r}")
        state = state or {}
        if "pending_times" in state:
            raise ValueError("this key's state was written by the held-back engine (KeyWindow): "
                             "mta.watermarked.key_window gives such a key a KeyWindow")
        self.windowing, self.monoid = windowing, monoid
        self.pane = math.gcd(windowing.size, windowing.step)
        self.pane_offset = windowing.offset % self.pane  # panes align with windows
        self.fold, self.identity, self.combine = monoid.fold, monoid.identity, monoid.combine
        #: The panes from the next window to report on: starts (sorted) and partials.
        self.starts: list[int] = list(state.get("starts", ()))
        self.partials: list[Any] = list(state.get("partials", ()))
        #: The next window start to report; None: from the oldest pane's first open window.
        self.next: int | None = state.get("next")
        self.done: float = state.get("done", -math.inf)
        self.late: int = state.get("late", 0)

    def state(self) -> dict[str, Any]:
        """What a streaming run keeps between micro-batches (for ``kvs.codec.pack``)."""
        return {"starts": self.starts, "partials": self.partials, "next": self.next, "done": self.done,
                "late": self.late}

    def add(self, times: list[int], values: list[Any]) -> list[int]:
        """Put events (their times, and their values as partials: ``monoid.lift_many``) in
        their panes; return the indices of the late ones, which are dropped: those whose
        windows all ended at or before the last ``until`` of :meth:`advance`."""
        check_times(times)
        if not times:
            return []
        late, times, values = self._drop_late(times, values)
        if not times:
            return late
        if self.next is not None:
            self.next = min(self.next, self._first_open(min(times)))  # it may open a window before the next one
        order = sorted(range(len(times)), key=times.__getitem__)
        new_starts, new_partials = fold_panes([times[i] for i in order], [values[i] for i in order], self.pane,
                                              self.pane_offset, self.fold, self.identity)
        starts, partials, combine = self.starts, self.partials, self.combine
        if not starts or new_starts[0] > starts[-1]:  # in order: appended
            starts += new_starts
            partials += new_partials
            return late
        i = 0
        for start, partial in zip(new_starts, new_partials):
            i = bisect.bisect_left(starts, start, i)
            if i < len(starts) and starts[i] == start:
                partials[i] = combine(partials[i], partial)
            else:
                starts.insert(i, start)
                partials.insert(i, partial)
        return late

    def advance(self, until: float) -> list[tuple[int, int, Any]]:
        """Rows ``(start, end, partial)`` of every window with events that ends at or before
        ``until``; the windows before it are closed. The monoid's ``lower`` of the partial
        is the result."""
        size, slide, offset = self.windowing.size, self.windowing.step, self.windowing.offset
        starts, partials, rows = self.starts, self.partials, []
        start = self.next
        if start is None and starts:
            start = self._first_open(starts[0])
        sweep = AmortizedMTA(self.monoid)
        head = tail = 0  # the sweep holds the panes starts[head:tail]
        while start is not None and start + size <= until:
            end = start + size
            first = bisect.bisect_left(starts, start, head)  # the window's oldest pane, if it has one
            if first > head:
                if min(first, tail) > head:
                    sweep.evict(min(first, tail) - head)
                head, tail = first, max(tail, first)
            if first == len(starts):
                start = None  # no pane left: go on from the next event's first open window
            elif starts[first] >= end:
                start = align_up(starts[first] - size + 1, slide, offset)  # empty: skip to the pane's first window
            else:
                stop = bisect.bisect_left(starts, end, tail)
                if stop > tail:
                    sweep.insert_many(partials[tail:stop])
                    tail = stop
                rows.append((start, end, sweep.query()))
                start += slide
        # Panes before the next window are in no open window (a late event's would be late).
        cut = len(starts) if start is None else bisect.bisect_left(starts, start, head)
        del starts[:cut], partials[:cut]
        self.next = start
        self.done = max(self.done, until)
        return rows

    def next_report(self) -> int | None:
        """The earliest ``until`` at which :meth:`advance` may report a row (None: not before more events)."""
        start = self.next
        if start is None:
            if not self.starts:
                return None
            start = self._first_open(self.starts[0])
        return start + self.windowing.size
