"""One runner per window query: the window manager's part for each window type.

A runner knows where its windows start and end (its context), which of them the
watermark closed, which ones late tuples changed, and how far back it needs the
shared stores. It reads aggregates from the stores of the :class:`~mta.stream.engine.Stream`
(``stream``) and never stores tuples of its own, except the policy runner's MTA.

Every runner has ``begin``: the watermark when it was added; it sees the tuples
with timestamps >= begin only.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mta.window import Window
from mta.windows import Count, Policy, Punctuation, Session, Sliding, WindowType

if TYPE_CHECKING:
    from mta.stream.engine import Stream

_INF = float("inf")


@dataclass(slots=True)  # not frozen: one is made per window and query, and frozen ones are made slower
class Result:
    """One window's result. ``final=False``: an update of a window reported before (after
    late tuples) or a window that late tuples created behind the watermark; ``replaces``
    names the windows reported before that this one supersedes (merged sessions, split
    punctuation windows). ``key`` is set by :class:`~mta.stream.keyed.KeyedStream`."""

    query: str
    start: Any
    end: Any
    value: Any
    count: int
    final: bool = True
    replaces: tuple = ()
    key: Any = None


class Runner:
    """Base of the runners: ``out`` lists take ``(sort key, Result)`` pairs."""

    aware = False  # observes tuples (context-aware windows)

    def __init__(self, name: str, spec: WindowType, begin: Any, order: int, stream: Stream) -> None:
        self.name = name
        self.spec = spec
        self.begin = begin
        self.order = order
        self.stream = stream

    def _result(self, out: list, start: Any, end: Any, i: int, j: int, final: bool, again: bool,
                replaces: tuple = (), prefix: tuple | None = None, count: int | None = None) -> None:
        """Report the time window [start, end) made of ``prefix`` (an aggregate and its count,
        of slices gone from the store) and slices i:j (``count``: their tuples, if known)."""
        stream = self.stream
        if prefix is None:
            value = stream.final.aggregate(self.name, i, j, again, end)
            if count is None:
                count = stream.slices.count(i, j)
        else:
            value, count = prefix
            if i < j:
                value = stream.monoid.combine(value, stream.final.aggregate(self.name, i, j, again, end))
                count += stream.slices.count(i, j)
        out.append(((end, self.order, start),
                    Result(self.name, start, end, stream.monoid.lower(value), count, final, replaces)))

    def idle(self) -> bool:
        """True when the runner holds nothing that a later call could report."""
        return True

    def state(self) -> Any:
        return None

    def load(self, state: Any) -> None:
        pass


class SlidingRunner(Runner):
    """Tumbling and sliding windows: context free, edges by arithmetic."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.next_end: Any = -_INF  # no window ending before it is left to report

    def _first(self, t: Any) -> int:
        """The first window with end > t that starts at or after begin."""
        spec = self.spec
        k = spec.first_ending_after(t)
        if self.begin > -_INF:
            b = spec.first_starting_after(self.begin)  # start(b - 1) <= begin < start(b)
            k = max(k, b - 1 if spec.start(b - 1) == self.begin else b)
        return k

    def reopen(self, prev: Any, updates: list) -> None:
        """Report into ``updates`` the windows holding a slice late tuples went into, that
        closed before this advance (``prev``: the watermark before it). The windows that end
        now are :func:`mta.stream.fanout.close_windows`' to report (one loop, compiled)."""
        spec, slices = self.spec, self.stream.slices
        seen = set()
        # No slice holds an edge of this query, nor its begin: the slice's start stands for
        # every tuple in it.
        for t in sorted(self.stream.late_slices):
            if t < self.begin:
                continue
            k = spec.first_ending_after(t)
            while spec.start(k) <= t and spec.end(k) <= prev:
                if k not in seen and spec.start(k) >= self.begin:
                    seen.add(k)
                    s, e = spec.start(k), spec.end(k)
                    i, j = slices.span(s, e)
                    self._result(updates, s, e, i, j, False, True)
                k += 1


