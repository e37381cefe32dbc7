"""A typed core for a :class:`~mta.monoid.Record` of the built-in numeric monoids (issue 20).

A Record's partial is the tuple of its fields' partials and it combines field by field;
the typed cores' algorithms (AMTA, Two-Stacks, DABA, Log MTA) shape their structure by
the sequence of inserts and evicts alone, never by the values. So a Record window is K
typed cores of one algorithm, one per field (each of its own op and kind: an int Count
beside a float Sum), driven in lockstep: every field's results are those the object
algorithm gives over the Record, floats bit for bit.

:class:`TypedRecord` has the cores' interface (``mta.Window`` and
:class:`~mta.algorithms.typed.TypedTimed` drive it as a core). An update is checked
against every field's core before any changes (:class:`~mta.algorithms.typed.Untyped`
otherwise, nothing changed: the window demotes), and :meth:`TypedRecord.to_object` gives
the object algorithm over the Record in the same state.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

import numpy as np

from mta.algorithms.typed import Untyped
from mta.algorithms.typed import serves as typed_serves
from mta.monoid import Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Monoid, Record, StdDev, Sum, Variance

__all__ = ["TypedRecord", "serves"]

COMPILED: bool = cython.compiled

_INF = cython.declare(cython.double, float("inf"))
_I64 = 2 ** 63
#: How a plain number (a finite float, an int64) lifts, by field monoid: 0 to itself, 1 to
#: Count's 1, 2 to Mean's ``(value, 1)``; a field not here leaves it to the monoid's lift.
_PLAIN_LIFTS = {Sum: 0, Min: 0, Max: 0, Count: 1, Mean: 2}
#: How a value of a numeric column lifts, by field monoid (:meth:`TypedRecord.insert_array`):
#: 0 to itself, 1 to Count's 1, 2 to ``(value, 1)``, 3 to Variance's ``(1, value, 0)``; and
#: the floats the field's lift takes: 2 finite, 1 not NaN, 0 any. ArgMin and ArgMax are not
#: here: they lift pairs, not numbers.
_ARRAY_LIFTS = {Sum: (0, 2), Min: (0, 1), Max: (0, 1), First: (0, 0), Last: (0, 0), Count: (1, 0), Mean: (2, 2),
                MinCount: (2, 2), MaxCount: (2, 2), Variance: (3, 2), StdDev: (3, 2)}
_FINITE = cython.declare(cython.int, 2)
_ORDERED = cython.declare(cython.int, 1)
#: Variance's cores take ints of at most this magnitude (typed._VARIANCE_INT).
_VARIANCE_INT = cython.declare(cython.longlong, 2 ** 25)
_LIMIT = cython.declare(cython.ulonglong, 2 ** 63 - 1)


def serves(monoid: Monoid) -> bool:
    """Whether ``monoid`` is a Record whose every field the typed algorithms serve (exact
    type: a subclass of Record may combine otherwise)."""
    return type(monoid) is Record and all(typed_serves(m) for m in monoid.fields.values())


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _check_floats(view: object, need: cython.int) -> cython.int:
    """:class:`Untyped` unless every double of ``view`` is finite (``need`` _FINITE) or not
    NaN (_ORDERED)."""
    d: cython.const[cython.double][:] = view
    j: cython.Py_ssize_t
    if need == _FINITE:
        for j in range(d.shape[0]):
            if not -_INF < d[j] < _INF:
                raise Untyped(view)
    elif need == _ORDERED:
        for j in range(d.shape[0]):
            if d[j] != d[j]:
                raise Untyped(view)
    return 0


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _abs_total(view: object, variance: cython.bint) -> object:
    """The sum of |v| over an int64 buffer (:class:`Untyped` beyond 2**63 - 1: no core's
    bound takes it); with ``variance``, Untyped for a |v| beyond 2**25 too."""
    i: cython.const[cython.longlong][:] = view
    j: cython.Py_ssize_t
    v: cython.longlong
    u: cython.ulonglong
    total: cython.ulonglong = 0
    for j in range(i.shape[0]):
        v = i[j]
        if variance and not -_VARIANCE_INT <= v <= _VARIANCE_INT:
            raise Untyped(view)
        u = cython.cast(cython.ulonglong, -(v + 1)) + 1 if v < 0 else cython.cast(cython.ulonglong, v)
        if u > _LIMIT - total:
            raise Untyped(view)
        total += u
    return total


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedRecord:
    """One typed core of class ``core`` per field of ``monoid`` (a Record that
    :func:`serves`), in lockstep. ``max_size``: the window's MaxSize, for :meth:`push`;
    ``cores``: the fields' cores to take over (unpickling), else new empty ones."""

    monoid = cython.declare(object, visibility="public")
    _core: object
    _max_size: cython.Py_ssize_t  # -1: none
    _width: cython.Py_ssize_t
    _cores: list
    # the cores' bound methods, by field
    _fits: list
    _inserts: list
    _evicts: list
    _lifts: list  # by field: _PLAIN_LIFTS
    _plain: cython.bint  # every field is in _PLAIN_LIFTS
    _array_lifts: list  # by field: _ARRAY_LIFTS's way (-1: none)
    _floats: cython.int  # the floats every field takes: _FINITE, _ORDERED or 0 (any)
    _bounded: list  # by field: whether it is Sum or Mean (the INT bound of the sum of |v|)

    def __init__(self, monoid: Record, core: type, max_size: int | None = None, cores: list | None = None) -> None:
        if not serves(monoid):
            raise TypeError(f"typed cores do not serve {monoid!r}")
        self.monoid = monoid
        self._core = core
        self._max_size = -1 if max_size is None else max_size
        self._cores = list(cores) if cores is not None else [core(m) for m in monoid.fields.values()]
        self._width = len(self._cores)
        self._fits = [c.fits for c in self._cores]
        self._inserts = [c.insert for c in self._cores]
        self._evicts = [c.evict for c in self._cores]
        self._lifts = [_PLAIN_LIFTS.get(type(m), -1) for m in monoid.fields.values()]
        self._plain = -1 not in self._lifts
        arrays = [_ARRAY_LIFTS.get(type(m), (-1, 0)) for m in monoid.fields.values()]
        self._array_lifts = [way for way, _ in arrays]
        self._floats = max(floats for _, floats in arrays)
        self._bounded = [type(m) in (Sum, Mean) for m in monoid.fields.values()]

    @property
    def name(self) -> str:
        return self._cores[0].name

    @property
    def timed(self) -> bool:
        return self._cores[0].timed

    @timed.setter
    def timed(self, value: bool) -> None:  # TypedTimed sets it: every field's core sees it
        for core in self._cores:
            core.timed = value

    @property
    def hold(self) -> bool:
        return self._cores[0].hold

    @hold.setter
    def hold(self, value: bool) -> None:
        for core in self._cores:
            core.hold = value

    # -- updates ----------------------------------------------------------------------

    @cython.cfunc
    def _shaped(self, partial: object) -> cython.int:
        if type(partial) is not tuple or len(partial) != self._width:
            raise Untyped(partial)
        return 0

    @cython.ccall
    def insert(self, partial: object):
        """Insert a Record partial; :class:`Untyped`, nothing changed, if a field does not fit."""
        self._shaped(partial)
        j: cython.Py_ssize_t
        # the first field is inserted unchecked: it raises Untyped before it changes anything
        for j in range(1, self._width):
            if not self._fits[j](partial[j]):
                raise Untyped(partial[j])
        for j in range(self._width):
            self._inserts[j](partial[j])

    @cython.ccall
    def lift(self, value: object) -> object:
        """``monoid.lift(value)``: built here for a plain number (a finite float, an int in
        int64), which every field lifts unchanged (Count to 1, Mean to ``(value, 1)``);
        anything else the monoid's own lift takes (and names what is wrong)."""
        kind = type(value)
        x: cython.double
        if not self._plain:
            return self.monoid.lift(value)
        if kind is float:
            x = value
            if not -_INF < x < _INF:
                return self.monoid.lift(value)
        elif kind is not int or not -_I64 <= value < _I64:
            return self.monoid.lift(value)
        parts: list = []
        lifts: list = self._lifts
        j: cython.Py_ssize_t
        for j in range(self._width):
            parts.append(1 if lifts[j] == 1 else (value, 1) if lifts[j] == 2 else value)
        return tuple(parts)

    def _columns(self, partials: Sequence[Any]) -> list:
        """The batch as one column of partials per field (Untyped if one is not a Record partial)."""
        for partial in partials:
            self._shaped(partial)
        return list(zip(*partials)) if len(partials) else [()] * self._width

    def accepts(self, partials: Sequence[Any]) -> bool:
        """Whether :meth:`insert_many` takes ``partials``."""
        try:
            columns = self._columns(partials)
        except Untyped:
            return False
        return all(core.accepts(column) for core, column in zip(self._cores, columns))

    def insert_many(self, partials: Sequence[Any]) -> None:
        """As :meth:`insert` one by one, all or nothing (every field is checked first)."""
        columns = self._columns(partials)
        cores = self._cores
        for core, column in zip(cores[1:], columns[1:]):
            if not core.accepts(column):
                raise Untyped(column)
        for core, column in zip(cores, columns):
            core.insert_many(column)

    def insert_array(self, values: Any) -> None:
        """:meth:`insert_many` of a float64 or int64 buffer of values, each lifted by every
        field (:data:`_ARRAY_LIFTS`), in each core's C loop. Checked first, against every
        field, so that no core refuses after another has taken the batch: :class:`Untyped`,
        nothing changed, for a float some field's lift refuses (the general path names it),
        a field that lifts no numbers (ArgMin, ArgMax), a field's core of the other kind, an
        int column beyond a Sum or Mean core's bound or a Variance core's 2**25."""
        view = memoryview(values)
        n: cython.Py_ssize_t = len(view)
        ways: list = self._array_lifts
        if -1 in ways:
            raise Untyped(values)
        if not n:
            return
        floats: cython.bint = view.format == "d"
        total: object = 0
        if floats:
            _check_floats(view, self._floats)
        else:
            total = _abs_total(view, 3 in ways)
        x: object = view[0]
        j: cython.Py_ssize_t
        way: cython.int
        for j in range(self._width):  # every value is of one kind: the first stands for them all
            way = ways[j]
            if not self._fits[j](1 if way == 1 else (x, 1) if way == 2 else (1, x, 0) if way == 3 else x):
                raise Untyped(values)
            if not floats and self._bounded[j] and not self._fits[j](total if way == 0 else (total, 1)):
                raise Untyped(values)  # beyond the INT bound of this core's sum of |v|
        ones = np.ones(n, dtype=np.int64) if 1 in ways else None
        for j in range(self._width):  # an int column's sum of |v|, summed once here, to every core
            if ways[j] == 1:
                self._cores[j].insert_array(ones, None, n)  # Count: n ones
            else:
                self._cores[j].insert_array(values, None, None if floats else total)

    def push(self, timestamp: Any, partial: Any) -> int:
        """``mta.Window``'s insertion in one call: :meth:`insert`, then evict down to the
        window's MaxSize; return how many were evicted."""
        self.insert(partial)
        k: cython.Py_ssize_t
        if self._max_size >= 0:
            k = len(self._cores[0]) - self._max_size
            if k > 0:
                self.evict(k)
                return k
        return 0

    def evict(self, k: Any = 1) -> None:
        j: cython.Py_ssize_t
        # the first field's core checks k as the object algorithms do, before any change
        for j in range(self._width):
            self._evicts[j](k)

    def clear(self) -> None:
        for core in self._cores:
            core.clear()

    def begin_hold(self) -> None:
        for core in self._cores:
            core.begin_hold()

    def end_hold(self) -> bool:
        due = False
        for core in self._cores:
            due = core.end_hold() or due
        return due

    # -- results ----------------------------------------------------------------------

    def query(self) -> tuple:
        return tuple([core.query() for core in self._cores])

    def result(self) -> dict:
        """``monoid.lower(query())``, each field's from its core."""
        return {name: core.result() for name, core in zip(self.monoid.fields, self._cores)}

    def oldest(self) -> tuple:
        return tuple([core.oldest() for core in self._cores])

    def __len__(self) -> int:
        return len(self._cores[0])

    def __iter__(self) -> Iterator[tuple]:
        return zip(*self._cores)

    def snapshot(self) -> tuple:
        return tuple([core.snapshot() for core in self._cores])

    def restore(self, snapshot: tuple) -> None:
        for core, state in zip(self._cores, snapshot):
            core.restore(state)

    def __reduce__(self) -> tuple:
        # the cores pickle themselves (in a form both paths load)
        return (TypedRecord, (self.monoid, self._core, None if self._max_size < 0 else self._max_size, self._cores))

    # -- demotion ---------------------------------------------------------------------

    def to_object(self, monoid: Monoid | None = None, wrap: Any = None) -> Any:
        """The object algorithm over the Record (or over ``monoid``, whose partials wrap the
        Record's through ``wrap(first, last, partial)``, as for the cores' ``to_object``) in
        this state.

        The cores have one shape, and a core's ``to_object`` visits its partials in an order
        fixed by that shape: the other fields' cores are read first, recording the partials
        each visit gives, then the first field's builds the object algorithm, each of its
        visits taking the other fields' partials of the same visit into the Record partial."""
        visits: list[list] = []
        for core in self._cores[1:]:
            seen: list = []
            core.to_object(None, lambda first, last, p, seen=seen: seen.append((first, last, p)))
            visits.append(seen)
        outer = wrap
        position = 0

        def joined(first: int, last: int, p: Any) -> Any:
            nonlocal position
            partial = [p]
            for seen in visits:
                if seen[position][:2] != (first, last):
                    raise AssertionError("the fields' cores are not in lockstep")
                partial.append(seen[position][2])
            position += 1
            partial = tuple(partial)
            return partial if outer is None else outer(first, last, partial)

        twin = self._cores[0].to_object(monoid if monoid is not None else self.monoid, joined)
        if any(len(seen) != position for seen in visits):
            raise AssertionError("the fields' cores are not in lockstep")
        return twin

