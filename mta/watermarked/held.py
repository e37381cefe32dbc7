"""One key's event-time window, fed in pieces: the part of the operator that does not
depend on Spark. A batch run feeds everything at once; a streaming run feeds each
micro-batch and advances to the watermark; both go through the same code, so they
give the same rows.

Times are integer microseconds since the epoch (Spark's ``unix_micros``).

Time windows of a commutative monoid take each event as it comes instead
(:mod:`mta.watermarked.panes`, picked by :func:`mta.watermarked.key_window`);
this module holds the events back until the watermark, which keeps event-time order
for any monoid, and serves policy windows, reactive rows and windows kept in a store.

- **Time windows** (``size``, ``slide``; tumbling when equal): the rows of Spark's
  ``window(ts, size, slide, startTime)``: one per window ``[start, start + size)`` that
  holds at least one event, starts at ``offset + k * slide`` (``offset``: Spark's startTime). The window is one MTA
  window: events go in once, folded by pane (gcd(size, slide)), each window end
  costs one bulk eviction (O(log n)) and one query, so the cost does not grow with
  ``size / slide`` as Spark's Expand does.
- **Policy windows** (a slide policy, plain Python callable, on microsecond times):
  with ``slide``, one row per slide interval in which the key had events (the window
  at the interval's end; ``start`` is its oldest event's time).
- **Reactive** (``emit="event"``): one row per event, the aggregate right after it
  (paper section 4.1.4), over ``TimeRange(size)``, the policy, or everything.

Late events follow Spark's streaming aggregation (see :mod:`spark_integration.streaming`):
``advance(until)`` reports the rows that end at or before ``until`` and *closes* them;
an event added later still goes into every row of it that is open (ends after the
last ``until``) and is late only when all of them are closed. A sliding window's
event may so miss its older windows and count in its newer ones; if newer events of
those windows are already in the MTA window (a *straggler*), it is folded into a
partial per open window (``size / slide`` combines, for stragglers only) that joins
the window's own aggregate when the window is reported.
"""

from __future__ import annotations

import bisect
import math
from typing import Any, Callable

from mta.monoid import Monoid
from mta.policy import TimeRange
from mta.watermarked.rule import LateRule, Windowing, align_down, align_up, check_times, fold_panes
from mta.window import Window

#: Compact the kept event lists once this many evicted entries lead them.
_COMPACT = 4096


def window_policy(windowing: Windowing, stored: bool = False) -> Callable[[Any, Any], bool] | None:
    """The slide policy of a key's :class:`mta.Window`. A window whose levels live in a
    store keeps timestamps (``TimeRange``), so that a window end evicts in bulk by time
    (:meth:`mta.Window.evict_before`) without a list of every event's time beside it."""
    if windowing.policy is not None:
        return windowing.policy
    if windowing.size is not None and (stored or windowing.emit == "event"):
        return TimeRange(windowing.size)  # never evicts inside [end - size, end): the newest is before end
    return None


class _Listed:
    """A window's events kept in lists beside it: what a run that keeps its state in
    Spark stores, and what time eviction bisects."""

    def __init__(self, window: Window, times: list[int], values: list[Any]) -> None:
        self.window = window
        #: The events from ``head`` on are in the window, oldest first.
        self.times, self.values, self.head = times, values, 0
        if times:
            window.insert_checked((times, values))
            self.head = len(times) - len(window)

    def insert(self, times: list[int], values: list[Any]) -> None:
        self.window.insert_checked((times, values))
        self.times += times
        self.values += values
        self.head = len(self.times) - len(self.window)  # what the policy evicted

    def evict_before(self, time: int) -> None:
        h = bisect.bisect_left(self.times, time, self.head)
        if h > self.head:
            self.window.evict(h - self.head)  # one bulk eviction, O(log n)
            self.head = h

    def oldest(self) -> int:
        return self.times[self.head]

    def compact(self) -> None:
        if self.head > _COMPACT and self.head * 2 > len(self.times):
            del self.times[:self.head], self.values[:self.head]
            self.head = 0

    def state(self) -> dict[str, Any]:
        return {"times": self.times[self.head:], "values": self.values[self.head:]}


class _Stored:
    """A window whose levels live in a store: only it knows its events' times."""

    def __init__(self, window: Window) -> None:
        self.window = window

    def insert(self, times: list[int], values: list[Any]) -> None:
        self.window.insert_checked((times, values))

    def evict_before(self, time: int) -> None:
        self.window.evict_before(time)

    def oldest(self) -> int:
        return self.window.oldest_timestamp()

    def compact(self) -> None:
        pass

    def state(self) -> dict[str, Any]:
        return {}