class SessionRunner(Runner):
    """Sessions: their starts are slice edges; a session is the run of slices from its start."""

    aware = True

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.gap = self.spec.gap
        # per session: first and last timestamp, the bounds it was reported under (or of the
        # sessions merged into it), and whether it changed since
        self.firsts: list = []
        self.lasts: list = []
        self.shown: list[list] = []
        self.dirty: list[bool] = []
        # (aggregate, count, up to) of the oldest session's slices before ``up to``, which the
        # store dropped: an open session does not hold every slice since its start
        self.prefix: tuple | None = None

    def idle(self) -> bool:
        return not self.firsts

    def observe(self, ts: Any, mask: int, arrival: int) -> None:
        """An in-order tuple."""
        if ts < self.begin:
            return
        lasts = self.lasts
        if lasts and ts < lasts[-1] + self.gap:
            lasts[-1] = ts
            return
        self._open(len(lasts), ts)

    def _open(self, i: int, ts: Any) -> None:
        self.firsts.insert(i, ts)
        self.lasts.insert(i, ts)
        self.shown.insert(i, [])
        self.dirty.insert(i, False)
        self.stream.slices.cut(ts)

    def observe_late(self, ts: Any, mask: int, arrival: int) -> None:
        if ts < self.begin:
            return
        firsts, lasts, gap = self.firsts, self.lasts, self.gap
        i = bisect_right(firsts, ts) - 1
        left = i >= 0 and ts < lasts[i] + gap
        right = i + 1 < len(firsts) and firsts[i + 1] - ts < gap
        if left and right:  # the tuple bridges two sessions: merge them
            lasts[i] = lasts[i + 1]
            self.shown[i] += self.shown[i + 1]
            for column in (firsts, lasts, self.shown, self.dirty):
                del column[i + 1]
        elif left:
            lasts[i] = max(lasts[i], ts)
        elif right:
            i += 1
            firsts[i] = ts
            self.stream.slices.cut(ts)
        else:
            self._open(i + 1, ts)
            return
        self.dirty[i] = True

    def close(self, prev: Any, wm: Any, updates: list, closes: list) -> None:
        slices, gap = self.stream.slices, self.gap
        for n, (first, last) in enumerate(zip(self.firsts, self.lasts)):
            end = last + gap
            if end > wm:
                break
            shown = self.shown[n]
            if shown and not self.dirty[n]:
                continue
            bounds = (first, end)
            replaces = tuple(b for b in shown if b != bounds)
            final = not shown and end > prev
            prefix = self.prefix[:2] if n == 0 and self.prefix is not None else None
            i, j = slices.span(first if prefix is None else self.prefix[2], end)
            self._result(closes if final else updates, first, end, i, j, final, not final, replaces, prefix)
            self.shown[n] = [bounds]
            self.dirty[n] = False

    def needed_from(self, horizon: Any, limit: Any = -_INF) -> Any:
        """Forget the sessions that no late tuple can reach (ended at or before ``horizon``),
        fold the oldest session's slices that end by ``limit`` (no other query needs them,
        and no late tuple reaches them) into its prefix, and say where its slices begin."""
        gap, lasts = self.gap, self.lasts
        k = 0
        while k < len(lasts) and lasts[k] + gap <= horizon and self.shown[k] and not self.dirty[k]:
            k += 1
        if k:
            for column in (self.firsts, lasts, self.shown, self.dirty):
                del column[:k]
            self.prefix = None
        if not self.firsts:
            return horizon
        upto = self.firsts[0] if self.prefix is None else self.prefix[2]
        limit = min(limit, horizon)
        if upto < limit:
            slices = self.stream.slices
            i, j = slices.span(upto, _INF)
            j = bisect_right(slices.ends, limit, i)
            if i < j:
                agg, count = self.stream.final.aggregate(self.name, i, j, True), slices.count(i, j)
                if self.prefix is not None:
                    agg, count = self.stream.monoid.combine(self.prefix[0], agg), self.prefix[1] + count
                self.prefix = (agg, count, slices.ends[j - 1])
                upto = slices.ends[j - 1]
        return min(upto, horizon)

    def state(self) -> Any:
        return (self.firsts, self.lasts, [[tuple(b) for b in s] for s in self.shown], self.dirty, self.prefix)

    def load(self, state: Any) -> None:
        firsts, lasts, shown, dirty, prefix = state
        self.firsts, self.lasts, self.dirty = list(firsts), list(lasts), list(dirty)
        self.shown = [[tuple(b) for b in s] for s in shown]
        self.prefix = None if prefix is None else tuple(prefix)


