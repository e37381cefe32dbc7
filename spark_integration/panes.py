"""One key's time windows as a FiBA of panes: each micro-batch's events go in as they
come, nothing is held back until the watermark (issue #16).

The key's state is one :class:`mta.algorithms.fiba.FiBA` keyed by pane start (a pane
is ``gcd(size, slide)`` long and aligned with the windows, so a window is a run of
whole panes). An event is combined into its pane when it arrives, wherever its time
lies; a window ``[start, end)`` is reported as ``query_range(start, end - 1)`` once the
watermark passes its end, and the panes older than the next window start go in one
bulk eviction (``evict_upto``, O(log n)). A late event of a sliding window needs no
special case: it joins its pane, and only the open windows still read that pane.

Order: a window aggregates its events in event time, ties in arrival order, as
:class:`spark_integration.engine.KeyWindow` does. A batch's events are sorted (stably)
before they are folded by pane; an equal key combines ``existing ⊕ new``, so a later
batch's events of a pane come after the earlier ones. That is event-time order only
when the monoid is commutative (the order does not matter); for any other monoid
(``first``, ``last``, ``collect_list``, ...) a pane is one microsecond, each key is an
event time, and the tree keeps event-time order exactly.

Same rows, late rule and interface as ``KeyWindow`` (:class:`~spark_integration.engine.LateRule`).
"""

from __future__ import annotations

import math
from typing import Any

from mta.algorithms.fiba import FiBA
from mta.monoid import Monoid
from spark_integration.engine import LateRule, Windowing, _align_up, check_times, fold_panes


class PaneWindow(LateRule):
    """The time windows (``size``, ``slide``, ``emit="window"``) of one key: ``add`` takes
    events in any order and inserts them at once, ``advance(until)`` reports every window
    that ends at or before ``until``."""

    def __init__(self, monoid: Monoid, windowing: Windowing, state: dict[str, Any] | None = None) -> None:
        if windowing.size is None or windowing.policy is not None or windowing.emit != "window":
            raise ValueError(f"PaneWindow holds time windows (size, slide), not {windowing!r}")
        state = state or {}
        self.windowing = windowing
        self.pane = math.gcd(windowing.size, windowing.step) if monoid.commutative else 1
        self.pane_offset = windowing.offset % self.pane
        self.fold, self.identity = monoid.fold, monoid.identity
        self.tree = FiBA(monoid)
        insert = self.tree.insert
        for key, partial in zip(state.get("keys", ()), state.get("partials", ())):
            insert(key, partial)  # in key order: the right finger's append
        #: The next window start to report; None: from the oldest pane on.
        self.next: int | None = state.get("next")
        self.done: float = state.get("done", -math.inf)
        self.late: int = state.get("late", 0)

    def state(self) -> dict[str, Any]:
        """What a streaming run keeps between micro-batches (for ``kvs.codec.pack``)."""
        entries = list(self.tree)
        return {"keys": [k for k, _ in entries], "partials": [p for _, p in entries], "next": self.next,
                "done": self.done, "late": self.late}

    def add(self, times: list[int], values: list[Any]) -> list[int]:
        """Insert events (their times, and their values as partials); return the indices of
        the late ones, which are dropped (see :meth:`KeyWindow.add`)."""
        check_times(times)
        if not times:
            return []
        late, times, values = self._drop_late(times, values)
        if not times:
            return late
        if self.next is not None:
            self.next = min(self.next, self._first_open(min(times)))  # it may open a window before the next one
        order = sorted(range(len(times)), key=times.__getitem__)  # stable: ties keep arrival order
        keys, partials = fold_panes([times[i] for i in order], [values[i] for i in order], self.pane,
                                    self.pane_offset, self.fold, self.identity)
        insert = self.tree.insert
        for key, partial in zip(keys, partials):
            insert(key, partial)
        return late

    def advance(self, until: float) -> list[tuple[int, int, Any]]:
        """Rows ``(start, end, partial)`` of every window with events that ends at or before
        ``until``; the windows before it are closed."""
        size, slide, offset = self.windowing.size, self.windowing.step, self.windowing.offset
        tree, rows = self.tree, []
        start = self.next
        while True:
            if start is None:
                oldest = tree.oldest()
                if oldest is None:
                    break
                start = self._first_open(oldest[0])
            end = start + size
            if end > until:
                break
            tree.evict_upto(start - 1)  # panes of reported windows only
            oldest = tree.oldest()
            if oldest is None:
                start = None
            elif oldest[0] >= end:  # an empty window: go on at the first one holding the oldest pane
                start = _align_up(oldest[0] - size + 1, slide, offset)
            else:
                rows.append((start, end, tree.query_range(start, end - 1)))
                start += slide
        self.next = start
        self.done = max(self.done, until)
        return rows

    def next_report(self) -> int | None:
        """The earliest ``until`` at which :meth:`advance` may report a row (None: not before more events)."""
        start = self.next
        if start is None:
            oldest = self.tree.oldest()
            if oldest is None:
                return None
            start = self._first_open(oldest[0])
        return start + self.windowing.size
