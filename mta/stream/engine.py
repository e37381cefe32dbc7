"""The Stream engine: many window queries over one stream, sharing slices (general stream slicing).

    s = Stream(Record(avg=Mean(), peak=Max()), allowed_lateness=5.0)
    s.add("1m", Sliding(60, 10))
    s.add("session", Session(gap=30))
    s.insert(ts, value)               # any order
    for r in s.advance(watermark):    # the windows the watermark closed, and updates
        r.query, r.start, r.end, r.value, r.final

How it works (the slicing paper's Fig. 7): tuples at or after the watermark wait,
unsorted, in ``pending``; ``advance`` sorts those the watermark passes (timsort on
nearly sorted data) and hands them in event-time order to the stores: the time slice
store (one combine per tuple, into the one slice that covers it; slice edges are the
edges of every query), one count store per group of count windows, and a tuple buffer
for forward-context-aware windows. Each query's runner then reports the windows the
watermark closed, using the final aggregation over slices. A late tuple (behind the
watermark, within the allowed lateness) goes straight into its slice, splitting,
shifting or recomputing slices as the decision trees of Figs. 4-6 say, and the
runners report the windows it changed at the next ``advance``.

Holding the tuples before the watermark unaggregated costs their memory, and buys:
exact results for any associative monoid without keeping tuples of every slice (a
non-commutative aggregate is only built in order), queries added at run time that
see every tuple from their start, and no slice work for out-of-order tuples that
arrive before the watermark (they are sorted, not shifted).
"""

from __future__ import annotations

import functools
import math
import numbers
from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any, Callable, Iterable

import numpy as np
from kvs import codec
from kvs.blocks import Backend
from kvs.base import MissingWindow
from kvs.urls import connect, normalise
from mta.arrays import as_list
from mta.monoid import Monoid
from mta.optimizer import PeriodicQuery, optimize
from mta.stream.counted import CountSlices
from mta.stream.edges import EdgeSet, first_needed
from mta.stream.fanout import close_windows
from mta.stream.final import FinalAggregation, final_aggregation
from mta.stream.shared import MAX_POINTS, SharedFinal
from mta.stream.queries import (CountRunner, PolicyRunner, PunctuationRunner, Result, Runner, SessionRunner,
                                SlidingRunner, _EveryRunner, runner_class)
from mta.stream import final_state, typed_ingest
from mta.stream.slices import TimeSlices
from mta.windows import WindowType

_INF = math.inf
_SNAPSHOT_VERSION = 3


_ts = itemgetter(0)  # a tuple's or result's sort key (C speed)


def _check_time(ts: Any) -> int | float:
    """``ts`` as an int or a float (a numpy integer or float scalar becomes one, as
    ``Window.insert`` takes it; bools are refused), checked finite."""
    if type(ts) is not int and type(ts) is not float:
        if isinstance(ts, bool) or not isinstance(ts, (numbers.Integral, float, np.floating)):
            raise TypeError(f"timestamp must be an int or a float, got {type(ts).__name__} {ts!r}")
        ts = int(ts) if isinstance(ts, numbers.Integral) else float(ts)
    if not math.isfinite(ts):
        raise ValueError(f"timestamp must be finite, got {ts!r}")
    return ts