class PunctuationRunner(Runner):
    """Punctuation windows: each punctuation's timestamp is a slice edge."""

    aware = True

    def __init__(self, *args: Any, bit: int = 1) -> None:
        super().__init__(*args)
        self.bit = bit  # this query's bit in a tuple's punctuation mask
        self.points: list = []
        self.arrived: dict = {}  # point -> (arrival number, whether it came late)
        self.shown: dict = {}  # start -> end of the windows reported
        self.dirty: set = set()  # starts of reported windows changed since

    def idle(self) -> bool:
        return not self.points

    def observe(self, ts: Any, mask: int, arrival: int) -> None:
        if mask & self.bit and ts >= self.begin and (not self.points or ts > self.points[-1]):
            self.points.append(ts)
            self.arrived[ts] = (arrival, False)
            self.stream.slices.cut(ts)

    def observe_late(self, ts: Any, mask: int, arrival: int) -> None:
        if ts < self.begin:
            return
        points = self.points
        i = bisect_right(points, ts) - 1
        if mask & self.bit and (i < 0 or points[i] != ts):
            insort(points, ts)
            self.arrived[ts] = (arrival, True)
            self.stream.slices.cut(ts)
        if i >= 0 and points[i] in self.shown:
            self.dirty.add(points[i])

    def close(self, prev: Any, wm: Any, updates: list, closes: list) -> None:
        slices, points, shown, arrived = self.stream.slices, self.points, self.shown, self.arrived
        windows = list(zip(points, points[1:]))
        waiting = self.stream.punctuation_at_watermark(self.bit)
        if waiting is not None and points and points[-1] < wm:
            # a punctuation waiting at exactly the watermark closes the window before it now
            windows.append((points[-1], wm))
            arrived = {**arrived, wm: (waiting, False)}
        for start, end in windows:
            if end > wm:
                break
            was = shown.get(start)
            if was == end and start not in self.dirty:
                continue
            replaces = ((start, was),) if was is not None and was != end else ()
            # A first report is final unless late data made it: it ended by the previous
            # watermark and the edge that arrived last (completing it) came late.
            final = was is None and (end > prev or not max(arrived[start], arrived[end])[1])
            i, j = slices.span(start, end)
            self._result(closes if final else updates, start, end, i, j, final, not final, replaces)
            shown[start] = end
        self.dirty.clear()

    def needed_from(self, horizon: Any) -> Any:
        points = self.points
        k = max(bisect_right(points, horizon) - 1, 0)  # [points[k], points[k + 1]) ends after the horizon
        for p in points[:k]:
            self.shown.pop(p, None)
            self.arrived.pop(p, None)
        del points[:k]
        return min(points[0], horizon) if points else horizon

    def state(self) -> Any:
        return (self.points, [[p, a, late] for p, (a, late) in self.arrived.items()], list(self.shown.items()),
                sorted(self.dirty))

    def load(self, state: Any) -> None:
        points, arrived, shown, dirty = state
        self.points, self.shown, self.dirty = list(points), {s: e for s, e in shown}, set(dirty)
        self.arrived = {p: (a, late) for p, a, late in arrived}


