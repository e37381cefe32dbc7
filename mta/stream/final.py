"""The final aggregation step: combining a window's slices into its aggregate (paper Fig. 7, step 3).

One small interface, :class:`FinalAggregation`, so that the multi-query algorithms can
serve it later. The engine asks for the aggregate of the slices ``i:j`` of its
:class:`~mta.stream.slices.TimeSlices` (a window's run of slices), and tells the final
aggregation when a slice changed out of order (``changed``) or old slices were
dropped (``dropped``). In-order appends change only the newest slice, which a session's
window may end inside (its gap): the eager stores never hold the newest slice, and late
tuples and splits, which change the others, are reported.

- ``lazy``: fold the slices when the window ends (the paper's lazy slicing).
- ``fiba``: a FiBA tree over the slices, keyed by slice start; a window is one range
  query, O(log n) for n slices, and a changed slice one delete and insert (eager slicing).
- ``auto`` (the default): fold windows of up to 16 slices, ``fiba`` for longer ones (one
  tree for every query: an AMTA per query pays each slice once per query).
- ``amta``: one Amortized MTA per query, fed the slices in order and evicting those
  that left the window: O(1) amortized combines per slice and query, for streams in
  order; a changed slice inside it, or a window that is not the next one, rebuilds it.

The trees and AMTAs are typed (:mod:`mta.algorithms.typed_fiba`, :mod:`mta.algorithms.typed_amta`:
C columns, compiled) when the typed cores are in use and serve the monoid (chosen once, by
:attr:`FinalAggregation.typed`, and built by :meth:`FinalAggregation.structure`); each call on
one goes through :func:`call`, which demotes it to its object twin, in the same state, on
the first partial or key it cannot hold (``Untyped``, raised before anything changed) and
makes the call again there. The twins combine in the same order, so the results are the
object structures', floats bit for bit. :meth:`FinalAggregation.fold` adds Sum's and Mean's
slices up in a C loop on the typed path (:mod:`mta.stream.typed_fold`: ``reduce``'s result).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from typing import Any, ClassVar

from mta.algorithms import typed, typed_record
from mta.algorithms.amta import AmortizedMTA
from mta.algorithms.fiba import FiBA
from mta.algorithms.typed_amta import TypedAMTA
from mta.algorithms.typed_record_fiba import typed_tree
from mta.monoid import Mean, Sum
from mta.stream.slices import TimeSlices
from mta.stream.typed_fold import add_range

#: FiBA's arity here: fewer combines per range query than 16.
_ARITY = 4


def call(slot: list, method: str, *args: Any) -> Any:
    """``slot[0].method(*args)``; a typed ``slot[0]`` that cannot take it (``Untyped``, raised
    before any change) is replaced by its object twin in the same state, which takes it."""
    try:
        return getattr(slot[0], method)(*args)
    except typed.Untyped:
        slot[0] = slot[0].to_object()
        return getattr(slot[0], method)(*args)


class FinalAggregation(ABC):
    """Window aggregates from the slices of one :class:`TimeSlices`."""

    name: ClassVar[str]

    def __init__(self, slices: TimeSlices) -> None:
        self.slices = slices
        self.monoid = slices.monoid
        #: whether new trees and AMTAs are the typed twins (the typed cores are in use and serve
        #: the monoid, or every field of a Record)
        self.typed = typed.USE and (typed.serves(self.monoid) or typed_record.serves(self.monoid))
        #: typed: the fields that :meth:`fold` adds up in a C loop (the whole partial of Sum,
        #: both of Mean's); None: ``monoid.fold``
        self.added: tuple | None = {Sum: (-1,), Mean: (0, 1)}.get(type(self.monoid)) if self.typed else None

    def structure(self, kind: str) -> Any:
        """A new ``"fiba"`` (arity 4) or ``"amta"``: the typed twin if :attr:`typed` (a
        TypedRecordFiBA for a Record's tree), else the object one (a Record's AMTA too: one
        TypedAMTA per field took 1.3x the object AMTA's time)."""
        monoid = self.monoid
        if self.typed and kind == "fiba":
            return typed_tree(monoid, _ARITY)  # a TypedRecordFiBA for a Record
        if self.typed and not typed_record.serves(monoid):  # a Record's object AMTA: faster (BENCHMARKS.md)
            return TypedAMTA(monoid)
        return FiBA(monoid, min_arity=_ARITY) if kind == "fiba" else AmortizedMTA(monoid)

    @abstractmethod
    def aggregate(self, query: str, i: int, j: int, again: bool = False, end: Any = None) -> Any:
        """The aggregate of slices ``i:j`` (``i < j``) for window query ``query``; ``again``:
        a window reported before (an update), not the query's next window; ``end``: the
        window's end (the shared final answers tumbling and sliding windows by it)."""

    def fold(self, i: int, j: int) -> Any:
        """Slices ``i:j`` combined in order, one by one (lazy slicing's final step)."""
        aggs, added = self.slices.aggs, self.added
        if added is None or j - i < 2:
            return self.monoid.fold(aggs[i], aggs[i + 1:j])
        if len(added) == 1:
            return add_range(aggs, i, j, -1)
        return (add_range(aggs, i, j, 0), add_range(aggs, i, j, 1))

    def changed(self, start: Any) -> None:
        """The slice starting at ``start`` changed, appeared or was split out of order."""

    def dropped(self) -> None:
        """Slices were dropped from the front of the store."""

    def forget(self, query: str) -> None:
        """``query`` was removed."""

    def configure(self, queries: dict[str, Any]) -> None:
        """The tumbling and sliding queries are now ``{name: Sliding}`` (one name per distinct window)."""

    def prepare(self) -> None:
        """An advance begins (raise here, if at all: nothing has changed yet)."""

    def advanced(self) -> None:
        """An advance reported its windows."""


class LazyFinal(FinalAggregation):
    name = "lazy"

    def aggregate(self, query: str, i: int, j: int, again: bool = False, end: Any = None) -> Any:
        return self.fold(i, j)


class FiBAFinal(FinalAggregation):
    """Eager slicing: the slices that ended are mirrored into a FiBA keyed by start."""

    name = "fiba"

    def __init__(self, slices: TimeSlices) -> None:
        super().__init__(slices)
        #: [the FiBA] (a slot: :func:`call` may replace a typed tree by its object twin)
        self.tree = [self.structure("fiba")]
        self.newest: Any = None  # the largest start in the tree
        self.stale: set = set()

    def changed(self, start: Any) -> None:
        if self.newest is not None and start <= self.newest:
            self.stale.add(start)

    def _sync(self, j: int) -> None:
        slices, tree = self.slices, self.tree
        starts, aggs = slices.starts, slices.aggs
        for start in self.stale:
            call(tree, "evict", start)
            k = bisect_right(starts, start) - 1
            if k >= 0 and starts[k] == start:
                call(tree, "insert", start, aggs[k])
        self.stale.clear()
        first = 0 if self.newest is None else bisect_right(starts, self.newest)
        for k in range(first, j):
            call(tree, "insert", starts[k], aggs[k])
        if j > first:
            self.newest = starts[j - 1]

    def aggregate(self, query: str, i: int, j: int, again: bool = False, end: Any = None) -> Any:
        starts, aggs = self.slices.starts, self.slices.aggs
        if j == len(starts):  # the newest slice may still grow in order: never in the tree
            if j - 1 == i:
                return aggs[i]
            self._sync(j - 1)
            return self.monoid.combine(call(self.tree, "query_range", starts[i], starts[j - 2]), aggs[j - 1])
        self._sync(j)
        return call(self.tree, "query_range", starts[i], starts[j - 1])

    def dropped(self) -> None:
        starts = self.slices.starts
        if not starts:  # a new tree: typed again if this one was demoted
            self.tree = [self.structure("fiba")]
            self.newest = None
            return
        tree = self.tree
        oldest = tree[0].oldest()
        while oldest is not None and oldest[0] < starts[0]:
            call(tree, "evict", oldest[0])
            oldest = tree[0].oldest()


class AMTAFinal(FinalAggregation):
    """Per query, an Amortized MTA over the run of slices of its latest window."""

    name = "amta"

    def __init__(self, slices: TimeSlices) -> None:
        super().__init__(slices)
        #: query -> [its AMTA (typed or not: see structure), the starts of the slices in it
        #: (oldest first), offset of the oldest]
        self.fifos: dict[str, list] = {}

    def changed(self, start: Any) -> None:
        for query, (_, keys, first) in list(self.fifos.items()):
            if first < len(keys) and keys[first] <= start <= keys[-1]:
                del self.fifos[query]

    def aggregate(self, query: str, i: int, j: int, again: bool = False, end: Any = None) -> Any:
        starts, aggs = self.slices.starts, self.slices.aggs
        if again:
            return self.fold(i, j)
        fifo = self.fifos.get(query)
        if fifo is not None and fifo[2] < len(fifo[1]) and fifo[1][fifo[2]] > starts[i]:
            fifo = None  # the window starts before what the AMTA holds
        if fifo is None:
            fifo = self.fifos[query] = [self.structure("amta"), [], 0]
        if j == len(starts):  # the newest slice may still grow in order: combined apart
            if j - 1 == i:
                return aggs[i]
            return self.monoid.combine(self.aggregate(query, i, j - 1), aggs[j - 1])
        keys, first = fifo[1], fifo[2]
        gone = bisect_left(keys, starts[i], first)  # keys are in order
        if gone > first:
            fifo[0].evict(gone - first)
        if gone > 1024 and gone * 2 > len(keys):
            del keys[:gone]
            gone = 0
        fifo[2] = gone
        k = i if len(keys) == gone else bisect_right(starts, keys[-1])
        call(fifo, "insert_many", aggs[k:j])  # fifo[0]: the AMTA (a slot, as for call); all or nothing
        keys.extend(starts[k:j])
        return fifo[0].query()

    def forget(self, query: str) -> None:
        self.fifos.pop(query, None)


class AutoFinal(FinalAggregation):
    """Folds a window of few slices (as cheap as any tree), hands longer ones to ``eager``."""

    name = "auto"
    #: windows of at most this many slices are folded
    FOLD_AT_MOST = 16

    def __init__(self, slices: TimeSlices, eager: type[FinalAggregation]) -> None:
        super().__init__(slices)
        self.eager = eager(slices)

    def aggregate(self, query: str, i: int, j: int, again: bool = False, end: Any = None) -> Any:
        if j - i <= self.FOLD_AT_MOST:
            return self.fold(i, j)
        return self.eager.aggregate(query, i, j, again, end)

    def changed(self, start: Any) -> None:
        self.eager.changed(start)

    def dropped(self) -> None:
        self.eager.dropped()

    def forget(self, query: str) -> None:
        self.eager.forget(query)


FINALS: dict[str, type[FinalAggregation]] = {cls.name: cls for cls in (LazyFinal, FiBAFinal, AMTAFinal)}


def final_aggregation(name: str, slices: TimeSlices, in_order: bool) -> FinalAggregation:
    """The final aggregation called ``name``: ``lazy``, ``amta``, ``fiba``, ``eager`` (AMTA
    for streams in order, FiBA when slices can change out of order) or ``auto`` (fold short
    windows, FiBA for the others)."""
    if name == "auto":  # one tree shared by every query: its cost per slice does not grow with them
        return AutoFinal(slices, FiBAFinal)
    if name == "eager":
        return AMTAFinal(slices) if in_order else FiBAFinal(slices)
    if name not in FINALS:
        raise ValueError(f"final must be 'auto', 'eager', 'lazy', 'amta', 'fiba' or 'shared', got {name!r}")
    return FINALS[name](slices)
