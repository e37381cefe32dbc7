"""One key's streaming state between micro-batches: its slices, and Spark's late rule for
several sliding/tumbling queries that share them.

A *slice* is the partial of the key's events in one pane, ``[origin + k*P, origin + (k+1)*P)``
with ``P``/``origin`` from :func:`mta.columnar.windows.grid`, so every window of every query
is a run of whole panes. The state is the sorted pane indices ``k`` of the held slices, one
:data:`Columns` per aggregation (a row per slice), ``done`` (the last ``until``: windows
ending at or before it are closed) and the late counts per query.

Spark's rule (see :mod:`spark_integration.streaming`; the adapter calls ``advance(W[n-1])``,
``add(events)``, ``advance(W[n])`` per micro-batch):

- an event counts in each window of a query that contains it and ends after ``done``; it
  is *late for the query* when every such window ended at or before ``done``, and dropped
  when late for every query. An event late for some queries only joins its slice anyway:
  the closed windows that read that slice are never reported again, the open ones take it.
- ``advance(until)`` reports each window with ``done < end <= until`` holding a slice
  (each window once: ``done`` only grows), then drops the slices no open window reads.

In pane units, with ``D = floor((done - origin) / P)``, a query (``size``, ``step`` panes,
windows starting at ``j ≡ phase (mod step)``) has its first open window at ``j0 =
align_up(D - size + 1)``; since ``size >= step`` every pane lies in a window, and pane
``k`` is late for the query exactly when ``k < j0``.

A query's windows to report are folded from the held slices by :func:`sliding` (O(slices +
windows)) or, when they read few slices (a key's usual micro-batch), by one ``Kind.reduce``
over their gathered slices: far fewer numpy calls. Everything is numpy over arrays: no
Python loop over events, slices or windows (the loops are over queries and aggregations).

``seq`` must grow across calls (arrival order over the whole stream, e.g. batch id and row):
same-time ties of ``first``/``last``/``min_by``/``max_by`` are decided by it when a batch's
slice merges into a held one.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from kvs import codec
from mta.columnar.kinds import Columns, Kind
from mta.columnar.windows import Windows, in_panes, rows, sliding

_FORMAT = 1  # snapshot layout version
#: (a, b): report windows by gathering their slices (KeyState._gather) while the windows and the
#: gathered rows number at most a * (slices + windows) + b; else by sliding() (O(slices + windows)).
_GATHER = (4, 64)


def _concat(parts: Sequence[Columns]) -> Columns:
    """The rows of ``parts`` one after the other (numpy promotes dtypes: int64 and Python-int
    object sums give object)."""
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _align_up(x: int, step: int, phase: int) -> int:
    """The smallest ``j >= x`` with ``j ≡ phase (mod step)``."""
    return x + (phase - x) % step


def _time_order(times: np.ndarray, seq: np.ndarray) -> np.ndarray | None:
    """The permutation sorting rows by (time, seq); None when they already are."""
    if np.all(seq[1:] > seq[:-1]):  # rows in arrival order: a stable sort by time keeps it
        return None if np.all(times[1:] >= times[:-1]) else np.argsort(times, kind="stable")
    return np.lexsort((seq, times))


def _pack_array(array: np.ndarray) -> tuple:
    # Numeric/bool arrays as raw buffers; object arrays (Python ints beyond int64, strings,
    # None) element by element through kvs.codec.
    if array.dtype == object:
        return ("O", tuple(array.tolist()))
    return (array.dtype.str, array.tobytes())


def _unpack_array(packed: tuple) -> np.ndarray:
    dtype, data = packed
    if dtype == "O":
        return np.fromiter(data, dtype=object, count=len(data))
    return np.frombuffer(data, dtype=np.dtype(dtype)).copy()  # writable, owns its memory


class KeyState:
    """One key's slices and late rule for ``queries`` (``("sliding", size, slide, offset)`` in
    µs; tumbling: ``size == slide``), whose window edges all lie on ``origin + k*pane``.
    ``data``: a :meth:`snapshot` to resume from (of the same kinds, queries and grid)."""

    def __init__(self, kinds: list[Kind], queries: list[tuple], pane: int, origin: int,
                 data: bytes | None = None) -> None:
        self.kinds, self.pane, self.origin = list(kinds), int(pane), int(origin)
        self.queries = [(q[0], *map(int, q[1:])) for q in queries]
        #: Per query, in panes: (size, step, phase).
        self._shapes: list[tuple[int, int, int]] = []
        for query in self.queries:
            if query[0] != "sliding" or len(query) != 4:
                raise ValueError(f"KeyState takes ('sliding', size, slide, offset) queries, not {query!r}")
            self._shapes.append(in_panes(query, self.pane, self.origin))
        #: Pane indices of the held slices (sorted, unique), and their partials per aggregation.
        self.panes = np.empty(0, np.int64)
        self.cols: list[Columns] | None = None  # None until the first event (dtypes unknown)
        #: Windows ending at or before this time are closed (an int, or -inf before any advance()).
        self.done: int | float = -math.inf
        self.late: list[int] = [0] * len(self.queries)
        if data is not None:
            self._restore(data)

    # ------------------------------------------------------------------ the late rule

    def _first_open(self) -> list[int | float | None]:
        """Per query, the start pane of its first window ending after ``done`` (None: every
        window is open)."""
        if self.done == -math.inf:
            return [None] * len(self._shapes)
        if self.done == math.inf:
            return [math.inf] * len(self._shapes)  # advance(inf) closed every window
        d = (self.done - self.origin) // self.pane
        return [_align_up(d - size + 1, step, phase) for size, step, phase in self._shapes]

    def add(self, times: np.ndarray, seq: np.ndarray, cols: list[Columns], events: np.ndarray | None = None
            ) -> np.ndarray:
        """Fold events (``times`` µs, arrival ``seq``, per aggregation its lifted Columns, one
        row per event, any order) into the key's slices; return the mask of the rows late
        for every query (dropped). ``late`` counts per query the events late for it.

        A row may also be a partial of several events of one pane (folded before, e.g. per
        micro-batch partition: order-free kinds only, ``seq`` then orders nothing); ``events``
        gives each row's event count for ``late`` (default: one per row)."""
        times = np.asarray(times, np.int64)
        seq = np.asarray(seq, np.int64)
        if len(times) == 0:
            return np.zeros(0, bool)
        panes = (times - self.origin) // self.pane
        if self.done == -math.inf:
            late = np.zeros(len(times), bool)  # nothing closed yet
        else:
            late_q = panes < np.array(self._first_open())[:, None]  # (query, event): late for the query
            more = late_q.sum(axis=1) if events is None else late_q @ np.asarray(events, np.int64)
            self.late = [count + int(m) for count, m in zip(self.late, more)]
            late = late_q.all(axis=0)
            if late.any():
                keep = ~late
                times, seq, panes = times[keep], seq[keep], panes[keep]
                cols = [rows(c, keep) for c in cols]
                if len(times) == 0:
                    return late
        # Fold the batch by pane: rows in (time, seq) order (so in pane order: panes grow with
        # time), one segment per pane. Rows usually come in arrival (seq) order, often in time too.
        order = _time_order(times, seq)
        if order is not None:
            panes, cols = panes[order], [rows(c, order) for c in cols]
        change = panes[1:] != panes[:-1]
        if not change.all():  # else each event is its pane's slice: lifted rows are partials
            starts = np.concatenate(([0], np.flatnonzero(change) + 1))
            cols = [kind.reduce(c, starts) for kind, c in zip(self.kinds, cols)]
            panes = panes[starts]
        self._merge(panes, cols)
        return late

    def _merge(self, panes: np.ndarray, new: list[Columns]) -> None:
        """Merge a batch's slices (sorted unique ``panes``) into the held ones."""
        held = self.panes
        if self.cols is None or len(held) == 0:
            self.panes, self.cols = panes, new
            return
        if panes[0] > held[-1]:  # in order: appended
            self.panes = np.concatenate([held, panes])
            self.cols = [_concat([h, n]) for h, n in zip(self.cols, new)]
            return
        at = np.minimum(np.searchsorted(held, panes), len(held) - 1)
        same = held[at] == panes  # the batch's slices whose pane is held
        old = np.ones(len(held), bool)
        old[at[same]] = False  # held slices that stay as they are
        fresh = ~same
        cols = []
        for kind, h, n in zip(self.kinds, self.cols, new):
            # The held slice arrived first: merge(held, new); first/last/min_by/max_by decide by (t, seq).
            merged = kind.merge(rows(h, at[same]), rows(n, same))
            cols.append(_concat([rows(h, old), merged, rows(n, fresh)]))
        all_panes = np.concatenate([held[old], panes[same], panes[fresh]])
        order = np.argsort(all_panes, kind="stable")
        self.panes = all_panes[order]
        self.cols = [rows(c, order) for c in cols]

    # ------------------------------------------------------------------ reporting

    def advance(self, until: int | float) -> list[Windows]:
        """Report, per query, every window with ``done < end <= until`` that holds an event
        (start/end in µs, group 0, sorted by start), close the windows ending at or before
        ``until`` and drop the slices no open window reads."""
        if until <= self.done:
            return [self._empty() for _ in self.queries]  # every window ending by then is closed
        first_open = self._first_open()
        if until == math.inf:
            last = None  # every window ends by then
        else:
            last = (math.floor(until) - self.origin) // self.pane  # windows end at pane <= last
        out = [self._report(q, first, last) for q, first in enumerate(first_open)]
        self.done = until if not math.isfinite(until) else math.floor(until)
        if len(self.panes):
            cut = int(np.searchsorted(self.panes, min(self._first_open())))
            if cut:
                self.panes = self.panes[cut:]
                self.cols = [rows(c, slice(cut, None)) for c in self.cols]
        return out

    def _report(self, q: int, first: int | float | None, last: int | None) -> Windows:
        """Query ``q``'s windows starting at pane >= ``first`` and ending at pane <= ``last``
        (None: no bound) that hold a slice."""
        earliest = self._earliest_end(q, first)
        if earliest is None or last is not None and earliest > last:
            return self._empty()  # nothing to report (a batch's first advance(), usually): no folding
        size, step, phase = self._shapes[q]
        panes = self.panes
        lo = 0 if first is None else int(np.searchsorted(panes, first))
        hi = len(panes) if last is None else int(np.searchsorted(panes, last))
        # The window starts from the first one holding a slice (aligned) up to the last one to
        # report (the start of the last slice's window, or of the last window ending by `last`).
        begin = earliest - size
        final = int(panes[hi - 1]) if last is None else last - size
        gathered = self._gather(lo, hi, np.arange(begin, final + 1, step), size) \
            if (final - begin) // step + 1 <= _GATHER[0] * (hi - lo) + _GATHER[1] else None
        if gathered is not None:
            start, cols = gathered
        else:
            sub = slice(lo, hi)
            w = sliding(self.kinds, [rows(c, sub) for c in self.cols], np.zeros(hi - lo, np.int64), panes[sub],
                        size, step, phase)
            # Windows reaching past the read panes are cut short (end > last) or closed (start < first).
            keep = (w.start >= begin) & (w.start <= final)
            start, cols = w.start[keep], [rows(c, keep) for c in w.cols]
        return Windows(group=np.zeros(len(start), np.int64), start=self.origin + start * self.pane,
                       end=self.origin + (start + size) * self.pane, cols=cols)

    def _gather(self, lo: int, hi: int, starts: np.ndarray, size: int) -> tuple[np.ndarray, list[Columns]] | None:
        """The windows ``[s, s + size)`` (``starts`` in panes) holding one of the slices ``lo:hi``,
        each folded from the slices it reads (``Kind.reduce`` over the gathered rows): fewer numpy
        calls than :func:`sliding` when windows read few slices, the usual micro-batch of a key.
        None when the gathered rows would outnumber ``_GATHER``'s bound (sliding is then cheaper)."""
        panes = self.panes[lo:hi]
        first, past = np.searchsorted(panes, starts), np.searchsorted(panes, starts + size)
        some = past > first
        starts, first, past = starts[some], first[some], past[some]
        lengths = past - first
        offsets = np.cumsum(lengths) - lengths
        total = int(offsets[-1] + lengths[-1])
        if total > _GATHER[0] * (hi - lo + len(starts)) + _GATHER[1]:
            return None
        picked = lo + np.arange(total) + np.repeat(first - offsets, lengths)
        return starts, [kind.reduce(rows(c, picked), offsets) for kind, c in zip(self.kinds, self.cols)]

    def _empty(self) -> Windows:
        """No windows (partials with the held dtypes once events came; object before)."""
        if self.cols is not None:
            cols = [rows(c, slice(0)) for c in self.cols]
        else:
            cols = [{name: np.empty(0, object) for name in kind.fields} for kind in self.kinds]
        empty = np.empty(0, np.int64)
        return Windows(group=empty, start=empty, end=empty, cols=cols)

    def next_report(self) -> int | None:
        """The smallest ``until`` at which :meth:`advance` reports a window (None: none before
        more events): the earliest end among the open windows holding a slice."""
        ends = [self._earliest_end(q, first) for q, first in enumerate(self._first_open())]
        ends = [end for end in ends if end is not None]
        return self.origin + min(ends) * self.pane if ends else None

    def _earliest_end(self, q: int, first: int | float | None) -> int | None:
        """The end pane of query ``q``'s earliest window starting at pane >= ``first`` that holds
        a slice (None: none)."""
        at = 0 if first is None else int(np.searchsorted(self.panes, first))
        if at == len(self.panes):
            return None  # only closed windows read the held slices
        size, step, phase = self._shapes[q]
        start = _align_up(int(self.panes[at]) - size + 1, step, phase)  # the oldest window holding it
        return (start if first is None else max(start, first)) + size

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> bytes:
        """The state as bytes (numeric arrays as raw buffers, object arrays through
        ``kvs.codec``): ``KeyState(..., data=snapshot())`` restores it exactly."""
        cols = None if self.cols is None else tuple(
            {name: _pack_array(array) for name, array in c.items()} for c in self.cols)
        return codec.pack({"format": _FORMAT, "grid": (self.pane, self.origin, tuple(self.queries)),
                           "kinds": tuple(kind.name for kind in self.kinds), "panes": _pack_array(self.panes),
                           "cols": cols, "done": self.done, "late": tuple(self.late)})

    def _restore(self, data: bytes) -> None:
        state = codec.unpack(data)
        if state.get("format") != _FORMAT:
            raise ValueError(f"not a KeyState snapshot of format {_FORMAT}")
        if state["grid"] != (self.pane, self.origin, tuple(self.queries)) or \
                state["kinds"] != tuple(kind.name for kind in self.kinds):
            raise ValueError("this KeyState snapshot was taken for other queries, grid or aggregations")
        self.panes = _unpack_array(state["panes"])
        self.cols = None if state["cols"] is None else [
            kind.restored({name: _unpack_array(array) for name, array in c.items()})
            for kind, c in zip(self.kinds, state["cols"])]
        self.done = state["done"]
        self.late = list(state["late"])
