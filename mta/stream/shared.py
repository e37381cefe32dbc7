"""Shared final aggregation: the optimizer's plan executed over the Stream engine's slices.

``Stream(final="shared")`` hands its tumbling and sliding queries to the optimizer
(:mod:`mta.optimizer`: F1, the cost per slide of each technique, WeaveShare or
TriWeave), which splits them into groups, each with a partial aggregation (Panes,
Pairs or Cutty) and a multi-query final aggregation (``mta.algorithms.MULTI_QUERY``).
This module executes such a plan, TriWeave's way: the engine's one slicer cuts the
stream at every query's edges (one combine per tuple, for every group at once); each
group folds the slices between two of its own partial edges into one partial, inserts
it into its multi-query aggregator, and at each window end of its queries answers the
window by ``query(r)``, r being the number of the group's partials in the window (and,
for Cutty, combines the open partial). The plan is periodic: one composite slide
(the LCM of the group's slides) gives every edge and every r.

Time: the group's queries are measured in integer *ticks* (the largest unit that
divides every size, slide and offset), so edges are exact integer arithmetic even when
the user's times are floats.

What the groups do not serve falls back to ``fallback`` (the engine's ``auto``):
sessions and the other window types, updates of windows reported before (late tuples),
and any window a group cannot answer from its state. A slice changed out of order
behind what a group consumed resets the group, which restarts from the slices at its
next window.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, bisect_right
from fractions import Fraction
from typing import Any, Callable, Sequence

from mta.algorithms import multi_query_aggregator
from mta.algorithms.typed import Untyped
from mta.optimizer import Plan
from mta.monoid import Count, GeometricMean, Mean, Record, StdDev, Sum, Variance
from mta.stream.final import FinalAggregation
from mta.stream.slices import TimeSlices
from mta.windows import as_fraction, first_above, floor_quotient

#: a group whose composite slide has more edges than this is not shared (its table would be large)
MAX_POINTS = 1 << 16


class Ticks:
    """Engine times as integer ticks: ``unit`` divides every value it was built from."""

    def __init__(self, values: Sequence[Any]) -> None:
        fractions = [as_fraction(v) for v in values if v]
        denominator = math.lcm(*(f.denominator for f in fractions)) if fractions else 1
        numerator = math.gcd(*(int(f * denominator) for f in fractions)) if fractions else 1
        self.unit = Fraction(numerator, denominator)
        self._int_unit = numerator if denominator == 1 else None
        self._p, self._q = numerator, denominator
        self._float_unit = float(self.unit)

    def exact(self, v: Any) -> int:
        """``v`` (one of the values the ticks were built from, or a sum of them) in ticks."""
        n = as_fraction(v) / self.unit
        if n.denominator != 1:
            raise ValueError(f"{v!r} is not a whole number of ticks of {self.unit}")
        return int(n)

    def __call__(self, t: Any) -> int:
        """The largest n whose edge, the float nearest ``n * unit`` (as ``mta.windows.Sliding``
        computes its edges), is <= ``t``: exact, so a tuple just before an edge stays before it."""
        unit = self._int_unit
        if unit is not None and type(t) is int:
            return t // unit
        p, q = self._p, self._q
        n = floor_quotient(t, self._float_unit)
        if (n + 1) * p / q <= t or n * p / q > t:  # off by up to ulp(t) / unit at a huge t
            n = first_above(lambda m: m * p / q, t, n + 1) - 1
        return n


class Points:
    """A periodic set of integer points: ``offsets`` (sorted, in ``[0, period)``) + k * period."""

    __slots__ = ("period", "offsets", "size")

    def __init__(self, period: int, offsets: Sequence[int]) -> None:
        self.period = period
        self.offsets = sorted(offsets)
        self.size = len(self.offsets)

    def count_upto(self, t: int) -> int:
        """How many points are <= t, counted from the point 0 of period 0 (may be negative)."""
        q, r = divmod(t, self.period)
        return q * self.size + bisect_right(self.offsets, r)

    def point(self, i: int) -> int:
        """The i-th point: ``point(count_upto(t) - 1)`` is the largest point <= t."""
        q, r = divmod(i, self.size)
        return q * self.period + self.offsets[r]

    def between(self, a: int, b: int) -> int:
        """How many points are in ``[a, b)``."""
        return self.count_upto(b - 1) - self.count_upto(a - 1)


def rounding_test(monoid: Any) -> Callable[[Any], bool]:
    """Whether ``monoid.invert`` may round on a partial: floats (``1e16 + 1.0 - 1e16`` is 0.0,
    and a running total keeps the error for every later window), and always for Variance,
    StdDev and GeometricMean (floats inside their partials). A user's ``invert`` is exact
    (the Monoid contract)."""
    kind = type(monoid)
    if kind is Sum or kind is Count:
        return lambda p: type(p) is float
    if kind is Mean:
        return lambda p: type(p[0]) is float
    if kind is Record:
        tests = [rounding_test(m) for m in monoid.fields.values()]
        return lambda p: any(test(x) for test, x in zip(tests, p))
    if kind in (Variance, StdDev, GeometricMean):
        return lambda p: True
    return lambda p: False


class Rounding(Exception):
    """A group that subtracts (``invert``) met a partial it would round (:func:`rounding_test`),
    before inserting it: the final re-plans without inverting techniques."""


class SharedGroup:
    """One group of a plan: its partial edges, its multi-query aggregator, and the answers
    it computed for the windows ending at the points it passed (until the advance ends)."""

    def __init__(self, monoid: Any, slices: TimeSlices, ticks: Ticks, queries: dict[str, tuple[int, int, int]],
                 partial: str, final: str, invert: bool = True) -> None:
        """``queries``: name -> (size, slide, offset) in ticks; ``partial``: panes, pairs or cutty;
        ``final``: the ``MULTI_QUERY`` aggregator; ``invert``: whether it may subtract (else
        SlideSide's combining variant)."""
        self.monoid = monoid
        self.slices = slices
        self.ticks = ticks
        period = math.lcm(*(slide for _, slide, _ in queries.values()))
        starts, ends = set(), set()
        for size, slide, offset in queries.values():
            for k in range(period // slide):
                starts.add((offset + k * slide) % period)
                ends.add((offset + k * slide + size) % period)
        if partial == "panes":  # each query's panes: every gcd(size, slide) from its offset
            bounds = set()
            for size, slide, offset in queries.values():
                step = math.gcd(size, slide)
                bounds.update(range(offset % step, period, step))
        elif partial == "pairs":
            bounds = starts | ends
        elif partial == "cutty":
            bounds = starts
        else:
            raise ValueError(f"partial aggregation must be 'panes', 'pairs' or 'cutty', got {partial!r}")
        self.bounds = Points(period, bounds)
        self.points = Points(period, bounds | ends)
        # per point of the composite slide: is it a partial edge, and the windows ending there
        # as (query, closed partials in the window, whether the open partial is in it too)
        self.is_bound = [p in bounds for p in self.points.offsets]
        self.ends_at: list[list[tuple[str, int, bool]]] = [[] for _ in self.points.offsets]
        capacity = 1
        for name, (size, slide, offset) in queries.items():
            for k in range(period // slide):
                end = offset + k * slide + size
                n = self.bounds.between(end - size, end)
                open_part = partial == "cutty" and (end % period) not in bounds
                closed = n - 1 if open_part else n
                capacity = max(capacity, closed + open_part)
                self.ends_at[bisect_left(self.points.offsets, end % period)].append((name, closed, open_part))
        self.capacity = capacity
        # the aggregator holds closed partials only (a Cutty window's open partial is combined apart)
        ranges = sorted({closed for ends in self.ends_at for _, closed, _ in ends if closed}) or [1]
        #: ``MULTI_QUERY[final]``'s aggregator, or its typed twin until a partial it cannot hold
        if final == "slideside" and not invert:  # its overlaid variant: it combines only
            self.mq = multi_query_aggregator(final, monoid, ranges, inverse=False)
        else:
            self.mq = multi_query_aggregator(final, monoid, ranges)
        # a group that subtracts checks each partial first (:class:`Rounding`); once re-planned
        # (``invert`` False), a user's optimizer that still plans SlickDeque is taken as it plans
        subtracts = invert and monoid.invertible and (final == "slideside" or final == "slickdeque"
                                                      and not monoid.selection)
        self.rounds: Callable[[Any], bool] | None = rounding_test(monoid) if subtracts else None
        self.answers: dict[tuple[str, int], Any] = {}
        self.reset()

    def __getstate__(self) -> dict[str, Any]:
        # a pickled Stream (mta.stream.final_state): ``rounds`` is a closure, made again on load
        state = self.__dict__.copy()
        state["rounds"] = self.rounds is not None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.rounds = rounding_test(self.monoid) if state["rounds"] else None

    def reset(self) -> None:
        """Forget the partials (a slice changed behind them): restart at the next window asked."""
        self.mq.clear()
        self.answers.clear()
        self.next_point: int | None = None  # index (in ``points``) of the next point to pass
        self.open: Any = _NO_PART  # the open partial (_NO_PART: no slice in it yet; None is a value)
        self.last_start: Any = None  # start of the last slice folded in
        self.empty = 0  # partials inserted in a row with no slice in them

    def answer(self, query: str, end: Any) -> Any:
        """The aggregate of ``query``'s window ending at ``end`` (the watermark passed it)."""
        e = self.ticks(end)
        found = self.answers.pop((query, e), _MISSING)
        if found is not _MISSING:
            return found
        points = self.points
        if self.next_point is None or points.point(self.next_point) > e:
            if self.next_point is not None:
                return _MISSING  # passed already (the caller folds)
            # start far enough back for the longest window ending at or after e, but not before
            # the partial of the first slice from there: the partials before it are identities,
            # which an aggregator holding fewer partials stands for (as after a jump in _pass), so
            # a long range costs no run of empty partials (time and memory for the range)
            bounds, ticks, starts = self.bounds, self.ticks, self.slices.starts
            last = bounds.count_upto(e) - 1
            first = bounds.point(last - self.capacity)
            i = bisect_left(starts, first, key=ticks)
            nxt = last if i == len(starts) else min(bounds.count_upto(ticks(starts[i])) - 1, last)
            first = max(first, bounds.point(nxt))
            self.next_point = points.count_upto(first - 1)
            self._pass(e, e)  # the windows ending before e lack older partials: not answered
        else:
            self._pass(e, -math.inf)
        return self.answers.pop((query, e), _MISSING)

    def _pass(self, upto: int, answer_from: int) -> None:
        """Pass the points <= upto: fold slices into partials, answer the windows ending there."""
        points, ticks = self.points, self.ticks
        slices = self.slices
        starts, aggs = slices.starts, slices.aggs
        n = len(starts)
        if self.last_start is None:
            i = bisect_left(starts, points.point(self.next_point), key=ticks)
        else:
            i = bisect_right(starts, self.last_start)
        combine, identity = self.monoid.combine, self.monoid.identity
        mq, answers, capacity = self.mq, self.answers, self.capacity
        insert, query = mq.insert, mq.query
        is_bound, ends_at, size = self.is_bound, self.ends_at, points.size
        rounds = self.rounds
        k, part, empty = self.next_point, self.open, self.empty
        while True:
            p = points.point(k)
            if p > upto:
                break
            while i < n and ticks(starts[i]) < p:
                part = aggs[i] if part is _NO_PART else combine(part, aggs[i])
                i += 1
            pos = k % size
            if is_bound[pos]:
                value = identity if part is _NO_PART else part
                if rounds is not None and part is not _NO_PART and rounds(part):
                    raise Rounding(part)
                try:
                    insert(value)
                except Untyped:  # the typed twin cannot hold it (nothing changed): the object aggregator in its state
                    mq = self.mq = mq.to_object()
                    insert, query = mq.insert, mq.query
                    insert(value)
                if part is _NO_PART:
                    empty += 1
                else:
                    part = _NO_PART
                    empty = 0
            if p >= answer_from:
                for name, closed, open_part in ends_at[pos]:
                    value = query(closed) if closed else identity
                    if open_part and part is not _NO_PART:
                        value = combine(value, part) if closed else part
                    answers[(name, p)] = value
            k += 1
            if empty >= capacity and part is _NO_PART:
                # every window until the next slice holds no tuple: jump to the partial of that slice
                nxt = ticks(starts[i]) if i < n else upto + 1
                bound = self.bounds.point(self.bounds.count_upto(nxt) - 1)
                jump = points.count_upto(bound - 1)
                if jump > k:
                    mq.clear()
                    empty = 0
                    k = jump
        self.next_point, self.open, self.empty = k, part, empty
        if i:
            self.last_start = starts[i - 1]

    def passed(self, start: Any) -> bool:
        """Whether this group's state covers time ``start`` (its partials, or the open one)."""
        return self.next_point is not None and self.ticks(start) < self.points.point(self.next_point)


_MISSING = object()
#: the open partial of a group before a slice is folded into it (a slice's aggregate may be None: First, Last)
_NO_PART = object()


class SharedFinal(FinalAggregation):
    """Tumbling and sliding queries by the plan's groups; the others by ``fallback``."""

    name = "shared"

    def __init__(self, slices: TimeSlices, fallback: FinalAggregation,
                 planner: Callable[[dict[str, Any], float, bool], Any]) -> None:
        super().__init__(slices)
        self.fallback = fallback
        #: ``planner({name: (size, slide, offset) in ticks}, tuples per tick, may invert) -> plan`` with
        #: ``plan.groups`` of ``.queries`` (names), ``.partial`` and ``.final``
        self.planner = planner
        #: False once a subtracting group met a partial it would round: plans invert no more
        self.invert = True
        self.groups: dict[str, SharedGroup] = {}  # by query name
        self.ticks: Ticks | None = None
        self._queries: dict[str, Any] = {}
        self._plan: Any = None
        self._planned = True

    def configure(self, queries: dict[str, Any]) -> None:
        """Re-plan for the tumbling and sliding queries ``{name: Sliding}`` (leaders of equal ones),
        when next needed (adding queries one by one plans once)."""
        self._queries = dict(queries)
        self._planned = False
        self.groups = {}

    @property
    def plan(self) -> Any:
        if not self._planned:
            self._make_plan()
        return self._plan

    def _rate(self, ticks: Ticks) -> float:
        """Tuples per tick in the slices held (1.0 before there are any)."""
        slices = self.slices
        if not len(slices):
            return 1.0
        span = ticks(slices.ends[-1]) - ticks(slices.starts[0]) if slices.ends[-1] < math.inf else 0
        return max(sum(slices.counts) / span, 1e-9) if span > 0 else 1.0

    def _make_plan(self) -> None:
        self._planned = True
        self._plan = None
        self.groups = {}
        queries = self._queries
        if not queries:
            return
        ticks = self.ticks = Ticks([v for spec in queries.values() for v in (spec.size, spec.slide, spec.offset)])
        periodic = {}
        for name, spec in queries.items():
            slide = ticks.exact(spec.slide)  # the same windows for any offset modulo the slide
            periodic[name] = (ticks.exact(spec.size), slide, ticks.exact(spec.offset) % slide)
        plan = self.planner(periodic, self._rate(ticks), self.invert)
        notes = []
        for group in plan.groups:
            members = {name: periodic[name] for name in group.queries if name in periodic}
            if not members:
                continue
            period = math.lcm(*(slide for _, slide, _ in members.values()))
            if sum(period // slide for _, slide, _ in members.values()) * 2 > MAX_POINTS:
                notes.append(f"{', '.join(members)}: more than {MAX_POINTS} edges in a composite slide, "
                             "not shared (folded as final='auto' does)")
                continue
            shared = SharedGroup(self.monoid, self.slices, ticks, members, group.partial, group.final, self.invert)
            for name in members:
                self.groups[name] = shared
        if isinstance(plan, Plan):
            plan = dataclasses.replace(plan, unit=float(ticks.unit), notes=plan.notes + tuple(notes))
        self._plan = plan

    def prepare(self) -> None:
        if not self._planned:
            self._make_plan()

    def aggregate(self, query: str, i: int, j: int, again: bool = False, end: Any = None) -> Any:
        if not self._planned:
            self._make_plan()
        group = self.groups.get(query)
        if group is not None and not again and end is not None:
            try:
                value = group.answer(query, end)
            except Rounding:  # subtracting would round from here on: re-plan, this window folded
                self.invert = False
                self.configure(self._queries)
                value = _MISSING
            if value is not _MISSING:
                return value
        return self.fallback.aggregate(query, i, j, again, end)

    def changed(self, start: Any) -> None:
        for group in set(self.groups.values()):
            if group.passed(start):
                group.reset()
        self.fallback.changed(start)

    def dropped(self) -> None:
        self.fallback.dropped()

    def forget(self, query: str) -> None:
        self.fallback.forget(query)

    def advanced(self) -> None:
        for group in set(self.groups.values()):
            group.answers.clear()
        self.fallback.advanced()