class Stream:
    """One stream, many window queries (see the module docstring and ``mta.windows``).

    ``allowed_lateness``: how far behind the watermark a tuple is still taken (it then
    updates the windows it belongs to); older tuples are dropped, counted in
    :attr:`dropped` and passed to ``on_late(ts, value)``. ``final``: the final
    aggregation over slices: ``"auto"`` (fold windows of few slices, a FiBA tree
    over the slices for the others), ``"eager"`` (an Amortized MTA per query when nothing can be late, a FiBA
    tree over slices otherwise), ``"lazy"`` (fold the slices when a window ends),
    ``"amta"`` / ``"fiba"`` by name, or ``"shared"``: the tumbling and sliding queries are
    grouped by the multi-query optimizer (``optimizer``: ``"triweave"``, ``"weaveshare"``, or a
    callable ``(list of mta.optimizer.PeriodicQuery, tuples per tick) -> mta.optimizer.Plan``),
    each group's windows answered by a multi-query aggregator (:meth:`plan` explains it; the
    other queries are served as by ``"auto"``). ``ordered=True`` promises tuples in timestamp
    order (an older one is refused).

    Every call is all or nothing: bad input raises before anything changes.
    """

    def __init__(self, monoid: Monoid, *, allowed_lateness: float = 0, final: str = "auto",
                 on_late: Callable[[Any, Any], Any] | None = None, ordered: bool = False,
                 optimizer: str | Callable[[list], Any] = "triweave") -> None:
        if not isinstance(monoid, Monoid):
            raise TypeError(f"monoid must be an mta.Monoid, got {monoid!r}")
        if (isinstance(allowed_lateness, bool) or not isinstance(allowed_lateness, (int, float))
                or not 0 <= allowed_lateness < _INF):
            raise ValueError(f"allowed_lateness must be a finite number >= 0, got {allowed_lateness!r}")
        if not callable(optimizer) and optimizer not in ("triweave", "weaveshare"):
            raise ValueError(f"optimizer must be 'triweave', 'weaveshare' or a callable, got {optimizer!r}")
        if on_late is not None and not callable(on_late):
            raise TypeError(f"on_late must be callable(ts, value), got {on_late!r}")
        self.monoid = monoid
        self.allowed_lateness = allowed_lateness
        self.on_late = on_late
        self.ordered = ordered
        self.watermark: Any = -_INF
        self.horizon: Any = -_INF  # watermark - allowed_lateness: nothing older can come
        self.dropped = 0
        self._arrival = 0
        self._newest: Any = -_INF
        # (ts, arrival, partial, punctuation mask, value), ts >= watermark (values: for a
        # punctuation query added later)
        self._pending: list[tuple] = []
        self._runners: dict[str, Runner] = {}
        self._order = 0
        self.slices = TimeSlices(monoid, self._edges, keep_tuples=False)
        self._final_name = final
        self.optimizer = optimizer
        self.final: FinalAggregation = self._final()
        self._counts: dict[Any, CountSlices] = {}
        self.buffer_ts: list = []
        self.buffer_partials: list = []
        #: starts of the slices late tuples went into since the last advance (for the updates)
        self.late_slices: set = set()
        #: the typed ingest (compiled, built-in numeric monoids): in-order tuples waiting in C
        #: columns; they count as the pending tuples after those of ``_pending`` (which is
        #: empty while it takes tuples), with the arrival numbers from ``_arrival`` on
        self._ingest: typed_ingest.TypedIngest | None = None
        if typed_ingest.USE and typed_ingest.op_for(monoid) is not None:
            self._ingest = typed_ingest.TypedIngest(monoid, self._insert_object)
            self.insert = self._ingest.insert  # type: ignore[method-assign]
        self._configure()

    def _final(self) -> FinalAggregation:
        if self._final_name == "shared":
            final: FinalAggregation = SharedFinal(self.slices, final_aggregation("auto", self.slices, False),
                                                  self._plan_for)
        else:
            final = final_aggregation(self._final_name, self.slices, self.allowed_lateness == 0)
        self.slices.on_change = final.changed
        return final

    def _plan_for(self, queries: dict[str, tuple[int, int, int]], rate: float, invert: bool = True) -> Any:
        """The optimizer's plan for ``{name: (size, slide, offset)}`` in ticks, at ``rate`` tuples per tick;
        ``invert``: whether its techniques may subtract (a user's optimizer is taken as it plans)."""
        monoid = self.monoid
        if callable(self.optimizer):
            return self.optimizer([PeriodicQuery(name, *spec) for name, spec in queries.items()], rate)
        return _optimize(tuple(queries.items()), float(f"{rate:.2g}"), monoid.invertible and invert,
                         monoid.selection, monoid.commutative, monoid.ordered_ties, self.optimizer)

    def plan(self) -> Any:
        """How the tumbling and sliding queries share their final aggregation (``final="shared"``):
        the optimizer's groups, each with its partial and final technique and estimated cost;
        ``print(stream.plan())`` explains it. None for the other finals, or without such queries."""
        return getattr(self.final, "plan", None)

    # -- queries ---------------------------------------------------------------------

    @property
    def queries(self) -> dict[str, WindowType]:
        """The window queries by name, in the order they were added."""
        return {name: r.spec for name, r in self._runners.items()}

    def add(self, name: str, window: WindowType) -> None:
        """Add a window query; it sees the tuples from the current watermark on."""
        self._add(name, window, self.watermark)

    def _add(self, name: str, window: WindowType, begin: Any) -> Runner:
        self._flush_typed()
        if not isinstance(name, str) or not name:
            raise ValueError(f"a query name must be a non-empty string, got {name!r}")
        if name in self._runners:
            raise ValueError(f"query {name!r} exists already")
        cls = runner_class(window)
        used = {r.bit for r in self._runners.values() if isinstance(r, PunctuationRunner)}
        bit = next(1 << n for n in range(len(used) + 1) if 1 << n not in used)  # a free bit
        if cls is PunctuationRunner and self._pending:  # the tuples waiting are the new query's too
            marked = []
            for entry in self._pending:
                try:
                    marked.append(entry[3] | bit if window.predicate(entry[4]) else entry[3])
                except Exception as error:
                    raise ValueError(f"the predicate of punctuation query {name!r} raised {type(error).__name__}: "
                                     f"{error} (on value {entry[4]!r})") from error
            self._pending = [e[:3] + (m,) + e[4:] for e, m in zip(self._pending, marked)]
        if cls is CountRunner:
            self._counts.setdefault(begin, CountSlices(self.monoid, lambda p, b=begin: self._count_edge(b, p),
                                                       keep_tuples=self.allowed_lateness > 0))
        runner = (cls(name, window, begin, self._order, self, bit=bit) if cls is PunctuationRunner
                  else cls(name, window, begin, self._order, self))
        self._order += 1
        self._runners[name] = runner
        self._configure()
        if begin > -_INF and (isinstance(runner, SlidingRunner) or runner.aware):
            self.slices.cut(begin)  # no slice straddles the start of the new query's windows
            self.slices.reopen_last()
        return runner

    def remove(self, name: str) -> None:
        """Remove a query: no more results from it (KeyError if there is none)."""
        if name not in self._runners:
            raise KeyError(f"no query {name!r}")
        runner = self._runners.pop(name)
        self.final.forget(name)
        self._configure()
        if isinstance(runner, CountRunner) and runner.begin not in self._count_runners:
            del self._counts[runner.begin]

    def _configure(self) -> None:
        """Derive the per-tuple routing from the queries (Fig. 4: which stores keep tuples)."""
        runners = list(self._runners.values())
        self._sliding = [r for r in runners if isinstance(r, SlidingRunner)]
        # distinct context-free specs: their edges cut the slices (queries often repeat a window)
        self._cf = list({(r.spec.size, r.spec.slide, r.spec.offset): r.spec for r in self._sliding}.values())
        self._edge_set = EdgeSet(self._cf)
        # per context-free spec that may need the oldest slice (edges.first_needed), (lo, hi,
        # start): for a horizon in [lo, hi), the start of the first window ending after it
        # (what ``_retain`` keeps from)
        self._cf_first: list | None = None  # made at the first horizon asked
        self._cf_need: list[tuple] = []
        # Queries asking for the same windows from the same start are computed once, by the
        # first of them, and their results copied to the others (fusing equal queries).
        groups: dict = {}
        for r in runners:
            key = (r.spec.size, r.spec.slide, r.spec.offset, r.begin) if isinstance(r, SlidingRunner) else id(r)
            groups.setdefault(key, []).append(r)
        self._groups = list(groups.values())
        # every runner as (name, its group's index, first of its group), in query order, and
        # per group its runners' places in that order
        self._ranked = sorted(((r.name, g, k == 0) for g, group in enumerate(self._groups) for k, r in enumerate(group)),
                              key=lambda entry: self._runners[entry[0]].order)
        self._ranks: list[list[int]] = [[] for _ in self._groups]
        for place, (_, g, _) in enumerate(self._ranked):
            self._ranks[g].append(place)
        self.final.configure({g[0].name: g[0].spec for g in self._groups if isinstance(g[0], SlidingRunner)})
        self._aware = [r for r in runners if r.aware]
        self._time = bool(self._sliding or self._aware)
        self._every = [r for r in runners if isinstance(r, _EveryRunner)]
        self._count_runners: dict[Any, list[CountRunner]] = {}  # by the start of their count store
        for r in runners:
            if isinstance(r, CountRunner):
                self._count_runners.setdefault(r.begin, []).append(r)
        self._predicates = [(r.bit, r.spec.predicate, r.name) for r in runners if isinstance(r, PunctuationRunner)]
        punctuation = bool(self._predicates)
        self.slices.keep_tuples = self.allowed_lateness > 0 and (not self.monoid.commutative or punctuation)
        if not self._every:
            self.buffer_ts, self.buffer_partials = [], []
        # the typed ingest folds into the time slices only: no store or runner sees single tuples
        self._typed_release = (self._time and not self._aware and not self._counts and not self._every
                               and not self.slices.keep_tuples)
        self._retype()

    def _retype(self) -> None:
        """Let the typed ingest take tuples when nothing waits the object way (tuples in order
        after those waiting), from the newest tuple and the watermark on."""
        ingest = self._ingest
        if ingest is not None:
            ingest.live = not self._pending and not self._predicates
            ingest.set_floor(max(self.watermark, self._newest))

    def _absorb(self) -> None:
        """Hand the tuples waiting the object way back to the typed ingest when it takes them
        all: in arrival order, which is their timestamp order (after an out-of-order tuple or
        one of another kind was released, the stream goes on typed)."""
        ingest, pending = self._ingest, self._pending
        if ingest is None or not pending or ingest.n or self._predicates or not self._typed_release:
            return
        base = self._arrival - len(pending)
        if any(entry[1] != base + k for k, entry in enumerate(pending)):
            return
        ingest.set_floor(self.watermark)
        for entry in pending:  # sorted by timestamp by the advance's release
            if not ingest.take(entry[0], entry[4]):
                ingest.flush()
                return
        self._arrival = base
        pending.clear()

    def _flush_typed(self) -> None:
        """Move the tuples of the typed ingest to ``_pending`` (as the object path holds them)."""
        ingest = self._ingest
        if ingest is not None and ingest.n:
            arrival = self._arrival
            held = ingest.flush()
            self._pending.extend([(ts, arrival + k, partial, 0, value) for k, (ts, value, partial) in enumerate(held)])
            self._arrival = arrival + len(held)
            self._newest = max(self._newest, held[-1][0])

    def _edges(self, t: Any) -> tuple[Any, Any]:
        """The largest context-free window edge <= t and the smallest > t (:mod:`mta.stream.edges`)."""
        return self._edge_set.around(t)

    def _count_edge(self, begin: Any, p: int) -> int:
        """The next count-window edge after position p, for the count windows starting at begin."""
        nxt = _INF
        for r in self._count_runners[begin]:
            slide, size = r.spec.slide, r.spec.size
            nxt = min(nxt, (p // slide + 1) * slide, ((p + size) // slide + 1) * slide - size)
        return nxt

    def count_store(self, begin: Any) -> CountSlices:
        return self._counts[begin]

    def punctuation_at_watermark(self, bit: int) -> int | None:
        """The arrival number of a tuple waiting at exactly the watermark that is a punctuation
        of query ``bit`` (it closes the window before it, though it is sliced at the next
        advance), or None."""
        watermark = self.watermark
        for entry in self._pending:  # sorted by the advance that calls this
            if entry[0] != watermark:
                return None
            if entry[3] & bit:
                return entry[1]
        return None

    # -- tuples ------------------------------------------------------------------------

    def _mask(self, value: Any) -> int:
        mask = 0
        for bit, predicate, name in self._predicates:
            try:
                if predicate(value):
                    mask |= bit
            except Exception as error:
                raise ValueError(f"the predicate of punctuation query {name!r} raised {type(error).__name__}: "
                                 f"{error} (on value {value!r})") from error
        return mask

    def insert(self, ts: int | float, value: Any) -> bool:
        """Add one tuple; False if it was dropped as too late (see ``allowed_lateness``)."""
        if self._ingest is not None:
            return self._insert_object(ts, value)
        kind = type(ts)
        if not ((kind is int or (kind is float and -_INF < ts < _INF)) and not (self.ordered and ts < self._newest)):
            ts = self._check(ts, self._newest)
        partial = self.monoid.lift(value)
        mask = self._mask(value) if self._predicates else 0
        if ts < self.watermark:
            if ts < self.horizon:
                return self._drop(ts, value)
            self._late(ts, partial, mask)
        else:
            self._pending.append((ts, self._arrival, partial, mask, value))
        self._arrival += 1
        if ts > self._newest:
            self._newest = ts
        return True

    def _insert_object(self, ts: int | float, value: Any) -> bool:
        """:meth:`insert` the object way, on a stream with a typed ingest: its tuples go to
        ``_pending`` first; the ingest is set aside for the call (``Stream.insert`` would
        hand the tuple back to it)."""
        self._flush_typed()
        ingest, self._ingest = self._ingest, None
        try:
            return Stream.insert(self, ts, value)
        finally:
            self._ingest = ingest
            self._retype()

    def _check(self, ts: Any, newest: Any) -> int | float:
        """``ts`` checked (and converted: :func:`_check_time`) against the newest timestamp."""
        ts = _check_time(ts)
        if self.ordered and ts < newest:
            raise ValueError(f"timestamp {ts!r} is older than the newest, {newest!r}, in a stream "
                             "declared ordered=True")
        return ts

    def _drop(self, ts: Any, value: Any) -> bool:
        if self.on_late is not None:
            self.on_late(ts, value)
        self.dropped += 1
        return False

    def insert_many(self, updates: Iterable[tuple[int | float, Any]] | Any, values: Any = None) -> int:
        """Add ``(ts, value)`` pairs in order; return how many were taken. All or nothing:
        a bad pair raises (naming its index) before any is added. ``insert_many(timestamps,
        values)`` takes the batch as two columns (numpy or Arrow arrays, buffers, sequences:
        :func:`mta.arrays.as_list`); its errors name ``timestamps[i]`` or ``values[i]``."""
        if values is None:
            return self._insert_checked(self._check_batch(list(updates)))
        if self._ingest is not None and self._ingest.insert_columns(updates, values):
            return len(values)
        timestamps, values = as_list(updates, "timestamps"), as_list(values, "values")
        if len(timestamps) != len(values):
            raise ValueError(f"{len(timestamps)} timestamps for {len(values)} values")
        return self._insert_checked(self._check_columns(timestamps, values, lambda i, part: f"{part}[{i}]"))

    def _check_batch(self, updates: list, positions: list[int] | None = None) -> tuple[list, list, list, list]:
        """Validate, lift and mark a batch of pairs without changing anything: ``(timestamps,
        values, partials, masks)``. Errors name ``updates[i]``, i being ``positions[index]`` if
        given (the place in a larger batch)."""
        def where(index: int, part: str = "") -> str:
            return f"updates[{index if positions is None else positions[index]}]"

        for i, update in enumerate(updates):
            if type(update) is not tuple and type(update) is not list or len(update) != 2:
                raise TypeError(f"{where(i)}: expected a (timestamp, value) pair, got {update!r}")
        return self._check_columns([u[0] for u in updates], [u[1] for u in updates], where)

    def _check_columns(self, timestamps: list, values: list,
                       where: Callable[[int, str], str]) -> tuple[list, list, list, list]:
        """:meth:`_check_batch` of a batch in columns; ``where(i, "timestamps" or "values")``
        names update i in the errors."""
        self._flush_typed()
        newest = self._newest
        converted = False
        for i, ts in enumerate(timestamps):
            kind = type(ts)
            if not ((kind is int or (kind is float and -_INF < ts < _INF)) and not (self.ordered and ts < newest)):
                try:
                    checked = self._check(ts, newest)
                except (TypeError, ValueError) as error:
                    raise type(error)(f"{where(i, 'timestamps')}: {error}") from None
                if checked is not ts:  # a numpy scalar: into a copy of the column (maybe the caller's list)
                    if not converted:
                        timestamps, converted = list(timestamps), True
                    timestamps[i] = ts = checked
            if ts > newest:
                newest = ts
        try:
            partials = self.monoid.lift_many(values)
        except (TypeError, ValueError):
            for i, value in enumerate(values):
                try:
                    self.monoid.lift(value)
                except (TypeError, ValueError) as error:
                    raise type(error)(f"{where(i, 'values')}: {error}") from None
            raise
        masks = [0] * len(values)
        if self._predicates:
            for i, value in enumerate(values):
                try:
                    masks[i] = self._mask(value)
                except ValueError as error:
                    raise ValueError(f"{where(i, 'values')}: {error}") from error.__cause__
        return timestamps, values, partials, masks

    def _insert_checked(self, checked: tuple[list, list, list, list]) -> int:
        """Insert a batch from :meth:`_check_batch` (nothing can fail any more but ``on_late``)."""
        if self._ingest is not None:
            self._flush_typed()
            try:
                return self._insert_batch(checked)
            finally:
                self._retype()
        return self._insert_batch(checked)

    def _insert_batch(self, checked: tuple[list, list, list, list]) -> int:
        timestamps, values, partials, masks = checked
        taken = 0
        pending, watermark, arrival = self._pending, self.watermark, self._arrival
        for ts, value, partial, mask in zip(timestamps, values, partials, masks):
            if ts >= watermark:
                pending.append((ts, arrival, partial, mask, value))
            elif ts < self.horizon:
                self._drop(ts, value)
                continue
            else:
                self._arrival = arrival
                self._late(ts, partial, mask)
            arrival += 1
            taken += 1
        self._arrival = arrival
        if timestamps:
            self._newest = max(self._newest, max(timestamps))
        return taken

    def _late(self, ts: Any, partial: Any, mask: int) -> None:
        """A tuple behind the watermark, within the allowed lateness: into its slices now."""
        if self._time:
            for r in self._aware:
                r.observe_late(ts, mask, self._arrival)
            start = self.slices.insert_late(ts, partial)
            if self._sliding:
                self.late_slices.add(start)
        for begin, store in self._counts.items():
            if ts >= begin:
                position = store.insert_late((ts, self._arrival), partial)
                for r in self._count_runners[begin]:
                    r.on_late(position)
        if self._every:
            i = bisect_right(self.buffer_ts, ts)
            self.buffer_ts.insert(i, ts)
            self.buffer_partials.insert(i, partial)
            for r in self._every:
                if ts >= r.begin:
                    r.on_late(ts)

    # -- watermarks ------------------------------------------------------------------------

    def advance(self, watermark: int | float) -> list[Result]:
        """Move the watermark (a smaller one changes nothing) and return the results: first
        the updates of windows reported before, then the windows it closed, each sorted
        by (end, query order, start)."""
        if type(watermark) is not int and type(watermark) is not float:
            # a numpy scalar becomes an int or a float, as a timestamp does (_check_time)
            if isinstance(watermark, bool) or not isinstance(watermark, (numbers.Integral, float, np.floating)):
                raise TypeError(f"watermark must be an int or a float, got {watermark!r}")
            watermark = int(watermark) if isinstance(watermark, numbers.Integral) else float(watermark)
        if watermark != watermark:
            raise ValueError(f"watermark must not be NaN, got {watermark!r}")
        self.final.prepare()  # may raise (a plan the monoid cannot run): before anything changes
        if self._ingest is not None and (self._pending or not self._typed_release):
            self._flush_typed()
        prev = self.watermark
        if watermark > prev:
            self.watermark = watermark
            self.horizon = watermark - self.allowed_lateness
        self._release(self.watermark)
        results = close_windows(self._groups, self._ranked, self._ranks, prev, self.watermark,
                                self.late_slices)
        self.late_slices.clear()
        self.final.advanced()
        if watermark > prev:
            self._retain()
        self._absorb()
        self._retype()
        return results

    def _release(self, watermark: Any) -> None:
        """Hand the pending tuples older than ``watermark`` to the stores, in event-time order."""
        pending = self._pending
        if self._ingest is not None and self._ingest.n and not pending:  # in order: no sort
            k, newest = self._ingest.release(watermark, self.slices, self.monoid.combine)
            if k:
                self._arrival += k
                self._newest = max(self._newest, newest)
            return
        if not pending:
            return
        pending.sort(key=_ts)  # stable: equal timestamps stay in arrival order
        # Strictly older than the watermark: slices never hold a tuple at or after it, so a
        # query added now starts its windows at an edge that splits no slice.
        k = bisect_left(pending, watermark, key=_ts)
        if not k:
            return
        ready = pending[:k]
        del pending[:k]
        if self._time:
            append = self.slices.append
            aware = self._aware
            if aware:
                # Each run of equal timestamps is observed before it is sliced, so that a
                # punctuation cuts its slice before the tuples of its own timestamp.
                n, i = len(ready), 0
                while i < n:
                    ts = ready[i][0]
                    j = i
                    while j < n and ready[j][0] == ts:
                        for r in aware:
                            r.observe(ts, ready[j][3], ready[j][1])
                        j += 1
                    for entry in ready[i:j]:
                        append(ts, entry[2])
                    i = j
            else:
                for entry in ready:
                    append(entry[0], entry[2])
        for begin, store in self._counts.items():
            append = store.append
            for entry in ready:
                if entry[0] >= begin:
                    append((entry[0], entry[1]), entry[2])
        if self._every:
            self.buffer_ts.extend([e[0] for e in ready])
            self.buffer_partials.extend([e[2] for e in ready])

    def _retain(self) -> None:
        """Forget what no window can need any more (the horizon: watermark - lateness)."""
        horizon = self.horizon
        if self._time:
            need = min(self._cf_needed(horizon) + [r.needed_from(horizon) for r in self._aware
                                                   if not isinstance(r, SessionRunner)], default=_INF)
            # sessions fold what only they still need into a prefix of their oldest session
            need = min([need] + [r.needed_from(horizon, need) for r in self._aware if isinstance(r, SessionRunner)])
            if self.slices.drop_before(need):
                self.final.dropped()
            self.slices.release_tuples(horizon)
        elif len(self.slices):
            self.slices.drop_before(_INF)
            self.final.dropped()
        for begin, store in self._counts.items():
            size = max(r.spec.size for r in self._count_runners[begin])
            position = store.position_of(horizon)
            store.drop_before(position - size)
            store.release_tuples(position)
        if self._every:
            for r in self._every:
                if isinstance(r, PolicyRunner):
                    r.advance_to(horizon)
            for r in self._every:
                r.needed_from(horizon)
            keep = min(r.needed_index(horizon) for r in self._every)
            del self.buffer_ts[:keep]
            del self.buffer_partials[:keep]

    def _cf_needed(self, horizon: Any) -> list:
        """Per spec of ``_cf_first``, the start of its first window ending after ``horizon``; each
        recomputed only when the horizon left the span between the window ends around it."""
        if self._cf_first is None:
            self._cf_first = first_needed(self._cf)
            self._cf_need = [(_INF, -_INF, None)] * len(self._cf_first)
        if horizon == _INF:
            return [_INF] * len(self._cf_first)
        needs = self._cf_need
        for n, (lo, hi, _) in enumerate(needs):
            if not lo <= horizon < hi:
                spec = self._cf_first[n]
                k = spec.first_ending_after(horizon)  # end(k - 1) <= horizon < end(k)
                needs[n] = (spec.end(k - 1), spec.end(k), spec.start(k))
        return [start for _, _, start in needs]

    def idle(self) -> bool:
        """True when nothing is held: no tuple, slice or window context (a keyed stream then
        drops the key's state)."""
        return (not self._pending and not (self._ingest is not None and self._ingest.n) and not len(self.slices)
                and not self.buffer_ts and not self.late_slices and not any(store.n for store in self._counts.values())
                and all(r.idle() for r in self._runners.values()))

    # -- state ---------------------------------------------------------------------------

    def _fingerprint(self) -> list:
        return [repr(self.monoid), self.allowed_lateness, [[name, repr(r.spec)] for name, r in self._runners.items()]]

    def snapshot(self) -> bytes:
        """The whole state as bytes (partials through ``kvs.codec``: user types need a codec).

        The final aggregation's structures are not in it (they would have to be a pickle, and
        bytes from a store are not trusted with one): :meth:`restore` rebuilds them from the
        slices, which gives the same answers for ints and for ``final="lazy"``; the others may
        combine float slices in another order (last bits). ``pickle.dumps(stream)`` carries
        them (:mod:`mta.stream.final_state`): an unpickled stream answers bit for bit."""
        self._flush_typed()
        self._retype()
        return codec.pack([
            _SNAPSHOT_VERSION, self._fingerprint(), self.watermark, self.horizon, self.dropped, self._arrival,
            self._newest, self._order, self._pending, self.slices.state(), sorted(self.late_slices),
            [[begin, store.state()] for begin, store in self._counts.items()],
            [self.buffer_ts, self.buffer_partials],
            [[name, r.begin, r.order, getattr(r, "bit", 0), r.state()] for name, r in self._runners.items()],
        ])

    def restore(self, data: bytes) -> None:
        """Continue from :meth:`snapshot` bytes. This stream must have the same monoid,
        allowed lateness and queries (names and windows, in the same order)."""
        self._restore(data, None)

    def _restore(self, data: bytes, final_data: bytes | None) -> None:
        """:meth:`restore`, and the final aggregation's structures from ``final_data``
        (:func:`final_state.dump`'s, which only a pickle of the stream carries) when given."""
        state = codec.unpack(data)
        if not isinstance(state, tuple) or len(state) != 14 or state[0] != _SNAPSHOT_VERSION:
            raise ValueError("not a Stream snapshot (or one of another version)")
        fingerprint = _listify(state[1])
        if fingerprint != self._fingerprint():
            raise ValueError(f"the snapshot is of a stream {fingerprint!r}; this one is {self._fingerprint()!r}")
        # the pickled final over this stream's slices and monoid, loaded first: a refused one
        # (pickle.UnpicklingError) leaves this stream as it was
        final = final_state.load(self, final_data) if final_data is not None else None
        if self._ingest is not None:
            self._ingest.flush()  # the snapshot's tuples replace them
        (_, _, self.watermark, self.horizon, self.dropped, self._arrival, self._newest, self._order, pending,
         slices, late_slices, counts, buffer, runners) = state
        order_next = self._order
        old = self._runners
        self._runners, self._counts = {}, {}
        for (name, begin, order, bit, _) in runners:
            runner = self._add(name, old[name].spec, begin)
            runner.order = order
            if bit:
                runner.bit = bit  # the waiting tuples' marks use the bits of the saved stream
        self._order = order_next
        self._pending = [tuple(e) for e in pending]
        self.slices.load(slices)
        self.late_slices = set(late_slices)
        self.final = self._final()
        self.buffer_ts, self.buffer_partials = list(buffer[0]), list(buffer[1])
        for begin, store_state in counts:
            self._counts[begin].load(store_state)
        for (name, _, _, _, runner_state) in runners:
            self._runners[name].load(runner_state)
        self._configure()
        if final is not None:  # the structures as they were: the same combine order (floats bit for bit)
            self.final = final
            self.slices.on_change = final.changed

    def __reduce__(self) -> tuple:
        # pickle and copy.deepcopy, the same on both paths: the options, the queries, the
        # snapshot and the final's structures (the typed ingest and the compiled stores have no
        # pickle form of their own); the copy holds no stored stream (save/load)
        options = {"allowed_lateness": self.allowed_lateness, "final": self._final_name, "on_late": self.on_late,
                   "ordered": self.ordered, "optimizer": self.optimizer}
        return _unpickled, (self.monoid, options, [(name, r.spec) for name, r in self._runners.items()], self.snapshot(),
                            final_state.dump(self))

    def save(self, store: Backend | str, stream_id: str) -> None:
        """Write the state to a ``kvs`` backend (or URL) as ``stream_id``, all or nothing.

        The first save creates it there and holds it: this stream is its one writer until
        :meth:`close` (another stream's :meth:`load` meets ``kvs.WindowBusy`` meanwhile, and
        with ``take_over`` fences this one: its next save raises ``kvs.WindowFenced``)."""
        level_store = getattr(self, "_store", None)
        if level_store is None or self._store_id != stream_id:
            backend = store if isinstance(store, Backend) else connect(store)
            lease = backend.create(stream_id, {"kind": "stream", "monoid": repr(self.monoid),
                                               "queries": self._fingerprint()[2]})
            self._store, self._store_id = backend.store(stream_id, lease), stream_id
        self._store.commit(self.snapshot())

    def load(self, store: Backend | str, stream_id: str, *, take_over: bool = False) -> None:
        """Continue from the state saved as ``stream_id``; this stream becomes its writer."""
        if not isinstance(store, Backend) and normalise(store) == "memory://":
            raise MissingWindow(f"cannot load stream {stream_id!r} from 'memory://': bare memory:// is a new empty "
                                "store each time; use memory://NAME to share one within a process (or pass the "
                                "backend object of one kvs.connect('memory://') to save and load)")
        backend = store if isinstance(store, Backend) else connect(store)
        level_store = backend.store(stream_id, take_over=take_over)
        try:
            data = level_store.load()
            if data is None:
                raise ValueError(f"stream {stream_id!r} has no saved state")
            self.restore(data)
        except BaseException:
            level_store.release()
            raise
        self._store, self._store_id = level_store, stream_id

    def close(self) -> None:
        """Give up the stored stream (if :meth:`save` or :meth:`load` opened one): others may open it."""
        level_store = getattr(self, "_store", None)
        if level_store is not None:
            level_store.release()
            self._store = None

    def __repr__(self) -> str:
        return (f"Stream({self.monoid!r}, allowed_lateness={self.allowed_lateness!r}, "
                f"queries={list(self._runners)!r}, watermark={self.watermark!r})")


def _unpickled(monoid: Monoid, options: dict, queries: list, snapshot: bytes, final: bytes | None) -> Stream:
    """The Stream that :meth:`Stream.__reduce__` pickled."""
    stream = Stream(monoid, **options)
    for name, window in queries:
        stream.add(name, window)
    stream._restore(snapshot, final)
    return stream


@functools.lru_cache(maxsize=256)  # every key of a KeyedStream plans the same queries
def _optimize(queries: tuple, rate: float, invertible: bool, selection: bool, commutative: bool,
              ordered_ties: bool, method: str) -> Any:
    return optimize([PeriodicQuery(name, *spec) for name, spec in queries], rate, invertible=invertible,
                    selection=selection, commutative=commutative, ordered_ties=ordered_ties, method=method,
                    max_edges=MAX_POINTS)


def _listify(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_listify(v) for v in value]
    return value