class CountRunner(Runner):
    """Count windows ``[max(0, e - size), e)`` for e = k * slide, over a count store."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.store = self.stream.count_store(self.begin)
        self.reported = 0  # windows 1..reported were reported
        self.dirty_from: int | None = None  # the first reported window a late tuple changed
        self.seen = 0  # tuples older than the previous watermark (late ones included)

    def on_late(self, position: int) -> None:
        k = position // self.spec.slide + 1
        if k <= self.reported and (self.dirty_from is None or k < self.dirty_from):
            self.dirty_from = k
        self.seen += 1

    def _window(self, out: list, k: int, final: bool) -> None:
        store, monoid = self.store, self.stream.monoid
        end = k * self.spec.slide
        start = max(0, end - self.spec.size)
        i, j = store.span(start, end)
        aggs = store.aggs
        value = monoid.fold(aggs[i], aggs[i + 1:j])
        out.append(((end, self.order, start),
                    Result(self.name, start, end, monoid.lower(value), end - start, final)))

    def close(self, prev: Any, wm: Any, updates: list, closes: list) -> None:
        if self.dirty_from is not None:
            for k in range(self.dirty_from, self.reported + 1):
                self._window(updates, k, False)
            self.dirty_from = None
        slide, n = self.spec.slide, self.store.n
        while (self.reported + 1) * slide <= n:
            self.reported += 1
            # closed by the watermark's move, or complete at the previous one through late tuples
            on_time = self.reported * slide > self.seen
            self._window(closes if on_time else updates, self.reported, on_time)
        self.seen = n

    def state(self) -> Any:
        return (self.reported, self.dirty_from, self.seen)

    def load(self, state: Any) -> None:
        self.reported, self.dirty_from, self.seen = state


class _EveryRunner(Runner):
    """Reports at the multiples of ``every`` (forward context aware: over the tuple buffer).

    A report time E is due once the watermark reaches it, if a tuple of the query came
    in ``[E - every, E)`` (otherwise the window is as it was at the previous report)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.every = self.spec.every
        self.times: list = []  # report times reported, within the lateness
        self.shown: dict = {}  # report time -> (start, count, value) it was reported with
        self.late: list = []

    def on_late(self, ts: Any) -> None:
        self.late.append(ts)

    def idle(self) -> bool:
        return not self.times and not self.late

    def _due(self, ts: Any) -> Any:
        every = self.every
        e = (ts // every + 1) * every
        while e <= ts:
            e += every
        return e

    def close(self, prev: Any, wm: Any, updates: list, closes: list) -> None:
        buffer = self.stream.buffer_ts
        redo: set = set()
        for ts in self.late:
            redo.add(self._due(ts))
            redo.update(self.times[bisect_right(self.times, ts):])
        self.late.clear()
        due = []
        pos = bisect_left(buffer, max(prev - self.every, self.begin))
        while pos < len(buffer):
            e = self._due(buffer[pos])
            if e > wm:
                break
            if e > prev:
                due.append(e)
            pos = bisect_left(buffer, e)
        for e in sorted(redo):
            if e <= prev:
                new = e not in self.shown
                self._emit(updates, e, False)
                if new and e in self.shown:
                    insort(self.times, e)
        for e in due:
            self._emit(closes, e, True)
            self.times.append(e)

    def _emit(self, out: list, e: Any, final: bool) -> None:
        """Report time e, unless it is as reported before; name the bounds it was reported
        with before if its start moved."""
        window = self._report(e)
        if window is None:
            return
        was = self.shown.get(e)
        if was == window:  # a late tuple outside this window
            return
        start, count, partial = window
        replaces = ((was[0], e),) if was is not None and was[0] != start else ()
        out.append(((e, self.order, start),
                    Result(self.name, start, e, self.stream.monoid.lower(partial), count, final, replaces)))
        self.shown[e] = window

    def needed_from(self, horizon: Any) -> Any:
        k = bisect_right(self.times, horizon)
        for e in self.times[:k]:
            self.shown.pop(e, None)
        del self.times[:k]
        return horizon

    def state(self) -> Any:
        return (self.times, [[e, *v] for e, v in self.shown.items()], self.late)

    def load(self, state: Any) -> None:
        self.times, self.late = list(state[0]), list(state[2])
        self.shown = {e: (start, count, partial) for e, start, count, partial in state[1]}


class MultiMeasureRunner(_EveryRunner):
    """``Count(size, every=T)``: the last ``size`` tuples before each report time."""

    def _report(self, e: Any) -> tuple | None:
        """(start, count, partial) of the window at report time e (None if empty)."""
        stream = self.stream
        buffer = stream.buffer_ts
        stop = bisect_left(buffer, e)
        first = max(stop - self.spec.size, bisect_left(buffer, self.begin))
        if stop <= first:
            return None
        partials = stream.buffer_partials
        return buffer[first], stop - first, stream.monoid.fold(partials[first], partials[first + 1:stop])

    def needed_index(self, horizon: Any) -> int:
        buffer = self.stream.buffer_ts
        keep = min(horizon, self.stream.watermark - self.every)  # a report due next may start there
        return max(bisect_left(buffer, max(keep, self.begin)) - self.spec.size, 0)


class PolicyRunner(_EveryRunner):
    """Any MTA slide policy: an ``mta.Window`` fed in order with the tuples that can no
    longer change (before the horizon), copied and topped up with the later ones for a
    report that needs them."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.window = self._new_window()
        self.fed = self.begin  # the window holds the buffer's tuples in [begin, fed)
        self.held: list = []  # (ts, partial) of what the window holds, oldest first

    def _new_window(self) -> Window:
        return Window(self.stream.monoid, self.spec.policy)

    def _feed(self, window: Any, held: list, lo: Any, hi: Any) -> None:
        stream = self.stream
        buffer = stream.buffer_ts
        a, b = bisect_left(buffer, lo), bisect_left(buffer, hi)
        if a < b:
            ts, ps = buffer[a:b], stream.buffer_partials[a:b]
            window.insert_checked((ts, ps))
            held.extend(zip(ts, ps))
            del held[:len(held) - len(window)]

    def _report(self, e: Any) -> tuple | None:
        """(start, count, partial) of the window at report time e (None if empty)."""
        buffer = self.stream.buffer_ts
        self.advance_to(min(e, self.stream.horizon))
        if e < self.fed:
            raise AssertionError("internal: a policy report before what its window holds")
        window, held = self.window, self.held
        if bisect_left(buffer, e) > bisect_left(buffer, self.fed):  # tuples after the horizon: on a copy
            memo = {id(self.stream.monoid): self.stream.monoid, id(self.spec.policy): self.spec.policy}
            window, held = copy.deepcopy(window, memo), list(held)
            self._feed(window, held, self.fed, e)
        if not len(window):
            return None
        return held[0][0], len(window), window.partial()

    def idle(self) -> bool:
        return super().idle() and not len(self.window)

    def advance_to(self, horizon: Any) -> None:
        """Feed the window up to ``horizon`` (no tuple before it can come any more)."""
        if horizon > self.fed:
            self._feed(self.window, self.held, self.fed, horizon)
            self.fed = horizon

    def needed_index(self, horizon: Any) -> int:
        return bisect_left(self.stream.buffer_ts, min(self.fed, horizon, self.stream.watermark - self.every))

    def state(self) -> Any:
        return (super().state(), self.fed, self.held)

    def load(self, state: Any) -> None:
        every, self.fed, held = state
        super().load(every)
        self.window = self._new_window()
        self.held = []
        if held:
            self.window.insert_checked(([t for t, _ in held], [p for _, p in held]))
            self.held = [tuple(h) for h in held][-len(self.window):]


def runner_class(spec: WindowType) -> type[Runner]:
    """The runner that serves a window spec."""
    if isinstance(spec, Sliding):
        return SlidingRunner
    if isinstance(spec, Session):
        return SessionRunner
    if isinstance(spec, Punctuation):
        return PunctuationRunner
    if isinstance(spec, Count):
        return CountRunner if spec.every is None else MultiMeasureRunner
    if isinstance(spec, Policy):
        return PolicyRunner
    raise TypeError(f"not a window type: {spec!r} (use one of mta.windows: Tumbling, Sliding, Session, "
                    "Count, Punctuation, Policy)")