class KeyWindow(LateRule):
    """The window of one key. ``add`` takes events in any order; ``advance(until)``
    reports every row whose events all lie before ``until`` (the watermark).

    ``stored``: a :class:`mta.Window` (on a store, built with :func:`window_policy`
    ``(windowing, stored=True)``) to hold the events; :meth:`state` then leaves them out.
    """

    def __init__(self, monoid: Monoid, windowing: Windowing, state: dict[str, Any] | None = None,
                 stored: Window | None = None) -> None:
        self.windowing = windowing
        state = state or {}
        # Values arrive lifted (partials) and stay so: pending events are
        # sorted and come after everything in the window, so they go in through
        # Window.insert_checked without being checked again.
        if stored is not None:
            self.window = stored
            self.events: _Listed | _Stored = _Stored(stored)
        else:
            self.window = Window(monoid, window_policy(windowing))
            self.events = _Listed(self.window, list(state.get("times", ())), list(state.get("values", ())))
        #: Time windows: events go in folded by pane (gcd(size, slide) long, aligned): every
        #: window is a run of whole panes, so it holds the pane partials it would have
        #: aggregated from the events, and a dense key inserts and evicts far fewer elements.
        self.pane = math.gcd(windowing.size, windowing.step) if windowing.emit == "window" and \
            windowing.policy is None else None
        self.pane_offset = windowing.offset % self.pane if self.pane is not None else 0  # panes align with windows
        self.fold, self.identity, self.combine = monoid.fold, monoid.identity, monoid.combine
        #: Events not yet final (at or after the last ``until``), sorted by time.
        self.pending_times: list[int] = list(state.get("pending_times", ()))
        self.pending_values: list[Any] = list(state.get("pending_values", ()))
        #: The next window start (time windows) or report time (policy windows); None: from the next event.
        self.next: int | None = state.get("next")
        #: The rows ending at or before this time are reported (or were empty): closed to new events.
        self.done: float = state.get("done", -math.inf)
        self.late: int = state.get("late", 0)
        #: Every event before this time is in the MTA window (the end of the last window taken in).
        self.taken: float = state.get("taken", -math.inf)
        #: Sliding windows: stragglers (events of open windows, older than ``taken``) folded
        #: per window start; each joins its window's aggregate when the window is reported.
        self.extra: dict[int, Any] = dict(state.get("extra", ()))

    def state(self) -> dict[str, Any]:
        """What a streaming run keeps between micro-batches (for ``kvs.codec.pack``)."""
        return {**self.events.state(), "pending_times": self.pending_times, "pending_values": self.pending_values,
                "next": self.next, "done": self.done, "late": self.late, "taken": self.taken,
                "extra": [[start, partial] for start, partial in self.extra.items()]}

    def add(self, times: list[int], values: list[Any]) -> list[int]:
        """Queue events (their times, and their values as partials: ``monoid.lift_many``);
        return the indices of the late ones, which are dropped: those whose rows (every
        window holding them) all ended at or before the last ``until`` of :meth:`advance`.
        An event with some rows still open goes into those only."""
        check_times(times)
        if not times:
            return []
        late, times, values = self._drop_late(times, values)
        if not times:
            return late
        oldest = min(times)
        if self.windowing.emit == "window" and self.next is not None:
            self.next = min(self.next, self._first_open(oldest))  # it may open a row before the next one
        if oldest < self.taken:
            times, values = self._stragglers(times, values)
        if times:
            order = sorted(range(len(times)), key=times.__getitem__)  # stable: ties keep arrival order
            if self.pending_times and times[order[0]] < self.pending_times[-1]:
                merged = sorted(zip(self.pending_times + [times[i] for i in order],
                                    self.pending_values + [values[i] for i in order]), key=lambda p: p[0])
                self.pending_times = [t for t, _ in merged]
                self.pending_values = [v for _, v in merged]
            else:
                self.pending_times += [times[i] for i in order]
                self.pending_values += [values[i] for i in order]
        return late

    def advance(self, until: float) -> list[tuple[int, int, Any]]:
        """Rows ``(start, end, partial)`` (``emit="event"``: ``(time, time, partial)``) of every
        window end, or event, before ``until``; the events before it become final. The
        monoid's ``lower`` of the partial is the result."""
        windowing = self.windowing
        self._cursor = 0  # pending events before it are in the window (dropped from the lists at the end)
        if windowing.emit == "event":
            rows = self._events(until)
        elif windowing.policy is None:
            rows = self._time_windows(until)
        else:
            rows = self._policy_windows(until)
        del self.pending_times[:self._cursor], self.pending_values[:self._cursor]
        self.done = max(self.done, until)
        self.events.compact()
        return rows

    def next_report(self) -> int | None:
        """The earliest ``until`` at which :meth:`advance` reports a row (None: not before more events)."""
        windowing, pending = self.windowing, self.pending_times
        if windowing.emit == "event":
            return pending[0] + 1 if pending else None
        if windowing.policy is not None:
            return align_up(pending[0] + 1, windowing.slide) if pending else None
        start = self.next
        if start is None:
            start = self._restart(pending[0] if pending else None)
            if start is None:
                return None
        return start + windowing.size

    def _restart(self, first: int | None) -> int | None:
        """Where time windows go on after an empty one: the first open window of the next
        pending event (``first``) or of a straggler, whichever is earlier."""
        starts = [] if first is None else [self._first_open(first)]
        if self.extra:
            starts.append(min(self.extra))
        return min(starts, default=None)

    def _stragglers(self, times: list[int], values: list[Any]) -> tuple[list[int], list[Any]]:
        """Fold the events before ``taken`` (newer events of their windows are in the MTA
        window already) into ``extra`` of each open window holding them; return the others."""
        size, slide, offset = self.windowing.size, self.windowing.step, self.windowing.offset
        combine, identity, extra = self.combine, self.identity, self.extra
        open_from, taken = self._open_from(), self.taken
        kept_times, kept_values = [], []
        for i in sorted(range(len(times)), key=times.__getitem__):  # time order: ties keep arrival order
            t, v = times[i], values[i]
            if t >= taken:
                kept_times.append(t)
                kept_values.append(v)
                continue
            first, last = align_up(t - size + 1, slide, offset), align_down(t, slide, offset)
            for start in range(max(first, int(open_from)), last + 1, slide):
                extra[start] = combine(extra.get(start, identity), v)
        return kept_times, kept_values

    def _peek(self) -> int | None:
        """The time of the next pending event, if any."""
        return self.pending_times[self._cursor] if self._cursor < len(self.pending_times) else None

    def _take(self, stop: int) -> None:
        """Insert the pending events before time ``stop``."""
        c = self._cursor
        self.taken = max(self.taken, stop)
        q = bisect.bisect_left(self.pending_times, stop, c)
        if q > c:
            times, values = self.pending_times[c:q], self.pending_values[c:q]
            if self.pane is not None:
                times, values = fold_panes(times, values, self.pane, self.pane_offset, self.fold, self.identity)
            self.events.insert(times, values)
            self._cursor = q

    def _time_windows(self, until: float) -> list[tuple[int, int, Any]]:
        size, slide = self.windowing.size, self.windowing.step
        window, rows = self.window, []
        start = self.next
        while True:
            if start is None:
                start = self._restart(self._peek())
                if start is None:
                    break
            end = start + size
            if end > until:
                break
            self._take(end)
            self.events.evict_before(start)
            extra = self.extra.pop(start, None) if self.extra else None
            if len(window) or extra is not None:
                partial = window.partial()
                rows.append((start, end, partial if extra is None else self.combine(partial, extra)))
                start += slide
            else:
                start = None  # nothing until the next event's (or straggler's) first open window
        self.next = start
        return rows

    def _policy_windows(self, until: float) -> list[tuple[int, int, Any]]:
        slide = self.windowing.slide
        window, rows = self.window, []
        end = self.next
        while True:
            first = self._peek()
            if end is None or first is None or first >= end:
                if first is None:
                    end = None
                    break
                end = align_up(first + 1, slide)  # the interval of the next event
            if end > until:
                break
            self._take(end)
            if len(window):
                rows.append((self.events.oldest(), end, window.partial()))
            end += slide
        self.next = end
        return rows

    def _events(self, until: float) -> list[tuple[int, int, Any]]:
        pending = self.pending_times
        q = bisect.bisect_left(pending, until)
        insert, partial, rows = self.events.insert, self.window.partial, []
        for t, v in zip(pending[:q], self.pending_values[:q]):
            insert([t], [v])
            rows.append((t, t, partial()))
        self._cursor = q
        return rows
