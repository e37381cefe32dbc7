"""Typed cores: the built-in numeric monoids' partials in C columns, not Python objects (issue 20).

A typed core is the twin of an object algorithm (:class:`TypedTwoStacks` of
:class:`~mta.algorithms.two_stacks.TwoStacks`, :class:`TypedDABA` of
:class:`~mta.algorithms.daba.DABA`, :class:`TypedLogMTA` of
:class:`~mta.algorithms.log_mta.LogMTA`; ``typed_amta.TypedAMTA`` of AmortizedMTA,
``typed_fiba.TypedFiBA`` of FiBA) for the
monoids whose partials are plain numbers: ``Sum`` and ``Count`` (op ``SUM``), ``Min``,
``Max``, and ``Mean`` (partial ``(sum, count)``); the cores here, TypedAMTA and TypedFiBA
also serve ``MinCount`` and ``MaxCount`` (partial ``(value, count)``, its count in the ``c``
column beside Mean's; :func:`wide_op_of`), ``First`` and ``Last`` of ints
or floats (NaN and infinities included: never compared), ``Variance`` / ``StdDev`` (partial
``(count, mean, M2)``; here in the ``c``, ``d`` and ``m`` columns, means doubles whatever the
kind: count-1 partials of ints up to 2**25, so that Chan's merge in doubles is Python's on
the ints) and ``ArgMin`` / ``ArgMax`` (``(value, key)``; here an int key in ``k``, a float
key in ``m``; the keys' kind chosen by the first partial of an empty window, as the
values'), combining whole rows. :class:`TypedTimed` puts one under a
window whose policy reads timestamps; :class:`Events` makes a typed window's ``insert``
and ``query`` one C call each.
It stores one *kind* of value: ``FLOAT`` (every value is exactly a ``float``: a C double) or
``INT`` (exactly an ``int``: a C int64). The kind is chosen by the first partial of an empty
window. It combines in the object algorithm's order, so that its results are the object
algorithm's, float rounding included.

A partial it cannot hold (another type, the other kind in a window that is not empty, an
int outside int64, or one that would break the INT bound below) makes ``insert`` raise
:class:`Untyped` and changes nothing; ``mta.Window`` then *demotes* the window:
:meth:`to_object` gives the object algorithm in the same state, and the window goes on
with it. INT bound: for ``SUM`` and ``MEAN`` the sum of ``|v|`` over the window's values
stays <= 2**63 - 1, so no partial sum of the window can overflow and combines need no
checks (the pure path's Python ints never overflow; the typed path never needs to).

The module is Cython in pure-Python mode: compiled, the columns are typed memoryviews and
the cores are extension types; interpreted, the same code runs on ``array.array`` columns.
``mta.Window`` uses the cores only when compiled (:data:`USE`): interpreted they are slower
than the object algorithms they mirror.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any, Iterator, Sequence

import numpy as np

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.algorithms.base import Aggregator
from mta.arrays import numeric_array
from mta.monoid import (ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Monoid, StdDev, Sum,
                        Variance)
from mta.policy import AllOf, AnyOf, MaxSize, TimeRange

COMPILED: bool = cython.compiled

# C constants for the compiled code (a module global read from C would be a Python lookup);
# the public names below are the same values for Python.
_SUM = cython.declare(cython.int, 0)
_MIN = cython.declare(cython.int, 1)
_MAX = cython.declare(cython.int, 2)
_MEAN = cython.declare(cython.int, 3)
_MINCOUNT = cython.declare(cython.int, 4)
_MAXCOUNT = cython.declare(cython.int, 5)
_FIRST = cython.declare(cython.int, 6)
_LAST = cython.declare(cython.int, 7)
_VARIANCE = cython.declare(cython.int, 8)
_ARGMIN = cython.declare(cython.int, 9)
_ARGMAX = cython.declare(cython.int, 10)
_FLOAT = cython.declare(cython.int, 0)
_INT = cython.declare(cython.int, 1)
_INF = cython.declare(cython.double, float("inf"))
#: Extra columns of a :class:`_Columns`: VARIANCE's M2 in ``m``; ARGMIN / ARGMAX keys, an int
#: key in ``k`` or a float key in ``m``.
_XVAR = cython.declare(cython.int, 1)
_XKEY = cython.declare(cython.int, 2)
#: VARIANCE takes ints up to this magnitude: Chan's merge of two of them in doubles is then
#: Python's merge of the ints, bit for bit (a difference squared is below 2**53).
_VARIANCE_INT = cython.declare(cython.longlong, 2 ** 25)

SUM, MIN, MAX, MEAN = _SUM, _MIN, _MAX, _MEAN
MINCOUNT, MAXCOUNT, FIRST, LAST = _MINCOUNT, _MAXCOUNT, _FIRST, _LAST
VARIANCE, ARGMIN, ARGMAX = _VARIANCE, _ARGMIN, _ARGMAX
FLOAT, INT = _FLOAT, _INT

_OPS = {Sum: SUM, Count: SUM, Min: MIN, Max: MAX, Mean: MEAN}
#: Ops beyond :func:`op_of`'s, which the typed algorithms serve too (the Stream engine's
#: ingest: ``typed_ingest.op_for``; the multi-query aggregators' twins: ``typed_mq.twin``): MinCount and MaxCount (partial ``(value,
#: count)``), First and Last (partial: the value; identity the private ``_EMPTY``), Variance
#: and StdDev (partial ``(count, mean, M2)``), ArgMin and ArgMax (partial ``(value, key)``,
#: identity ``None``).
_WIDE_OPS = {MinCount: MINCOUNT, MaxCount: MAXCOUNT, First: FIRST, Last: LAST,
             Variance: VARIANCE, StdDev: VARIANCE, ArgMin: ARGMIN, ArgMax: ARGMAX}

_I64_MIN = -(2 ** 63)
_I64_MAX = 2 ** 63 - 1
#: The INT bound: the sum of |v| over a window's values (SUM, MEAN).
_LIMIT = cython.declare(cython.ulonglong, 2 ** 63 - 1)
_COUNT_LIMIT = 2 ** 32
#: Ints of at most this magnitude are exact as doubles.
_EXACT = cython.declare(cython.longlong, 2 ** 53)

#: Whether ``mta.Window`` picks the typed cores (compiled only; tests set it to run the
#: integration on the pure path too).
USE: bool = COMPILED


class Untyped(Exception):
    """A partial a typed core cannot hold; nothing was changed (``mta.Window`` demotes)."""


def op_of(monoid: Monoid) -> int | None:
    """The op of a monoid the typed cores serve (exact types: a subclass may combine otherwise)."""
    return _OPS.get(type(monoid))


def wide_op_of(monoid: Monoid) -> int | None:
    """:func:`op_of`, or the op of MinCount / MaxCount / First / Last / Variance / StdDev /
    ArgMin / ArgMax, which the typed algorithms (and the multi-query aggregators' twins)
    serve too."""
    op = _OPS.get(type(monoid))
    return op if op is not None else _WIDE_OPS.get(type(monoid))


def serves(monoid: Monoid) -> bool:
    """Whether the typed algorithms (``mta.algorithms.TYPED_ALGORITHMS`` and TypedFiBA) serve
    ``monoid``."""
    return wide_op_of(monoid) is not None


def _doubles(n: cython.Py_ssize_t) -> array:
    return array("d", bytes(8 * n))


def _int64s(n: cython.Py_ssize_t) -> array:
    return array("q", bytes(8 * n))


_NO_DOUBLES = _doubles(0)
_NO_INT64S = _int64s(0)


_Number = cython.fused_type(cython.double, cython.longlong)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _comb(op: cython.int, a: _Number, b: _Number) -> _Number:
    """The value of ``combine(a, b)``, as the monoid's: ties keep the left operand (int64s:
    the INT bound rules out overflow). MinCount and MaxCount values are never NaN, so their
    value is Min's and Max's (their count: :func:`_ccomb`); First and Last rows are never the
    identity."""
    if op == _SUM or op == _MEAN:
        return a + b
    if op == _MIN or op == _MINCOUNT:
        return a if a <= b else b
    if op == _MAX or op == _MAXCOUNT:
        return a if a >= b else b
    if op == _FIRST:
        return a
    return b


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _ccomb(op: cython.int, a: _Number, b: _Number, ca: cython.longlong, cb: cython.longlong) -> cython.longlong:
    """The count of ``combine((a, ca), (b, cb))`` (MEAN, MINCOUNT, MAXCOUNT): ``_mincount``
    keeps the smaller value's count and adds the counts of equal values (0.0 and -0.0 too)."""
    if op == _MEAN:
        return ca + cb
    if op == _MINCOUNT:
        if a < b:
            return ca
        if b < a:
            return cb
    elif op == _MAXCOUNT:
        if a > b:
            return ca
        if b > a:
            return cb
    return ca + cb


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _pair(op: cython.int) -> cython.bint:
    """Whether ``op``'s count depends on the values (MINCOUNT, MAXCOUNT)."""
    return op == _MINCOUNT or op == _MAXCOUNT


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _counted(op: cython.int) -> cython.bint:
    """Whether ``op``'s partial is a value and a count (the ``c`` column): MEAN, MINCOUNT, MAXCOUNT."""
    return op == _MEAN or op == _MINCOUNT or op == _MAXCOUNT


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _rowop(op: cython.int) -> cython.bint:
    """Whether ``op`` combines whole rows (:func:`_combined_rows`): VARIANCE, ARGMIN, ARGMAX."""
    return op >= _VARIANCE


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _has_counts(op: cython.int) -> cython.bint:
    """Whether ``op``'s rows have the ``c`` column: the counted ops and VARIANCE."""
    return _counted(op) or op == _VARIANCE


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _extra(op: cython.int) -> cython.int:
    """The columns beyond value and count that ``op``'s rows have (:class:`_Columns`)."""
    if op == _VARIANCE:
        return _XVAR
    if op == _ARGMIN or op == _ARGMAX:
        return _XKEY
    return 0


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _first(op: cython.int, x: _Number) -> _Number:
    """``combine(identity, x)``: x, but for a sum, whose identity is the int 0, ``0 + -0.0``
    is ``0.0`` (as on the object path)."""
    if op == _SUM or op == _MEAN:
        return x + 0
    return x


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _extend(op: cython.int, src: cython.const[_Number][:], dst: _Number[:], start: cython.Py_ssize_t, n: cython.Py_ssize_t,
            acc: _Number) -> _Number:
    """Copy ``src[:n]`` to ``dst[start:start + n]``; return ``acc`` combined with them left to
    right (``start`` 0: the first is where the aggregate starts, ``acc`` is not read)."""
    j: cython.Py_ssize_t
    for j in range(n):
        dst[start + j] = src[j]
        acc = _first(op, src[j]) if start + j == 0 else _comb(op, acc, src[j])
    return acc


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _reverse_suffixes(op: cython.int, v: _Number[:], s: _Number[:], n: cython.Py_ssize_t,
                      identity_first: cython.bint) -> cython.void:
    """Reverse ``v[:n]`` in place, then ``s[r] = combine(v[r], s[r - 1])``: suffix aggregates
    built from the (now first) newest, which is ``combine(v[0], identity)`` when
    ``identity_first`` (see :attr:`_TypedCore.timed`)."""
    r: cython.Py_ssize_t
    for r in range(n // 2):
        v[r], v[n - 1 - r] = v[n - 1 - r], v[r]
    for r in range(n):
        if r == 0:
            s[r] = _first(op, v[r]) if identity_first else v[r]
        else:
            s[r] = _comb(op, v[r], s[r - 1])


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _reverse_suffixes_paired(op: cython.int, v: _Number[:], c: cython.longlong[:], s: _Number[:],
                             sc: cython.longlong[:], n: cython.Py_ssize_t) -> cython.void:
    """:func:`_reverse_suffixes` of MINCOUNT / MAXCOUNT rows, values ``v`` with counts ``c``
    (``combine(x, identity)`` is x: no identity step)."""
    r: cython.Py_ssize_t
    for r in range(n // 2):
        v[r], v[n - 1 - r] = v[n - 1 - r], v[r]
        c[r], c[n - 1 - r] = c[n - 1 - r], c[r]
    for r in range(n):
        if r == 0:
            s[r] = v[r]
            sc[r] = c[r]
        else:
            sc[r] = _ccomb(op, v[r], s[r - 1], c[r], sc[r - 1])
            s[r] = _comb(op, v[r], s[r - 1])


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _count_expired(t: _Number[:], h: cython.Py_ssize_t, n: cython.Py_ssize_t, width: _Number) -> cython.Py_ssize_t:
    """How many of ``t[h:h + n]`` (non-decreasing) have ``newest - t >= width``: a galloping
    then binary search, the difference falling as t rises (rounding is monotone too), in
    O(log k) for k expired (a window sliding by an event or two reads two or three)."""
    if not n:
        return 0
    newest: _Number = t[h + n - 1]
    if newest - t[h] < width:
        return 0
    # positions below lo have expired; position hi, if below n, has not
    lo: cython.Py_ssize_t = 1
    hi: cython.Py_ssize_t = 1
    mid: cython.Py_ssize_t
    while hi < n and newest - t[h + hi] >= width:
        lo = hi + 1
        hi = 2 * hi + 1
    if hi > n:
        hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if newest - t[h + mid] >= width:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.cfunc
@cython.inline
def _abs64(v: cython.longlong) -> cython.ulonglong:
    """|v| (exact for -2**63 too, as unsigned)."""
    u: cython.ulonglong = cython.cast(cython.ulonglong, v)
    return 0 - u if v < 0 else u


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _Columns:
    """Growable typed columns of one stack: values ``d`` (FLOAT) or ``i`` (INT), counts ``c``
    (``counted``: MEAN, MINCOUNT, MAXCOUNT, VARIANCE), and the ``extra`` columns of
    :func:`_extra` (``m``: VARIANCE's M2 or a float key; ``k``: an int key). Only the columns
    of the kind held (``kind``; -1: both, for a batch being decoded) and the op's take room;
    the others are empty."""

    d: cython.double[:]
    i: cython.longlong[:]
    c: cython.longlong[:]
    m: cython.double[:]
    k: cython.longlong[:]
    size: cython.Py_ssize_t
    kind: cython.int
    counted: cython.bint
    extra: cython.int

    def __init__(self, capacity: cython.Py_ssize_t, kind: cython.int, counted: cython.bint,
                 extra: cython.int = 0) -> None:
        self.size = capacity
        self.kind = kind
        self.counted = counted
        self.extra = extra
        self.d = _doubles(capacity if kind != _INT else 0)
        self.i = _int64s(capacity if kind != _FLOAT else 0)
        self.c = _int64s(capacity if counted else 0)
        self.m = _doubles(capacity if extra else 0)
        self.k = _int64s(capacity if extra & _XKEY else 0)

    @cython.cfunc
    def reserve(self, n: cython.Py_ssize_t, used: cython.Py_ssize_t, kind: cython.int) -> cython.void:
        """Room for ``n`` rows of ``kind``, keeping the first ``used`` (none when the kind changes)."""
        size: cython.Py_ssize_t = self.size
        if n <= size and kind == self.kind:
            return
        while size < n:
            size *= 2
        other = _Columns(size, kind, self.counted, self.extra)
        if kind == self.kind and used:
            if kind != _INT:
                other.d[:used] = self.d[:used]
            if kind != _FLOAT:
                other.i[:used] = self.i[:used]
            if self.counted:
                other.c[:used] = self.c[:used]
            if self.extra:
                other.m[:used] = self.m[:used]
            if self.extra & _XKEY:
                other.k[:used] = self.k[:used]
        self.d, self.i, self.c, self.m, self.k, self.size, self.kind = other.d, other.i, other.c, other.m, other.k, size, kind

    def copy(self) -> _Columns:
        other = _Columns(self.size, self.kind, self.counted, self.extra)
        other.d[:] = self.d
        other.i[:] = self.i
        other.c[:] = self.c
        other.m[:] = self.m
        other.k[:] = self.k
        return other

    def __reduce__(self) -> tuple:
        return (_columns, (self.size, self.kind, self.counted, array("d", self.d), array("q", self.i),
                           array("q", self.c), self.extra, array("d", self.m), array("q", self.k)))


def _columns(size: cython.Py_ssize_t, kind: cython.int, counted: cython.bint, d: array, i: array, c: array,
             extra: cython.int = 0, m: array = _NO_DOUBLES, k: array = _NO_INT64S) -> _Columns:
    """Columns holding these arrays' values (unpickling; pickles without ``extra`` columns too)."""
    cols = _Columns(size, kind, counted, extra)
    sd: cython.double[:] = d
    si: cython.longlong[:] = i
    sc: cython.longlong[:] = c
    sm: cython.double[:] = m
    sk: cython.longlong[:] = k
    cols.d[:] = sd
    cols.i[:] = si
    cols.c[:] = sc
    cols.m[:] = sm
    cols.k[:] = sk
    return cols


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _TypedCore:
    """What every typed core shares: the op and kind, decoding and checking partials (one
    at a time, in a batch, in a numpy array), the INT bound, eviction counts, the results.

    A core implements ``_size``, ``_put`` (append the scratch row), ``_append`` (append a
    checked batch), ``_evict`` (evict k, checked), ``query`` and the rest of the algorithm.
    """

    monoid = cython.declare(object, visibility="public")
    hold = cython.declare(cython.bint, visibility="public")
    #: Under :class:`TypedTimed`: the timed monoid's ``combine(x, identity)`` is x itself,
    #: where the plain monoid's adds the identity (``-0.0 + 0`` is ``0.0``).
    timed = cython.declare(cython.bint, visibility="public")
    _op: cython.int
    _kind: cython.int
    #: VARIANCE: the kind of the means of count-1 partials (their mean is the value lifted);
    #: ARGMIN / ARGMAX: the kind of the keys; -1: none yet. VARIANCE rows store means in
    #: ``d`` whatever this kind (``_kind`` is FLOAT).
    _kind2: cython.int
    _tmp: _Columns  # a row for _joined and row swaps (rows of every column of the op)
    _magnitude: cython.ulonglong  # INT kind, SUM and MEAN: sum of |v| over the window
    _max_size: cython.Py_ssize_t  # MaxSize of the window, for push (-1: none)
    _lowering: cython.bint  # result() is asking query() for the Mean itself (see _partial)
    # scratch of _scalar / _decode: a decoded partial (or batch) before it is inserted
    _xd: cython.double
    _xi: cython.longlong
    _xc: cython.longlong
    _xu: cython.ulonglong
    _xk: cython.int
    _xm: cython.double  # VARIANCE's M2, or a float key
    _xkey: cython.longlong  # an int key
    _xk2: cython.int  # the _kind2 of the partial (batch) decoded; before: the window's (-1: any)

    def __init__(self, monoid: Monoid, max_size: int | None = None) -> None:
        op = wide_op_of(monoid)
        if op is None or not serves(monoid):
            raise TypeError(f"typed cores do not serve {type(monoid).__name__}")
        self.monoid = monoid
        self.hold = False
        self.timed = False
        self._lowering = False
        self._max_size = -1 if max_size is None else max_size
        self._op = op
        self._kind = _FLOAT
        self._kind2 = -1
        self._tmp = _Columns(1, -1, _has_counts(op), _extra(op))
        self._magnitude = 0
        self._xd = self._xm = 0.0
        self._xi = self._xu = self._xk = self._xkey = 0
        self._xk2 = -1
        self._xc = 1

    # -- what a core implements ---------------------------------------------------------

    @cython.cfunc
    def _size(self) -> cython.Py_ssize_t:
        raise NotImplementedError

    @cython.cfunc
    def _put(self, kind: cython.int) -> cython.void:
        """Append the row in the scratch fields (checked, of ``kind``)."""
        raise NotImplementedError

    @cython.cfunc
    def _append(self, d: cython.const[cython.double][:], i: cython.const[cython.longlong][:],
                c: cython.const[cython.longlong][:], ones: cython.bint,
                n: cython.Py_ssize_t, kind: cython.int, magnitude: cython.ulonglong) -> cython.void:
        """Append ``n`` checked rows of ``kind`` (values ``d`` or ``i``; counts ``c``, or 1
        each when ``ones``) whose |v| sum to ``magnitude``: here one by one, as the object
        algorithms' insert_many does (a core may do better)."""
        j: cython.Py_ssize_t
        self._xc = 1
        for j in range(n):
            if kind == _FLOAT:
                self._xd = d[j]
            else:
                self._xi = i[j]
            if not ones:
                self._xc = c[j]
            self._put(kind)
        self._magnitude += magnitude

    @cython.cfunc
    def _evict(self, k: cython.Py_ssize_t) -> cython.void:
        """Evict the ``k`` oldest (0 <= k <= size)."""
        raise NotImplementedError

    # -- decoding ---------------------------------------------------------------------

    @cython.cfunc
    def _scalar(self, p: object, kind: cython.int) -> cython.int:
        """Decode partial ``p`` into the scratch fields ``_xd``/``_xi``/``_xc``/``_xu`` and
        return its kind; :class:`Untyped` if it does not fit a window of ``kind`` (-1: any)."""
        v: cython.longlong
        x: cython.double
        if self._op >= _MINCOUNT:
            return self._scalar_wide(p, kind)
        if self._op == _MEAN:
            if type(p) is not tuple or len(p) != 2:
                raise Untyped(p)
            count = p[1]
            if type(count) is not int or not 0 <= count < _COUNT_LIMIT:
                raise Untyped(p)
            self._xc = count
            p = p[0]
        if type(p) is float:
            if kind == _INT:
                raise Untyped(p)
            self._xd = p
            self._xu = 0
            return _FLOAT
        if type(p) is not int or kind == _FLOAT or not _I64_MIN <= p <= _I64_MAX:
            raise Untyped(p)
        v = p
        self._xi = v
        self._xu = _abs64(v) if self._op == _SUM or self._op == _MEAN else 0
        return _INT

    @cython.cfunc
    def _scalar_wide(self, p: object, kind: cython.int) -> cython.int:
        """:meth:`_scalar` of the ops from MINCOUNT on: MINCOUNT / MAXCOUNT ``(value,
        count)`` (a finite value), FIRST / LAST (any float), and the row ops."""
        x: cython.double
        if _rowop(self._op):
            return self._scalar_row(p, kind)
        if _pair(self._op):
            if type(p) is not tuple or len(p) != 2:
                raise Untyped(p)
            count = p[1]
            if type(count) is not int or not 0 <= count < _COUNT_LIMIT:
                raise Untyped(p)
            self._xc = count
            p = p[0]
        self._xu = 0
        if type(p) is float:
            if kind == _INT:
                raise Untyped(p)
            x = p
            if _pair(self._op) and not -_INF < x < _INF:
                raise Untyped(p)  # MinCount and MaxCount lift finite values only (inf is the identity's)
            self._xd = x
            return _FLOAT
        if type(p) is not int or kind == _FLOAT or not _I64_MIN <= p <= _I64_MAX:
            raise Untyped(p)
        self._xi = p
        return _INT

    @cython.cfunc
    def _scalar_row(self, p: object, kind: cython.int) -> cython.int:
        """:meth:`_scalar` of a VARIANCE partial ``(count, mean, M2)`` (count in [1, 2**32):
        count 1 as lifted, ``(1, v, 0)``, v a finite float or an int of at most 2**25;
        more: mean and M2 finite floats) or an ARGMIN / ARGMAX one ``(value, key)`` (value
        as Min's, key an int64 or a float), also into ``_xm`` / ``_xkey``; ``_xk2`` the kind
        of its mean or key, checked against ``_xk2`` (-1: any)."""
        k2: cython.int
        x: cython.double
        if type(p) is not tuple:
            raise Untyped(p)
        self._xu = 0
        if self._op == _VARIANCE:
            if len(p) != 3:
                raise Untyped(p)
            count, mean, m2 = p
            if type(count) is not int or not 1 <= count < _COUNT_LIMIT:
                raise Untyped(p)
            if count == 1:
                if type(m2) is not int or m2 != 0:
                    raise Untyped(p)
                if type(mean) is float:
                    k2 = _FLOAT
                elif type(mean) is int and -_VARIANCE_INT <= mean <= _VARIANCE_INT:
                    k2 = _INT
                else:
                    raise Untyped(p)
                x = float(mean)
                if not -_INF < x < _INF or (self._xk2 != -1 and k2 != self._xk2):
                    raise Untyped(p)
                self._xk2 = k2
                self._xm = 0.0
            else:
                if type(mean) is not float or type(m2) is not float:
                    raise Untyped(p)
                x = m2
                if not -_INF < x < _INF:
                    raise Untyped(p)
                self._xm = x
                x = mean
                if not -_INF < x < _INF:
                    raise Untyped(p)
            self._xd = x
            self._xc = count
            return _FLOAT  # means are doubles, whatever the kind of the values lifted
        if len(p) != 2:
            raise Untyped(p)
        value, key = p
        if type(key) is float:
            k2 = _FLOAT
        elif type(key) is int and _I64_MIN <= key <= _I64_MAX:
            k2 = _INT
        else:
            raise Untyped(p)
        if self._xk2 != -1 and k2 != self._xk2:
            raise Untyped(p)
        if type(value) is float:
            x = value
            if kind == _INT or x != x:
                raise Untyped(p)
            kind = _FLOAT
            self._xd = x
        elif type(value) is int and kind != _FLOAT and _I64_MIN <= value <= _I64_MAX:
            kind = _INT
            self._xi = value
        else:
            raise Untyped(p)
        if k2 == _FLOAT:
            self._xm = key
        else:
            self._xkey = key
        self._xk2 = k2
        return kind

    @cython.cfunc
    def _expect(self) -> cython.int:
        """The kind a partial must be of (-1: any, the window being empty); sets ``_xk2``
        likewise from ``_kind2``."""
        if self._size():
            self._xk2 = self._kind2
            return self._kind
        self._xk2 = -1
        return -1

    @cython.cfunc
    def _store(self, cols: _Columns, r: cython.Py_ssize_t, kind: cython.int) -> cython.void:
        """Row ``r`` of ``cols`` = the scratch row (of ``kind``) with its count and extra columns."""
        if kind == _FLOAT:
            cols.d[r] = self._xd
        else:
            cols.i[r] = self._xi
        if cols.counted:
            cols.c[r] = self._xc
        if cols.extra:
            cols.m[r] = self._xm
        if cols.extra & _XKEY:
            cols.k[r] = self._xkey

    @cython.cfunc
    def _decode(self, partials: Sequence[Any]) -> _Columns:
        """The batch in columns (kind in ``_xk``, sum of |v| in ``_xu``), or :class:`Untyped`
        (nothing changed) if one partial does not fit."""
        n: cython.Py_ssize_t = len(partials)
        extra: cython.int = _XVAR | _XKEY if _rowop(self._op) else 0  # every column of a row op
        cols = _Columns(n if n else 1, -1, True, extra)
        kind: cython.int = self._expect()
        total: cython.ulonglong = 0
        j: cython.Py_ssize_t
        for j in range(n):
            kind = self._scalar(partials[j], kind)
            if self._xu > _LIMIT - total:
                raise Untyped(partials[j])
            total += self._xu
            cols.d[j] = self._xd
            cols.i[j] = self._xi
            cols.c[j] = self._xc
            if extra:
                cols.m[j] = self._xm
                cols.k[j] = self._xkey
        if total > _LIMIT - self._magnitude:
            raise Untyped(partials)
        self._xk = kind if kind != -1 else self._kind
        self._xu = total
        return cols

    def accepts(self, partials: Sequence[Any]) -> bool:
        """Whether :meth:`insert_many` takes ``partials`` (else it raises :class:`Untyped`)."""
        try:
            self._decode(partials)
        except Untyped:
            return False
        return True

    @cython.ccall
    def fits(self, partial: object) -> cython.bint:
        """Whether :meth:`insert` takes ``partial`` (a check of one, changing nothing)."""
        try:
            self._scalar(partial, self._expect())
        except Untyped:
            return False
        return self._xu <= _LIMIT - self._magnitude

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _untrack(self, cols: _Columns, start: cython.Py_ssize_t, stop: cython.Py_ssize_t,
                 mask: cython.Py_ssize_t) -> cython.void:
        """Take rows ``start .. stop-1`` (indexes ``& mask``) out of the INT bound's sum."""
        r: cython.Py_ssize_t
        if self._kind != _INT or not (self._op == _SUM or self._op == _MEAN):
            return
        for r in range(start, stop):
            self._magnitude -= _abs64(cols.i[r & mask])

    # -- updates ----------------------------------------------------------------------

    @cython.ccall
    def insert(self, partial: object):
        kind: cython.int = self._kind if self._size() else -1
        if self._op >= _VARIANCE:
            self._xk2 = self._kind2 if kind != -1 else -1
        kind = self._scalar(partial, kind)
        if self._xu > _LIMIT - self._magnitude:
            raise Untyped(partial)
        self._put(kind)
        self._kind = kind
        self._kind2 = self._xk2
        self._magnitude += self._xu

    def insert_many(self, partials: Sequence[Any]) -> None:
        """As :meth:`insert` one by one (the whole batch is checked first)."""
        src: _Columns = self._decode(partials)
        n: cython.Py_ssize_t = len(partials)
        kind: cython.int = self._xk
        k2: cython.int = self._xk2
        j: cython.Py_ssize_t
        if not _rowop(self._op):
            self._append(src.d, src.i, src.c, False, n, kind, self._xu)
            return
        for j in range(n):  # row by row, as the object algorithms' insert_many
            self._xd, self._xi, self._xc, self._xm, self._xkey = src.d[j], src.i[j], src.c[j], src.m[j], src.k[j]
            self._put(kind)
        if n:
            self._kind = kind
            self._kind2 = k2

    def insert_array(self, values: Any, keys: Any = None, abs_total: Any = None) -> None:
        """:meth:`insert_many` of the values of a float64 or int64 buffer (a numpy array) as
        value partials (Mean: with count 1), in a C loop. The caller has checked that the
        monoid lifts every value (finite, not NaN); :class:`Untyped`, nothing changed, for
        the other kind or beyond the INT bound. ``abs_total``: an int64 column's sum of |v|
        when the caller has it (TypedRecord sums a column once for all its fields), else summed
        here. The row ops: :meth:`_insert_rows_array`."""
        view = memoryview(values)  # indexed, a Python number on the pure path (not numpy's)
        n: cython.Py_ssize_t = len(view)
        kind: cython.int = _FLOAT if view.format == "d" else _INT
        if _rowop(self._op):
            self._insert_rows_array(view, keys)
            return
        if (self._size() and kind != self._kind) or keys is not None:
            raise Untyped(values)
        if kind == _FLOAT:
            d: cython.const[cython.double][:] = view  # const: numpy and Arrow arrays may be read-only
            self._append(d, _NO_INT64S, _NO_INT64S, True, n, kind, 0)
            return
        i: cython.const[cython.longlong][:] = view
        total: cython.ulonglong = 0
        u: cython.ulonglong
        j: cython.Py_ssize_t
        if self._op == _SUM or self._op == _MEAN:
            if abs_total is not None:
                total = abs_total
            else:
                for j in range(n):
                    u = _abs64(i[j])
                    if u > _LIMIT - total:
                        raise Untyped(values)
                    total += u
            if total > _LIMIT - self._magnitude:
                raise Untyped(values)
        self._append(_NO_DOUBLES, i, _NO_INT64S, True, n, kind, total)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _insert_rows_array(self, view: object, keys: Any) -> None:
        """:meth:`insert_array` of the row ops, row by row as :meth:`insert_many`: VARIANCE
        lifts each value ``v`` to ``(1, v, 0)`` (floats finite; ints of at most 2**25, the
        INT kind of its means), ARGMIN / ARGMAX each value and the key of ``keys`` (a float64
        or int64 buffer of the same length) to ``(value, key)`` (values not NaN). Checked
        first: :class:`Untyped`, nothing changed, for a value or a kind the core does not hold."""
        n: cython.Py_ssize_t = len(view)
        kind: cython.int = _FLOAT if view.format == "d" else _INT
        k2: cython.int = kind
        j: cython.Py_ssize_t
        x: cython.double
        d: cython.const[cython.double][:] = _NO_DOUBLES
        i: cython.const[cython.longlong][:] = _NO_INT64S
        kd: cython.const[cython.double][:] = _NO_DOUBLES
        ki: cython.const[cython.longlong][:] = _NO_INT64S
        if kind == _FLOAT:
            d = view
        else:
            i = view
        if self._op == _VARIANCE:
            if keys is not None or (self._size() and self._kind2 != -1 and kind != self._kind2):
                raise Untyped(view)
            for j in range(n):
                if not (-_INF < d[j] < _INF if kind == _FLOAT else -_VARIANCE_INT <= i[j] <= _VARIANCE_INT):
                    raise Untyped(view)
            self._xc = 1
            self._xm = 0.0
            self._xu = 0
            for j in range(n):
                self._xd = d[j] if kind == _FLOAT else cython.cast(cython.double, i[j])
                self._put(_FLOAT)
            if n:
                self._kind = _FLOAT
                self._kind2 = kind
            return
        if keys is None:
            raise Untyped(view)
        kview = memoryview(keys)
        if len(kview) != n:
            raise Untyped(view)
        k2 = _FLOAT if kview.format == "d" else _INT
        if k2 == _FLOAT:
            kd = kview
        else:
            ki = kview
        if self._size() and (kind != self._kind or k2 != self._kind2):
            raise Untyped(view)
        self._xu = 0
        if kind == _FLOAT:
            for j in range(n):
                if d[j] != d[j]:
                    raise Untyped(view)
        for j in range(n):
            if kind == _FLOAT:
                self._xd = d[j]
            else:
                self._xi = i[j]
            if k2 == _FLOAT:
                self._xm = kd[j]
            else:
                self._xkey = ki[j]
            self._put(kind)
        if n:
            self._kind = kind
            self._kind2 = k2

    def push(self, timestamp: Any, partial: Any) -> int:
        """``mta.Window``'s insertion in one call: :meth:`insert`, then evict down to the
        window's MaxSize; return how many were evicted."""
        self.insert(partial)
        n: cython.Py_ssize_t = self._size()
        if 0 <= self._max_size < n:
            self._evict(n - self._max_size)
            return n - self._max_size
        return 0

    def evict(self, k: Any = 1) -> None:
        n: cython.Py_ssize_t = self._size()
        m: cython.Py_ssize_t
        if type(k) is not int and (isinstance(k, bool) or not isinstance(k, int)):
            raise TypeError(f"evict count must be an int, got {type(k).__name__}")
        try:
            m = k
        except OverflowError:  # compiled only: beyond a C ssize_t
            m = -1
        if m < 0 or m > n:
            raise ValueError(f"cannot evict {k} elements from a window of {n}")
        self._evict(m)

    # -- results ----------------------------------------------------------------------

    def result(self) -> Any:
        """``monoid.lower(query())``: the window's result (a Mean's computed from the C values
        of its total: :meth:`_partial` while ``_lowering``)."""
        if self._op == _SUM or self._op == _MIN or self._op == _MAX:
            return self.query()
        if _rowop(self._op):
            return self.monoid.lower(self.query())
        if not self._size():
            return None  # Mean, MinCount, MaxCount, First and Last lower the identity to None
        if self._op != _MEAN:
            total = self.query()
            return total if not _pair(self._op) or total[1] else None
        self._lowering = True
        try:
            return self.query()
        finally:
            self._lowering = False

    @cython.ccall
    def query(self) -> object:
        raise NotImplementedError

    @cython.cfunc
    def _partial(self, d: cython.double, i: cython.longlong, c: cython.longlong) -> object:
        """The Python partial of value ``d`` (FLOAT kind) or ``i`` (INT) and count ``c`` (MEAN,
        MINCOUNT, MAXCOUNT); while ``_lowering``, ``Mean.lower`` of it, in C where that gives
        Python's result."""
        value: object
        if self._kind == _FLOAT:
            value = d
        else:
            value = i
        if self._op < _MEAN:  # SUM, MIN, MAX
            return value
        if self._op != _MEAN:
            return (value, c) if _pair(self._op) else value
        if not self._lowering:
            return (value, c)
        if not c:
            return None
        if self._kind == _FLOAT:
            return d / cython.cast(cython.double, c)
        if -_EXACT <= i <= _EXACT:  # both exact as doubles: one rounding, as Python's int / int
            return cython.cast(cython.double, i) / cython.cast(cython.double, c)
        return value / c  # a Python int: Python's division (a C one would round twice)

    @cython.cfunc
    def _row(self, cols: _Columns, r: cython.Py_ssize_t) -> object:
        """Row ``r`` of ``cols`` as the Python partial: a float or an int by kind, with its
        count for a counted op."""
        if self._op >= _VARIANCE:
            return self._row_of(cols, r)
        return self._partial(cols.d[r] if self._kind == _FLOAT else 0.0, cols.i[r] if self._kind == _INT else 0,
                             cols.c[r] if _counted(self._op) else 0)

    @cython.cfunc
    def _row_of(self, cols: _Columns, r: cython.Py_ssize_t) -> object:
        """:meth:`_row` of VARIANCE (count 1: ``(1, mean, 0)``, the mean of ``_kind2``, as
        lifted; else ``(count, mean, M2)``) and ARGMIN / ARGMAX (``(value, key)``)."""
        c: cython.longlong
        if self._op == _VARIANCE:
            c = cols.c[r]
            if c == 1:
                return (1, int(cols.d[r]) if self._kind2 == _INT else cols.d[r], 0)
            return (c, cols.d[r], cols.m[r])
        value: object
        if self._kind == _FLOAT:
            value = cols.d[r]
        else:
            value = cols.i[r]
        if self._kind2 == _FLOAT:
            return (value, cols.m[r])
        return (value, cols.k[r])

    @cython.cfunc
    def _row_first(self, cols: _Columns, r: cython.Py_ssize_t) -> object:
        """``combine(row r, identity)`` of a FLOAT row, as the plain monoid gives it."""
        if self._op != _SUM and self._op != _MEAN:
            return self._row(cols, r)  # combine(x, identity) is x
        return self._partial(_first(self._op, cols.d[r]), 0, cols.c[r] if _counted(self._op) else 0)

    @cython.cfunc
    def _joined(self, a: _Columns, ai: cython.Py_ssize_t, b: _Columns, bi: cython.Py_ssize_t) -> object:
        """``combine(row ai of a, row bi of b)`` as the Python partial."""
        op: cython.int = self._op
        if op >= _MINCOUNT:
            _combined_wide(op, self._kind, self._tmp, 0, a, ai, b, bi)
            return self._row(self._tmp, 0)
        c: cython.longlong = a.c[ai] + b.c[bi] if op == _MEAN else 0
        if self._kind == _FLOAT:
            return self._partial(_comb(op, a.d[ai], b.d[bi]), 0, c)
        return self._partial(0.0, _comb(op, a.i[ai], b.i[bi]), c)

    def __len__(self) -> int:
        return self._size()

    def begin_hold(self) -> None:
        self.hold = True

    def end_hold(self) -> bool:
        self.hold = False
        return False


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _set(kind: cython.int, counted: cython.bint, dst: _Columns, di: cython.Py_ssize_t, src: _Columns,
         si: cython.Py_ssize_t) -> cython.void:
    """Row ``di`` of ``dst`` = row ``si`` of ``src`` (with ``src``'s extra columns)."""
    if kind == _FLOAT:
        dst.d[di] = src.d[si]
    else:
        dst.i[di] = src.i[si]
    if counted:
        dst.c[di] = src.c[si]
    if src.extra:
        dst.m[di] = src.m[si]
        if src.extra & _XKEY:
            dst.k[di] = src.k[si]


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _combined(op: cython.int, kind: cython.int, dst: _Columns, di: cython.Py_ssize_t, a: _Columns,
              ai: cython.Py_ssize_t, b: _Columns, bi: cython.Py_ssize_t) -> cython.void:
    """Row ``di`` of ``dst`` = ``combine(row ai of a, row bi of b)`` (``dst`` may be ``a``
    or ``b``)."""
    if op >= _MINCOUNT:
        _combined_wide(op, kind, dst, di, a, ai, b, bi)
        return
    if kind == _FLOAT:
        dst.d[di] = _comb(op, a.d[ai], b.d[bi])
    else:
        dst.i[di] = _comb(op, a.i[ai], b.i[bi])
    if op == _MEAN:
        dst.c[di] = a.c[ai] + b.c[bi]


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _combined_wide(op: cython.int, kind: cython.int, dst: _Columns, di: cython.Py_ssize_t, a: _Columns,
                   ai: cython.Py_ssize_t, b: _Columns, bi: cython.Py_ssize_t) -> cython.void:
    """:func:`_combined` of the ops from MINCOUNT on (a MINCOUNT / MAXCOUNT count is taken
    before the value is written: ``dst`` may be ``a`` or ``b``)."""
    if _rowop(op):
        _combined_rows(op, kind, dst, di, a, ai, b, bi)
        return
    if kind == _FLOAT:
        if _pair(op):
            dst.c[di] = _ccomb(op, a.d[ai], b.d[bi], a.c[ai], b.c[bi])
        dst.d[di] = _comb(op, a.d[ai], b.d[bi])
    else:
        if _pair(op):
            dst.c[di] = _ccomb(op, a.i[ai], b.i[bi], a.c[ai], b.c[bi])
        dst.i[di] = _comb(op, a.i[ai], b.i[bi])


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _combined_rows(op: cython.int, kind: cython.int, dst: _Columns, di: cython.Py_ssize_t, a: _Columns,
                   ai: cython.Py_ssize_t, b: _Columns, bi: cython.Py_ssize_t) -> cython.void:
    """:func:`_combined` of VARIANCE rows (``_chan``, in its order of operations; counts are at
    least 1, so neither side is the identity) and of ARGMIN / ARGMAX rows (``_argmin``: the
    left row unless the right one's value is smaller; no NaN)."""
    na: cython.longlong
    nb: cython.longlong
    n: cython.longlong
    ma: cython.double
    delta: cython.double
    m2: cython.double
    left: cython.bint
    if op == _VARIANCE:
        na = a.c[ai]
        nb = b.c[bi]
        n = na + nb
        ma = a.d[ai]
        delta = b.d[bi] - ma
        m2 = (a.m[ai] + b.m[bi]) + (((delta * delta) * cython.cast(cython.double, na))
                                    * cython.cast(cython.double, nb)) / cython.cast(cython.double, n)
        dst.d[di] = ma + (delta * cython.cast(cython.double, nb)) / cython.cast(cython.double, n)
        dst.m[di] = m2
        dst.c[di] = n
        return
    if kind == _FLOAT:
        left = a.d[ai] <= b.d[bi] if op == _ARGMIN else a.d[ai] >= b.d[bi]
    else:
        left = a.i[ai] <= b.i[bi] if op == _ARGMIN else a.i[ai] >= b.i[bi]
    if left:
        _set(kind, False, dst, di, a, ai)
    else:
        _set(kind, False, dst, di, b, bi)


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedTwoStacks(_TypedCore):
    """:class:`~mta.algorithms.two_stacks.TwoStacks` over typed columns.

    Front stack ``f`` (rows ``0 .. nf-1``, row ``nf-1`` the oldest) with suffix aggregates
    ``fs`` (row ``r`` aggregates rows ``r`` down to ``0``: the object algorithm's
    ``_faggs[r + 1]``); back ``b`` (rows ``0 .. nb-1``, oldest first) with its running
    aggregate in ``bagg`` (one row).
    """

    name = "two_stacks"

    _f: _Columns
    _fs: _Columns
    _b: _Columns
    _bagg: _Columns
    _nf: cython.Py_ssize_t
    _nb: cython.Py_ssize_t

    def __init__(self, monoid: Monoid, max_size: int | None = None) -> None:
        _TypedCore.__init__(self, monoid, max_size)
        counted: cython.bint = _has_counts(self._op)
        extra: cython.int = _extra(self._op)
        self._f = _Columns(8, _FLOAT, counted, extra)
        self._fs = _Columns(8, _FLOAT, counted, extra)
        self._b = _Columns(8, _FLOAT, counted, extra)
        self._bagg = _Columns(1, -1, True, extra)
        self._nf = 0
        self._nb = 0

    @cython.cfunc
    def _size(self) -> cython.Py_ssize_t:
        return self._nf + self._nb

    @cython.cfunc
    def _put(self, kind: cython.int) -> cython.void:
        nb: cython.Py_ssize_t = self._nb
        if nb == self._b.size or kind != self._b.kind:
            self._b.reserve(nb + 1, nb, kind)
        b: _Columns = self._b
        g: _Columns = self._bagg
        op: cython.int = self._op
        if op >= _VARIANCE:
            self._store(b, nb, kind)
            if nb:
                _combined_wide(op, kind, g, 0, g, 0, b, nb)
            else:
                _set(kind, b.counted, g, 0, b, nb)
            self._nb = nb + 1
            return
        if op >= _MINCOUNT and _pair(op):  # the count first: it reads the aggregate's value
            b.c[nb] = self._xc
            if kind == _FLOAT:
                g.c[0] = _ccomb(op, g.d[0], self._xd, g.c[0], self._xc) if nb else self._xc
            else:
                g.c[0] = _ccomb(op, g.i[0], self._xi, g.c[0], self._xc) if nb else self._xc
        if kind == _FLOAT:
            b.d[nb] = self._xd
            g.d[0] = _comb(op, g.d[0], self._xd) if nb else _first(op, self._xd)
        else:
            b.i[nb] = self._xi
            g.i[0] = _comb(op, g.i[0], self._xi) if nb else self._xi
        if op == _MEAN:
            b.c[nb] = self._xc
            g.c[0] = g.c[0] + self._xc if nb else self._xc
        self._nb = nb + 1

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _append(self, d: cython.const[cython.double][:], i: cython.const[cython.longlong][:],
                c: cython.const[cython.longlong][:], ones: cython.bint,
                n: cython.Py_ssize_t, kind: cython.int, magnitude: cython.ulonglong) -> cython.void:
        """To the back, extending its running aggregate left to right (MINCOUNT, MAXCOUNT: one
        by one)."""
        if not n:
            return
        j: cython.Py_ssize_t
        if _pair(self._op):
            _TypedCore._append(self, d, i, c, ones, n, kind, magnitude)
            self._kind = kind
            return
        nb: cython.Py_ssize_t = self._nb
        self._b.reserve(nb + n, nb, kind)
        op: cython.int = self._op
        b: _Columns = self._b
        g: _Columns = self._bagg
        self._kind = kind
        self._magnitude += magnitude
        if kind == _FLOAT:
            g.d[0] = _extend(op, d, b.d, nb, n, g.d[0])
        else:
            g.i[0] = _extend(op, i, b.i, nb, n, g.i[0])
        if op == _MEAN:
            if ones:
                for j in range(n):
                    b.c[nb + j] = 1
                g.c[0] = (g.c[0] if nb else 0) + n
            else:
                g.c[0] = _extend(_SUM, c, b.c, nb, n, g.c[0])
        self._nb = nb + n

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _flip(self) -> cython.void:
        """Move the back onto the (empty) front: its rows reversed in place (newest first)
        become the front, whose old columns become the empty back (no copy, and the room of
        one window, not two); suffix aggregates built newest to oldest (``combine(v, acc)``,
        as the object algorithm does)."""
        nb: cython.Py_ssize_t = self._nb
        f: _Columns = self._b
        self._b = self._f
        self._f = f
        self._fs.reserve(nb, 0, self._kind)
        fs: _Columns = self._fs
        if _rowop(self._op):
            self._reverse_rows(f, fs, nb)
        elif _pair(self._op):
            if self._kind == _FLOAT:
                _reverse_suffixes_paired(self._op, f.d, f.c, fs.d, fs.c, nb)
            else:
                _reverse_suffixes_paired(self._op, f.i, f.c, fs.i, fs.c, nb)
        elif self._kind == _FLOAT:
            _reverse_suffixes(self._op, f.d, fs.d, nb, not self.timed)
        else:
            _reverse_suffixes(self._op, f.i, fs.i, nb, not self.timed)
        if self._op == _MEAN:
            _reverse_suffixes(_SUM, f.c, fs.c, nb, not self.timed)
        self._nf = nb
        self._nb = 0

    @cython.cfunc
    def _reverse_rows(self, f: _Columns, fs: _Columns, n: cython.Py_ssize_t) -> cython.void:
        """:func:`_reverse_suffixes` of whole rows (VARIANCE, ARGMIN, ARGMAX: ``combine(x,
        identity)`` is x)."""
        r: cython.Py_ssize_t
        kind: cython.int = self._kind
        tmp: _Columns = self._tmp
        for r in range(n // 2):
            _set(kind, f.counted, tmp, 0, f, r)
            _set(kind, f.counted, f, r, f, n - 1 - r)
            _set(kind, f.counted, f, n - 1 - r, tmp, 0)
        for r in range(n):
            if r == 0:
                _set(kind, f.counted, fs, 0, f, 0)
            else:
                _combined_wide(self._op, kind, fs, r, f, r, fs, r - 1)

    @cython.cfunc
    def _evict(self, k: cython.Py_ssize_t) -> cython.void:
        m: cython.Py_ssize_t
        while k:
            if not self._nf:
                self._flip()
            m = k if k < self._nf else self._nf
            self._untrack(self._f, self._nf - m, self._nf, -1)
            self._nf -= m
            k -= m
        if not self._nf and not self._nb:
            self._magnitude = 0

    # -- results ----------------------------------------------------------------------

    @cython.ccall
    def query(self) -> object:
        nf: cython.Py_ssize_t = self._nf
        if not self._nb:
            return self._row(self._fs, nf - 1) if nf else self.monoid.identity
        if not nf:
            return self._row(self._bagg, 0)
        return self._joined(self._fs, nf - 1, self._bagg, 0)

    def __iter__(self) -> Iterator[Any]:
        return iter([*(self._row(self._f, r) for r in range(self._nf - 1, -1, -1)),
                     *(self._row(self._b, r) for r in range(self._nb))])

    def clear(self) -> None:
        self._nf = self._nb = 0
        self._magnitude = 0

    # -- batches that may be undone (mta.Window.insert_slices) -------------------------

    def snapshot(self) -> tuple:
        return (self._kind, self._f.copy(), self._fs.copy(), self._b.copy(), self._bagg.copy(), self._nf,
                self._nb, self._magnitude, self._kind2)

    def restore(self, snapshot: tuple) -> None:
        self._kind, self._f, self._fs, self._b, self._bagg, self._nf, self._nb, self._magnitude = snapshot[:8]
        self._kind2 = snapshot[8] if len(snapshot) > 8 else -1  # older pickles: no _kind2

    def __reduce__(self) -> tuple:
        # copy.deepcopy and pickle (the Stream engine copies windows)
        return (_restored, (type(self), (self.monoid, None if self._max_size < 0 else self._max_size),
                            self.snapshot()))

    # -- demotion ---------------------------------------------------------------------

    def oldest(self) -> Any:
        """The oldest partial (the window is not empty)."""
        return self._row(self._f, self._nf - 1) if self._nf else self._row(self._b, 0)

    def to_object(self, monoid: Monoid | None = None, wrap: Any = None) -> Any:
        """The object :class:`TwoStacks` in this state: the same stacks and aggregates, so
        that every later result is the one it would have given all along.

        ``monoid`` and ``wrap`` build it over another monoid whose partials wrap ours (the
        timed windows': :class:`TypedTimed`): each partial becomes ``wrap(first, last, p)``,
        ``first .. last`` the window positions (0 the oldest) of the values it aggregates."""
        from mta.algorithms.two_stacks import TwoStacks

        twin = TwoStacks(monoid if monoid is not None else self.monoid)
        wrap = wrap if wrap is not None else _bare
        nf: cython.Py_ssize_t = self._nf
        twin._fvals = [wrap(nf - 1 - r, nf - 1 - r, self._row(self._f, r)) for r in range(nf)]
        twin._faggs = [twin.monoid.identity, *(wrap(nf - 1 - r, nf - 1, self._row(self._fs, r)) for r in range(nf))]
        twin._bvals = [wrap(nf + j, nf + j, self._row(self._b, j)) for j in range(self._nb)]
        if self._nb:
            twin._bagg = wrap(nf, nf + self._nb - 1, self._row(self._bagg, 0))
        return twin


def _bare(first: int, last: int, partial: Any) -> Any:
    """``to_object``'s ``wrap`` for the core's own monoid."""
    return partial


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedDABA(_TypedCore):
    """:class:`~mta.algorithms.daba.DABA` (Cached DABA) over typed columns.

    The same ring (``vals``, ``aggs``: capacity 16, doubled when full, halved at a quarter)
    and pointers ``head <= l <= r <= a <= b <= tail`` as the object algorithm (see its
    docstring for the regions); ``acc`` row 0 is the back's aggregate (B = [b, tail), empty
    when b == tail) and row 1 the cached aggregate of [r, b) since the last flip.
    """

    name = "daba"

    _vals: _Columns
    _aggs: _Columns
    _acc: _Columns
    _mask: cython.Py_ssize_t
    _shrink_at: cython.Py_ssize_t
    _head: cython.Py_ssize_t
    _l: cython.Py_ssize_t
    _r: cython.Py_ssize_t
    _a: cython.Py_ssize_t
    _b: cython.Py_ssize_t
    _tail: cython.Py_ssize_t

    def __init__(self, monoid: Monoid, max_size: int | None = None) -> None:
        _TypedCore.__init__(self, monoid, max_size)
        self._acc = _Columns(2, -1, True, _extra(self._op))
        self.clear()

    def clear(self) -> None:
        counted: cython.bint = _has_counts(self._op)
        self._vals = _Columns(16, self._kind, counted, _extra(self._op))
        self._aggs = _Columns(16, self._kind, counted, _extra(self._op))
        self._mask = 15
        self._shrink_at = -1
        self._head = self._l = self._r = self._a = self._b = self._tail = 0
        self._magnitude = 0

    @cython.cfunc
    def _size(self) -> cython.Py_ssize_t:
        return self._tail - self._head

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _put(self, kind: cython.int) -> cython.void:
        if kind != self._vals.kind:  # an empty window takes the other kind
            self._vals.reserve(self._mask + 1, 0, kind)
            self._aggs.reserve(self._mask + 1, 0, kind)
        self._kind = kind
        if self._tail - self._head > self._mask:
            self._resize(2 * (self._mask + 1))
        t: cython.Py_ssize_t = self._tail
        i: cython.Py_ssize_t = t & self._mask
        vals: _Columns = self._vals
        acc: _Columns = self._acc
        op: cython.int = self._op
        empty: cython.bint = self._b == t  # the back (B) is empty: its aggregate is the identity
        if op >= _VARIANCE:
            self._store(vals, i, kind)
            if empty:
                _set(kind, vals.counted, acc, 0, vals, i)
            else:
                _combined_wide(op, kind, acc, 0, acc, 0, vals, i)
            self._tail = t + 1
            self._fixup()
            return
        if op >= _MINCOUNT and _pair(op):  # the count first: it reads the aggregate's value
            vals.c[i] = self._xc
            if kind == _FLOAT:
                acc.c[0] = self._xc if empty else _ccomb(op, acc.d[0], self._xd, acc.c[0], self._xc)
            else:
                acc.c[0] = self._xc if empty else _ccomb(op, acc.i[0], self._xi, acc.c[0], self._xc)
        if kind == _FLOAT:
            vals.d[i] = self._xd
            acc.d[0] = _first(op, self._xd) if empty else _comb(op, acc.d[0], self._xd)
        else:
            vals.i[i] = self._xi
            acc.i[0] = self._xi if empty else _comb(op, acc.i[0], self._xi)
        if op == _MEAN:
            vals.c[i] = self._xc
            acc.c[0] = self._xc if empty else acc.c[0] + self._xc
        self._tail = t + 1
        self._fixup()

    @cython.cfunc
    @cython.exceptval(check=False)
    def _fixup(self) -> cython.void:
        """One step of the de-amortized flip (the object algorithm's ``_fixup``)."""
        l: cython.Py_ssize_t = self._l
        b: cython.Py_ssize_t = self._b
        r: cython.Py_ssize_t
        a: cython.Py_ssize_t
        kind: cython.int = self._kind
        counted: cython.bint = _has_counts(self._op)
        if l == b:  # flip: the whole queue becomes the front, B becomes R
            l = self._head
            r = b
            a = b = self._tail
            _set(kind, counted, self._acc, 1, self._acc, 0)  # rb = back; the back is empty now
        else:
            r = self._r
            a = self._a
        if self._head != b:
            mask: cython.Py_ssize_t = self._mask
            if a != r:  # shift: the last element of R becomes a suffix of A
                a -= 1
                if a + 1 == b:
                    _set(kind, counted, self._aggs, a & mask, self._vals, a & mask)
                else:
                    _combined(self._op, kind, self._aggs, a & mask, self._vals, a & mask, self._aggs, (a + 1) & mask)
            if l != r:  # shrink: extend an L suffix from r to b (R was not empty: rb is set)
                _combined(self._op, kind, self._aggs, l & mask, self._aggs, l & mask, self._acc, 1)
                l += 1
            else:  # L, R empty: the first element of A joins F as it is
                l = r = a = l + 1
        self._l = l
        self._r = r
        self._a = a
        self._b = b

    @cython.cfunc
    def _evict(self, k: cython.Py_ssize_t) -> cython.void:
        self._untrack(self._vals, self._head, self._head + k, self._mask)
        j: cython.Py_ssize_t
        for j in range(k):
            self._head += 1
            self._fixup()
            if self._tail - self._head <= self._shrink_at:
                self._resize((self._mask + 1) // 2)
        if self._head == self._tail:
            self._magnitude = 0

    @cython.cfunc
    def _resize(self, cap: cython.Py_ssize_t) -> cython.void:
        head: cython.Py_ssize_t = self._head
        n: cython.Py_ssize_t = self._tail - head
        counted: cython.bint = _has_counts(self._op)
        vals = _Columns(cap, self._kind, counted, _extra(self._op))
        aggs = _Columns(cap, self._kind, counted, _extra(self._op))
        p: cython.Py_ssize_t
        for p in range(n):
            _set(self._kind, counted, vals, p, self._vals, (head + p) & self._mask)
            _set(self._kind, counted, aggs, p, self._aggs, (head + p) & self._mask)
        self._vals = vals
        self._aggs = aggs
        self._mask = cap - 1
        self._shrink_at = cap // 4 if cap > 16 else -1
        self._head = 0
        self._l -= head
        self._r -= head
        self._a -= head
        self._b -= head
        self._tail = n

    # -- results ----------------------------------------------------------------------

    @cython.ccall
    def query(self) -> object:
        head: cython.Py_ssize_t = self._head
        if head == self._b:  # the front is empty only when the window is
            return self.monoid.identity
        if self._b == self._tail:  # combine(front, identity)
            if self.timed or self._kind == _INT:
                return self._row(self._aggs, head & self._mask)
            return self._row_first(self._aggs, head & self._mask)
        return self._joined(self._aggs, head & self._mask, self._acc, 0)

    def __iter__(self) -> Iterator[Any]:
        return iter([self._row(self._vals, p & self._mask) for p in range(self._head, self._tail)])

    def oldest(self) -> Any:
        """The oldest partial (the window is not empty)."""
        return self._row(self._vals, self._head & self._mask)

    # -- batches that may be undone (mta.Window.insert_slices) -------------------------

    def snapshot(self) -> tuple:
        return (self._kind, self._vals.copy(), self._aggs.copy(), self._acc.copy(), self._mask, self._shrink_at,
                self._head, self._l, self._r, self._a, self._b, self._tail, self._magnitude, self._kind2)

    def restore(self, snapshot: tuple) -> None:
        (self._kind, self._vals, self._aggs, self._acc, self._mask, self._shrink_at,
         self._head, self._l, self._r, self._a, self._b, self._tail, self._magnitude) = snapshot[:13]
        self._kind2 = snapshot[13] if len(snapshot) > 13 else -1  # older pickles: no _kind2

    def __reduce__(self) -> tuple:
        return (_restored, (type(self), (self.monoid, None if self._max_size < 0 else self._max_size),
                            self.snapshot()))

    # -- demotion ---------------------------------------------------------------------

    def to_object(self, monoid: Monoid | None = None, wrap: Any = None) -> Any:
        """The object :class:`DABA` in this state (ring, capacity, pointers and the region
        aggregates it reads), so that every later result is the one it would have given;
        ``monoid`` and ``wrap`` as for :meth:`TypedTwoStacks.to_object`."""
        from mta.algorithms.daba import DABA

        twin = DABA(monoid if monoid is not None else self.monoid)
        wrap = wrap if wrap is not None else _bare
        head: cython.Py_ssize_t = self._head
        mask: cython.Py_ssize_t = self._mask
        vals: list = [None] * (mask + 1)
        aggs: list = [None] * (mask + 1)
        for p in range(head, self._tail):
            vals[p & mask] = wrap(p - head, p - head, self._row(self._vals, p & mask))
        for first, stop, last in ((head, self._l, self._b), (self._l, self._r, self._r), (self._a, self._b, self._b)):
            for p in range(first, stop):  # F and A: aggregates of p .. b-1; L: of p .. r-1
                aggs[p & mask] = wrap(p - head, last - 1 - head, self._row(self._aggs, p & mask))
        twin._vals, twin._aggs, twin._mask, twin._shrink_at = vals, aggs, mask, self._shrink_at
        twin._head, twin._l, twin._r, twin._a, twin._b, twin._tail = (
            head, self._l, self._r, self._a, self._b, self._tail)
        identity = twin.monoid.identity
        twin._back = wrap(self._b - head, self._tail - 1 - head, self._row(self._acc, 0)) \
            if self._b != self._tail else identity
        twin._rb = wrap(self._r - head, self._b - 1 - head, self._row(self._acc, 1)) if self._l != self._r else identity
        return twin


def _restored(cls: type, args: tuple, snapshot: tuple) -> Any:
    """``cls(*args)`` in the state of ``snapshot`` (unpickling a typed core)."""
    core = cls(*args)
    core.restore(snapshot)
    return core


# -- mta.Window's per-event calls -----------------------------------------------------------


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class WindowFields:
    """The base of :class:`mta.Window`: the field that :class:`Events` reads and writes on
    every event, a C field here (compiled) rather than an entry of the window's ``__dict__``,
    whose read and write cost an event about 430 instructions, a fifth of it. On the pure
    path a plain base: the field is in the window's ``__dict__``."""

    #: The window's newest timestamp (in order; out of order, the last one inserted); None
    #: while it has none.
    _newest = cython.declare(object, visibility="public")

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Python's default, which pickles what the window's ``__getstate__`` gives (else
        Cython's own would pickle this C field alone)."""
        return object.__reduce_ex__(self, protocol)


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class Events:
    """``mta.Window.insert`` and ``query`` of a window on a typed core, one C call each.

    :class:`PerEvent` hands them out as the window's ``insert`` and ``query``, so that an
    event costs no Python frame. :meth:`insert` takes the plain case: a timestamp exactly an
    int or a finite float, not older than the window's newest (out of order: any, the core
    refusing a late one with ``Untyped``), and a value the monoid lifts
    unchanged (exactly an int or a float; finite for Sum, Mean, MinCount and MaxCount, not NaN
    for Min and Max, any for First and Last; any value for Count), as a ``(value, 1)`` pair for the pair monoids,
    ``(1, value, 0)`` for Variance; for ArgMin and ArgMax a ``(key, value)`` tuple, value an
    int or a float other than NaN, as ``(value, key)``; for a Record an int or a float,
    lifted by its core (``TypedRecord.lift``). Anything else, and an update the core cannot hold (``Untyped``,
    raised before any change), goes to ``checked_insert``, the window's general insertion,
    which names what is wrong or demotes the window, so that both give the same results and
    errors. Once the window has demoted (:meth:`retire`), every call goes the checked way:
    a method saved before (``insert = w.insert``) stays right. The window and its Events
    refer to each other: a dropped window is freed by the cycle collector, not at once.
    """

    _window: WindowFields
    _algorithm: object
    _timed: cython.bint  # the algorithm is a TypedTimed (else a core under MaxSize or no policy)
    _push: object
    _result: object
    _checked_insert: object
    _checked_query: object
    _op: cython.int  # -1: a Record (its core's lift builds the partial)
    _lift: object  # a Record's: its TypedRecord's lift
    _count: cython.bint
    _live: cython.bint  # False once the window has left the typed core
    _ordered: cython.bint  # out of order: the core refuses a late update itself (Untyped)

    def __init__(self, window: Any, algorithm: Any, monoid: Monoid, checked_insert: Any,
                 checked_query: Any) -> None:
        self._live = True
        self._window = window
        self._algorithm = algorithm
        self._timed = isinstance(algorithm, TypedTimed)
        self._push = algorithm.push
        self._result = algorithm.result
        self._checked_insert = checked_insert
        self._checked_query = checked_query
        op = wide_op_of(monoid)
        self._op = -1 if op is None else op
        self._lift = getattr(algorithm, "core", algorithm).lift if op is None else None
        self._count = type(monoid) is Count
        self._ordered = window._ordered

    def insert(self, timestamp: Any, value: Any) -> int:
        """``Window.insert``: add one update, enforce the policy, return how many left."""
        window: WindowFields = self._window
        if not self._live:
            return self._checked_insert(window, timestamp, value)
        newest = window._newest
        partial: object = value
        t: cython.double
        x: cython.double
        kind = type(timestamp)
        if kind is float:
            t = timestamp
            if not -_INF < t < _INF:
                return self._checked_insert(window, timestamp, value)
        elif kind is not int:
            return self._checked_insert(window, timestamp, value)
        if newest is not None and timestamp < newest and not self._ordered:
            return self._checked_insert(window, timestamp, value)
        # Monoid.lift, for the values it returns unchanged
        if self._op < 0:  # a Record of plain numbers: its core's lift (else the checked way names what is wrong)
            if type(value) is not float and type(value) is not int:
                return self._checked_insert(window, timestamp, value)
            try:
                partial = self._lift(value)
            except ValueError:
                return self._checked_insert(window, timestamp, value)
        elif self._count:
            partial = 1
        elif type(value) is float:
            x = value
            if self._op == _MIN or self._op == _MAX:
                if x != x:
                    return self._checked_insert(window, timestamp, value)
            elif not -_INF < x < _INF and self._op != _FIRST and self._op != _LAST:
                return self._checked_insert(window, timestamp, value)
            if self._op == _MEAN or _pair(self._op):
                partial = (value, 1)
            elif self._op == _VARIANCE:
                partial = (1, value, 0)
        elif type(value) is int:
            if self._op == _MEAN or _pair(self._op):
                partial = (value, 1)
            elif self._op == _VARIANCE:
                partial = (1, value, 0)  # the core refuses |value| > 2**25: the checked path lifts it
        elif (self._op == _ARGMIN or self._op == _ARGMAX) and type(value) is tuple and len(value) == 2:
            partial = (value[1], value[0])  # _Arg.lift: (key, v) -> (v, key), v a number other than NaN
            if type(partial[0]) is float:
                x = partial[0]
                if x != x:
                    return self._checked_insert(window, timestamp, value)
            elif type(partial[0]) is not int:
                return self._checked_insert(window, timestamp, value)
        else:
            return self._checked_insert(window, timestamp, value)
        window._newest = timestamp  # before the push: a stored core's commit during it records it
        try:
            return self._push(timestamp, partial)
        except BaseException as error:
            window._newest = newest
            if isinstance(error, Untyped):
                return self._checked_insert(window, timestamp, value)
            raise

    def insert_arrays(self, timestamps: Any, values: Any) -> Any:
        """``Window.insert_many(timestamps, values)`` of numeric columns
        (:func:`mta.arrays.numeric_array`) straight into the core's C loops, when every update
        is plain as :meth:`insert` takes it: timestamps finite and in order, none older than
        the window's newest, values the monoid lifts unchanged (Variance: to ``(1, v, 0)``;
        ArgMin and ArgMax: a structured array of ``(key, value)`` records, :func:`_pair_columns`,
        the pairs its ``tolist`` gives the general path). The checks are C loops over the
        columns. Returns how many were evicted; None, with nothing changed, where the
        window's general path must decide (other columns, an update it refuses and names, a
        kind the core does not hold: it demotes). Not a Record's window (its columns go
        Window._record_arrays' way)."""
        if not self._live:
            return None
        ts = timestamps if _plain_column(timestamps) else numeric_array(timestamps)
        if ts is None:
            return None
        tview = memoryview(ts)  # indexed, a Python number on the pure path (not numpy's)
        n: cython.Py_ssize_t = len(tview)
        window: WindowFields = self._window
        newest = window._newest
        if not n or not _plain_times(tview) or (newest is not None and tview[0] < newest):
            return None
        columns = value_columns(values, self._op, self._count, n)
        if columns is None:
            return None
        vs, keys = columns
        window._newest = tview[n - 1]  # before the insertion: a stored core's commit during it records it
        try:
            if self._timed:
                self._algorithm.insert_arrays(ts, vs, keys)
            elif keys is None:
                self._algorithm.insert_array(vs)
            else:
                self._algorithm.insert_array(vs, keys)
        except BaseException as error:
            window._newest = newest
            if isinstance(error, Untyped):
                return None
            raise
        return window._enforce()

    def query(self, t_from: Any = None, t_to: Any = None) -> Any:
        """``Window.query``: the window's result (of a time range: the window's own way)."""
        if t_from is None and t_to is None and self._live:
            return self._result()
        return self._checked_query(self._window, t_from, t_to)

    def retire(self) -> None:
        """The window has left the typed core: from now on every call goes the checked way."""
        self._live = False


_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


@cython.cfunc
def _plain_column(column: object) -> cython.bint:
    """Whether ``column`` is a 1-D numpy array of float64 or int64 (native order): what
    :func:`mta.arrays.numeric_array` returns unchanged."""
    if type(column) is not _NDARRAY or column.ndim != 1:
        return False
    dtype = column.dtype
    return dtype is _F64 or dtype is _I64


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _plain_times(view: object) -> cython.bint:
    """Whether the timestamps of a float64 or int64 buffer (not empty) are finite and
    non-decreasing: one C loop (NaN fails every comparison)."""
    n: cython.Py_ssize_t = len(view)
    j: cython.Py_ssize_t
    x: cython.double
    if view.format == "d":
        d: cython.const[cython.double][:] = view
        x = d[0]
        if not -_INF < x:
            return False
        for j in range(n):
            if not x <= d[j] < _INF:
                return False
            x = d[j]
        return True
    i: cython.const[cython.longlong][:] = view
    for j in range(1, n):
        if i[j] < i[j - 1]:
            return False
    return True


def _pair_columns(values: Any) -> tuple | None:
    """The keys and the values of a numpy structured array of two numeric fields, the
    ``(key, value)`` pairs ArgMin and ArgMax lift (its ``tolist`` gives them, as the general
    path reads it), as new int64 or float64 arrays holding the same numbers
    (:func:`mta.arrays.numeric_array`); None for anything else."""
    names = values.dtype.names
    if names is None or len(names) != 2:
        return None
    keys = numeric_array(values[names[0]])
    vs = None if keys is None else numeric_array(values[names[1]])
    if vs is None:
        return None
    # copies: contiguous, and of the canonical dtype (a field's may say its byte order, "=d")
    return keys.astype(keys.dtype.type), vs.astype(vs.dtype.type)


def value_columns(values: Any, op: int, count: bool, n: int) -> tuple | None:
    """A column of ``n`` values as the typed cores' array insertions take it, ``(values,
    keys)``: values an int64 or float64 numpy array (:func:`mta.arrays.numeric_array`; Count:
    ``n`` ones) whose every value the monoid of ``op`` lifts (:func:`liftable`); keys None,
    but for ArgMin and ArgMax, whose column is a structured array of ``(key, value)`` records
    (:func:`_pair_columns`). None where the general path must decide."""
    keys = None
    if op == _ARGMIN or op == _ARGMAX:
        if type(values) is not _NDARRAY or values.ndim != 1 or len(values) != n:
            return None
        pair = _pair_columns(values)
        if pair is None:
            return None
        keys, vs = pair
    else:
        vs = values if _plain_column(values) else numeric_array(values)
        if vs is None or len(vs) != n:
            return None
    if count:
        vs = np.ones(n, dtype=np.int64)
    elif not liftable(memoryview(vs), op):
        return None
    return vs, keys


@cython.ccall
@cython.boundscheck(False)
@cython.wraparound(False)
def liftable(view: object, op: cython.int) -> cython.bint:
    """Whether the monoid of ``op`` lifts every value of a float64 or int64 buffer
    unchanged (not Count) or, for the row ops, as their cores' ``insert_array`` takes it:
    floats finite for Sum, Mean, MinCount, MaxCount and Variance, not NaN for Min, Max,
    ArgMin and ArgMax, any for First and Last; ints all (Variance: the core checks its
    bound)."""
    if view.format != "d" or op == _FIRST or op == _LAST:
        return True
    d: cython.const[cython.double][:] = view
    n: cython.Py_ssize_t = len(view)
    j: cython.Py_ssize_t
    if op == _SUM or op == _MEAN or op == _MINCOUNT or op == _MAXCOUNT or op == _VARIANCE:
        for j in range(n):
            if not -_INF < d[j] < _INF:
                return False
        return True
    for j in range(n):
        if d[j] != d[j]:
            return False
    return True


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class PerEvent:
    """``Window.insert`` and ``Window.query`` as descriptors: read on a window that has
    :class:`Events` (``window._events``), the Events' method, one C call; on any other window,
    the method itself bound to it; on the class, the function. A descriptor on the class, not
    an attribute of each window, so subclasses, patches of the class and wrappers set on a
    window work as with any method."""

    function = cython.declare(object, visibility="readonly")
    _query: cython.bint

    def __init__(self, function: Any) -> None:
        self.function = function
        self._query = function.__name__ == "query"

    def __get__(self, window: Any, owner: Any) -> Any:
        if window is None:
            return self.function
        events = getattr(window, "_events", None)
        if events is None:
            return self.function.__get__(window, owner)
        return events.query if self._query else events.insert


# -- timed windows ------------------------------------------------------------------------

_PLAN_SIZE = cython.declare(cython.int, 0)
_PLAN_TIME = cython.declare(cython.int, 1)
_PLAN_ANY = cython.declare(cython.int, 2)
_PLAN_ALL = cython.declare(cython.int, 3)
_TS_LIMIT = 2 ** 62  # INT timestamps: |t| below it, so that differences fit in an int64
_TS_LIMIT_C = cython.declare(cython.longlong, 2 ** 62)


def plan(policy: Any) -> tuple | None:
    """The policy as :class:`TypedTimed` evaluates it natively, or None when it cannot do it
    exactly (a policy of the user's; an int TimeRange width a double does not hold).

    ``MaxSize(m)`` -> ``(SIZE, m)``; ``TimeRange(w)`` -> ``(TIME, w as int64 for int
    timestamps, w as double for float ones)``; ``any_of``/``all_of`` -> ``(ANY|ALL, children)``."""
    kind = type(policy)
    if kind is MaxSize:
        if policy.max_size > sys.maxsize:
            return None  # counts are C ssize_t (no window gets near it)
        return (_PLAN_SIZE, policy.max_size)
    if kind is TimeRange:
        width = policy.width
        if isinstance(width, float):
            width = float(width)  # numpy's float64 is a float too
            # int differences d: d >= width exactly when d >= ceil(width)
            return (_PLAN_TIME, int(min(-(-width // 1), _I64_MAX)), width)
        if width > 2 ** 53:
            return None  # float timestamps compare with it exactly in Python, not as a double
        return (_PLAN_TIME, int(width), float(width))
    if kind in (AnyOf, AllOf):
        children = tuple(map(plan, policy.policies))
        if None in children:
            return None
        return (_PLAN_ALL if kind is AllOf else _PLAN_ANY, children)
    return None


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedTimed:
    """A typed core under a timed window's elements ``(1, timestamp, partial)`` (what
    ``mta.Window`` inserts when its policy reads times: through :meth:`push`,
    :meth:`insert_columns` and :meth:`insert_arrays`), with the timestamps in a column.

    The window's total is ``(count, newest timestamp, core's query())``, as the object
    algorithm's over :class:`mta.window._Timed` gives it. :meth:`enforce` evaluates the
    window's own policy (:func:`plan`) on the timestamp column, by binary search for a
    TimeRange (timestamps are in order), rather than on aggregated prefixes: for a
    prefix-monotone policy both find the same longest condemned prefix. Timestamps are all
    ints (|t| < 2**62) or all floats, as values are one kind: another raises
    :class:`Untyped`.
    """

    core = cython.declare(object, visibility="public")
    monoid = cython.declare(object, visibility="public")
    hold = cython.declare(cython.bint, visibility="public")
    _policy: object
    _plan: object
    # the plan when it is a single MaxSize or TimeRange (code -1: anything else)
    _code: cython.int
    _size: cython.Py_ssize_t
    _width_i: cython.longlong
    _width_d: cython.double
    _td: cython.double[:]
    _ti: cython.longlong[:]
    _cap: cython.Py_ssize_t
    _h: cython.Py_ssize_t
    _n: cython.Py_ssize_t
    _tkind: cython.int

    def __init__(self, core: Any, timed_monoid: Monoid, policy: Any) -> None:
        self.core = core
        core.timed = True  # the timed monoid returns x from combine(x, identity)
        self.monoid = timed_monoid
        self.hold = False
        self._policy = policy
        self._plan = plan(policy)
        if self._plan is None:
            raise TypeError(f"typed cores cannot evaluate policy {policy!r}")
        self._code, self._size, self._width_i, self._width_d = -1, 0, 0, 0.0
        if self._plan[0] == _PLAN_SIZE:
            self._code, self._size = _PLAN_SIZE, self._plan[1]
        elif self._plan[0] == _PLAN_TIME:
            self._code, self._width_i, self._width_d = _PLAN_TIME, self._plan[1], self._plan[2]
        self._cap = 8
        self._td = _doubles(8)
        self._ti = _int64s(8)
        self._h = self._n = 0
        self._tkind = _FLOAT

    @staticmethod
    @cython.binding(True)  # a CyFunction: windows pickle functools.partial(TypedTimed.over, ...) by its name
    def over(make_core: Any, timed_monoid: Monoid, policy: Any) -> TypedTimed:
        """A new timed window over a new core ``make_core()``."""
        return TypedTimed(make_core(), timed_monoid, policy)

    @property
    def name(self) -> str:
        return self.core.name

    # -- timestamps -------------------------------------------------------------------

    @cython.cfunc
    def _tkind_of(self, t: object, kind: cython.int) -> cython.int:
        """The kind of timestamp ``t``; :class:`Untyped` if it does not fit a window of ``kind``."""
        if type(t) is float:
            if kind == _INT:
                raise Untyped(t)
            return _FLOAT
        if type(t) is not int or kind == _FLOAT or not -_TS_LIMIT < t < _TS_LIMIT:
            raise Untyped(t)
        return _INT

    @cython.cfunc
    def _room(self, n: cython.Py_ssize_t) -> cython.void:
        """Room for ``n`` more timestamps after the live ones (compacting or doubling)."""
        h: cython.Py_ssize_t = self._h
        live: cython.Py_ssize_t = self._n
        if h + live + n <= self._cap:
            return
        cap: cython.Py_ssize_t = self._cap
        j: cython.Py_ssize_t
        if live + n <= cap // 2:  # in place, the live ones to the front (forward: dst < src)
            td: cython.double[:] = self._td
            ti: cython.longlong[:] = self._ti
            if self._tkind == _FLOAT:
                for j in range(live):
                    td[j] = td[h + j]
            else:
                for j in range(live):
                    ti[j] = ti[h + j]
            self._h = 0
            return
        while live + n > cap // 2:
            cap *= 2
        new_d: cython.double[:] = _doubles(cap)
        new_i: cython.longlong[:] = _int64s(cap)
        new_d[:live] = self._td[h:h + live]
        new_i[:live] = self._ti[h:h + live]
        self._td, self._ti, self._cap, self._h = new_d, new_i, cap, 0

    @cython.cfunc
    def _timestamp(self, position: cython.Py_ssize_t) -> object:
        """The timestamp at window position ``position`` (0 the oldest), as the Python number."""
        if self._tkind == _FLOAT:
            return self._td[self._h + position]
        return self._ti[self._h + position]

    # -- updates ----------------------------------------------------------------------

    @cython.cfunc
    def _insert(self, t: object, partial: object) -> cython.void:
        kind: cython.int = self._tkind_of(t, self._tkind if self._n else -1)
        self.core.insert(partial)  # Untyped here changes nothing either
        self._append_time(kind, t)

    @cython.cfunc
    def _condemned_now(self) -> cython.Py_ssize_t:
        """How many of the oldest the window's policy condemns as the window is now."""
        if self._code == _PLAN_TIME:
            return self._expired(self._width_i, self._width_d)
        if self._code == _PLAN_SIZE:
            return self._n - self._size if self._n > self._size else 0
        return self._condemned(self._plan)

    @cython.cfunc
    def _append_time(self, kind: cython.int, t: object) -> cython.void:
        """Append timestamp ``t`` (of ``kind``, as :meth:`_tkind_of` judged it) after the newest."""
        self._room(1)
        self._tkind = kind
        if kind == _FLOAT:
            self._td[self._h + self._n] = t
        else:
            self._ti[self._h + self._n] = t
        self._n += 1

    def push(self, timestamp: Any, partial: Any) -> int:
        """``mta.Window``'s insertion in one call: insert ``(1, timestamp, partial)``, then
        enforce the window's policy; return how many were evicted."""
        self._insert(timestamp, partial)
        k: cython.Py_ssize_t = self._condemned_now()
        if k:
            self.core.evict(k)
            self._h += k
            self._n -= k
        return k

    def result(self) -> Any:
        """``monoid.lower`` of the window's partial: the core's result."""
        return self.core.result()

    def push_first(self, timestamp: Any, partial: Any) -> int:
        """:meth:`push` in the order of ``mta.Window``'s search-first insertion (how it drives
        the AmortizedMTA on a durable store): the updates the policy condemns once this one
        joins (:meth:`condemned_at`) are evicted first, then it is inserted, unless it goes
        too (then it never is). The policy then condemns nothing more (the prefix was the
        longest), so nothing is enforced after. Returns how many left, this one included;
        :class:`Untyped`, with nothing changed, if the timestamp or the partial does not fit."""
        k: cython.Py_ssize_t = self.condemned_at(timestamp)
        n: cython.Py_ssize_t = self._n
        if not self.core.fits(partial):
            raise Untyped(partial)
        if k > n:  # the update goes too
            if n:
                self._drop(n)
            return k
        if k:
            self._drop(k)
        self._insert(timestamp, partial)
        return k

    @cython.cfunc
    def _drop(self, k: cython.Py_ssize_t) -> cython.void:
        """Evict the ``k`` oldest (``0 < k <= len``)."""
        self.core.evict(k)
        self._h += k
        self._n -= k
        if not self._n:
            self._h = 0

    def condemned_at(self, timestamp: Any) -> int:
        """How many of the oldest updates the window's policy condemns once an update at
        ``timestamp`` joins the window (``len + 1``: that one too), changing nothing: the
        search of ``mta.Window``'s search-first insertion. :class:`Untyped` if the timestamp
        does not fit."""
        kind: cython.int = self._tkind_of(timestamp, self._tkind if self._n else -1)
        old: cython.int = self._tkind
        k: cython.Py_ssize_t
        self._append_time(kind, timestamp)
        try:
            k = self._condemned_now()
        finally:
            self._n -= 1
            self._tkind = old
        return k

    def accepts(self, partials: Sequence[Any], timestamps: Sequence[Any]) -> bool:
        """Whether a batch of these partials at these timestamps would be taken."""
        kind: cython.int = self._tkind if self._n else -1
        try:
            for t in timestamps:
                kind = self._tkind_of(t, kind)
        except Untyped:
            return False
        return self.core.accepts(partials)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert_columns(self, timestamps: Sequence[Any], partials: Sequence[Any]) -> None:
        """Insert the elements ``(1, timestamps[j], partials[j])``, given in columns (the
        whole batch is checked first)."""
        n: cython.Py_ssize_t = len(timestamps)
        kind: cython.int = self._tkind if self._n else -1
        for t in timestamps:
            kind = self._tkind_of(t, kind)
        if not n:
            return
        self.core.insert_many(partials)
        self._room(n)
        self._tkind = kind
        j: cython.Py_ssize_t
        base: cython.Py_ssize_t = self._h + self._n
        if kind == _FLOAT:
            td: cython.double[:] = self._td
            for j in range(n):
                td[base + j] = timestamps[j]
        else:
            ti: cython.longlong[:] = self._ti
            for j in range(n):
                ti[base + j] = timestamps[j]
        self._n += n

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert_arrays(self, timestamps: Any, values: Any, keys: Any = None) -> None:
        """:meth:`insert_columns` of a float64 or int64 buffer of timestamps (in order:
        the caller checked) and the core's :meth:`insert_array` values (and ArgMin / ArgMax
        keys), in C loops."""
        view = memoryview(timestamps)
        n: cython.Py_ssize_t = len(view)
        if len(values) != n:
            raise ValueError(f"{n} timestamps for {len(values)} values")
        kind: cython.int = _FLOAT if view.format == "d" else _INT
        if self._n and kind != self._tkind:
            raise Untyped(timestamps)
        # one pass over the timestamps, checking and copying them past the live ones: they
        # count (self._n) only once the core has taken the values
        self._room(n)
        base: cython.Py_ssize_t = self._h + self._n
        j: cython.Py_ssize_t
        if kind == _INT:
            ti: cython.const[cython.longlong][:] = view
            to_i: cython.longlong[:] = self._ti
            for j in range(n):
                if not -_TS_LIMIT_C < ti[j] < _TS_LIMIT_C:
                    raise Untyped(timestamps)
                to_i[base + j] = ti[j]
        else:
            td: cython.const[cython.double][:] = view
            to_d: cython.double[:] = self._td
            for j in range(n):
                to_d[base + j] = td[j]
        if keys is None:
            self.core.insert_array(values)
        else:
            self.core.insert_array(values, keys)
        self._tkind = kind
        self._n += n

    def evict(self, k: Any = 1) -> None:
        self.core.evict(k)  # checks k as the object algorithms do
        self._h += k
        self._n -= k
        if not self._n:
            self._h = 0

    def clear(self) -> None:
        self.core.clear()
        self._h = self._n = 0

    # -- the policy -------------------------------------------------------------------

    def enforce(self, wsp: Any) -> int:
        """Evict the longest prefix ``wsp`` condemns; return its length. The window's own
        policy is evaluated natively; any other (``Window.evict_before``'s) on prefixes."""
        k: cython.Py_ssize_t
        if wsp is self._policy:
            k = self._condemned(self._plan)
        else:
            k = self.condemned(wsp, self.query())
        if k:
            self.evict(k)
        return k

    # one by one over the elements, as the object algorithms without bulk eviction do
    condemned = Aggregator.condemned

    def evict_before(self, timestamp: Any) -> int:
        """Evict every update older than ``timestamp`` (``Window.evict_before``): a binary
        search comparing the timestamps as Python numbers, as the object path's policy
        ``old[1] < timestamp`` does; return how many."""
        lo: cython.Py_ssize_t = 0
        hi: cython.Py_ssize_t = self._n
        mid: cython.Py_ssize_t
        while lo < hi:
            mid = (lo + hi) // 2
            if self._timestamp(mid) < timestamp:
                lo = mid + 1
            else:
                hi = mid
        if lo:
            self.evict(lo)
        return lo

    @cython.cfunc
    def _condemned(self, node: tuple) -> cython.Py_ssize_t:
        code: cython.int = node[0]
        n: cython.Py_ssize_t = self._n
        if code == _PLAN_SIZE:
            m: cython.Py_ssize_t = node[1]
            return n - m if n > m else 0
        if code == _PLAN_TIME:
            return self._expired(node[1], node[2])
        best: cython.Py_ssize_t = -1
        k: cython.Py_ssize_t
        for child in node[1]:
            k = self._condemned(child)
            if best < 0 or (k > best if code == _PLAN_ANY else k < best):
                best = k
        return best

    @cython.cfunc
    def _expired(self, width_i: cython.longlong, width_d: cython.double) -> cython.Py_ssize_t:
        """How many of the oldest updates have ``newest - t >= width`` (TimeRange): a binary
        search, the difference falling as t rises (rounding is monotone too)."""
        if self._tkind == _FLOAT:
            return _count_expired(self._td, self._h, self._n, width_d)
        return _count_expired(self._ti, self._h, self._n, width_i)

    # -- results ----------------------------------------------------------------------

    def query(self) -> tuple:
        if not self._n:
            return self.monoid.identity
        return (self._n, self._timestamp(self._n - 1), self.core.query())

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[tuple]:
        return iter([(1, self._timestamp(j), partial) for j, partial in enumerate(self.core)])

    def _oldest(self) -> tuple:
        return (1, self._timestamp(0), self.core.oldest())

    def snapshot(self) -> tuple:
        h: cython.Py_ssize_t = self._h
        end: cython.Py_ssize_t = self._h + self._n
        td = _doubles(self._n)
        ti = _int64s(self._n)
        vd: cython.double[:] = td
        vi: cython.longlong[:] = ti
        vd[:] = self._td[h:end]  # one copy each (array() of a typed slice would box every item)
        vi[:] = self._ti[h:end]
        return (self.core.snapshot(), td, ti, self._tkind)

    def restore(self, snapshot: tuple) -> None:
        core, td, ti, self._tkind = snapshot
        if core is not None:  # None: the core is in its state already (unpickling)
            self.core.restore(core)
        self._n = len(td)
        self._h = 0
        self._cap = self._n if self._n > 8 else 8
        self._td = _doubles(self._cap)
        self._ti = _int64s(self._cap)
        sd: cython.double[:] = td
        si: cython.longlong[:] = ti
        self._td[:self._n] = sd
        self._ti[:self._n] = si

    def begin_hold(self) -> None:
        """A batch begins: the core holds too (TypedAMTA then defers the move of its leaf
        buffer to :meth:`end_hold`, as AmortizedMTA does; moved mid-batch, a bulk eviction
        in the batch found the leaves gone and rebuilt R1 from nodes: other floats)."""
        self.hold = True
        self.core.begin_hold()

    def end_hold(self) -> bool:
        self.hold = False
        return self.core.end_hold()

    def __reduce__(self) -> tuple:
        # the core pickles itself (in a form both paths load); its raw snapshot may not
        return (_restored, (type(self), (self.core, self.monoid, self._policy), (None, *self.snapshot()[1:])))

    def to_object(self, store: Any = None) -> Any:
        """The object algorithm over the timed monoid in this state (see the core's), its
        levels in ``store`` (default: a new one in memory)."""
        def wrap(first: int, last: int, partial: Any) -> tuple:
            return (last - first + 1, self._timestamp(last), partial)

        if store is None:  # a Record's core takes no store
            return self.core.to_object(self.monoid, wrap)
        return self.core.to_object(self.monoid, wrap, store)

    def timestamps(self, start: int, stop: int) -> list:
        """The timestamps of the window's elements ``[start, stop)`` (0 the oldest)."""
        if not 0 <= start <= stop <= self._n:
            raise IndexError(f"positions [{start}, {stop}) are outside the window of {self._n}")
        j: cython.Py_ssize_t
        return [self._timestamp(j) for j in range(start, stop)]

    def timestamp(self, position: int) -> Any:
        """The timestamp of the window's element ``position`` (0 the oldest)."""
        if not 0 <= position < self._n:
            raise IndexError(f"position {position} is outside the window of {self._n}")
        return self._timestamp(position)


# -- Log MTA ------------------------------------------------------------------------------

#: The levels a :class:`TypedLogMTA` has room for: every level of a tree over ssize_t leaf indices.
_LEVELS = cython.declare(cython.Py_ssize_t, 64)
_MASK64 = cython.declare(cython.ulonglong, 2 ** 64 - 1)


def _uint64s(n: cython.Py_ssize_t) -> array:
    return array("Q", bytes(8 * n))


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _log_climb(op: cython.int, v: _Number[:], c: cython.longlong[:], mean: cython.bint, offs: cython.longlong[:],
               masks: cython.longlong[:], t: cython.Py_ssize_t, top: cython.Py_ssize_t, value: _Number,
               count: cython.longlong) -> cython.void:
    """LogMTA.insert's climb from leaf ``t`` (value ``value``, count ``count`` of a counted op:
    ``mean``) up to level ``top``: node ``(l, t >> l)`` = combine(its left sibling's parent's
    left child, value) where the path turns left, as the object algorithm does."""
    j: cython.Py_ssize_t = t
    number: cython.Py_ssize_t
    s: cython.Py_ssize_t
    for number in range(1, top + 1):
        if j & 1:
            s = offs[number - 1] + ((j - 1) & masks[number - 1])
            if mean:  # before value: a MINCOUNT / MAXCOUNT count reads it
                count = c[s] + count if op == _MEAN else _ccomb(op, v[s], value, c[s], count)
            value = _comb(op, v[s], value)
        j >>= 1
        s = offs[number] + (j & masks[number])
        v[s] = value
        if mean:
            c[s] = count


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _log_spine(op: cython.int, v: _Number[:], c: cython.longlong[:], mean: cython.bint, offs: cython.longlong[:],
               masks: cython.longlong[:], h: cython.Py_ssize_t, t: cython.Py_ssize_t, top: cython.Py_ssize_t,
               value: _Number) -> cython.void:
    """LogMTA._move_head's new left spine from leaf ``h`` (value ``value``) up to level ``top``:
    node ``(l, h >> l)`` = combine(the one below, its right sibling when that holds live leaves)."""
    child: cython.Py_ssize_t
    number: cython.Py_ssize_t
    s: cython.Py_ssize_t = offs[0] + (h & masks[0])
    count: cython.longlong = c[s] if mean else 0
    for number in range(1, top + 1):
        child = h >> (number - 1)
        if not child & 1 and (child + 1) << (number - 1) < t:
            s = offs[number - 1] + ((child + 1) & masks[number - 1])
            if mean:  # before value: a MINCOUNT / MAXCOUNT count reads it
                count = count + c[s] if op == _MEAN else _ccomb(op, value, v[s], count, c[s])
            value = _comb(op, value, v[s])
        s = offs[number] + ((h >> number) & masks[number])
        v[s] = value
        if mean:
            c[s] = count


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedLogMTA(_TypedCore):
    """:class:`~mta.algorithms.log_mta.LogMTA` (in memory) over typed columns.

    The same tree at the same absolute leaf indices ``[head, tail)`` (node ``(l, j)`` covers
    leaves ``[j 2^l, (j + 1) 2^l)`` and holds the aggregate of its live leaves, on and below
    the root at level ``top = bit_length(head ^ (tail - 1))``), and the same reads and writes:
    insertion refreshes the right spine, an eviction of any number the left spine, in
    O(log n) combines done in the object algorithm's order, so that results are its own bit
    for bit. Where LogMTA keeps a node (write buffer, level store, cache, spine dict) does
    not change its value; here level ``l`` is a ring in the one column set ``_nodes``, node
    ``(l, j)`` at row ``_offs[l] + (j & _masks[l])``: ``cap`` rows for the leaves and
    ``max(cap >> (l - 1), 4)`` for a level ``l >= 1``, where ``cap`` (a power of two) is
    larger than the window, so that the nodes of a level between head and tail never share
    a row. Rings double when the window reaches ``cap`` and never shrink (O(largest window)).

    INT bound: for INT kind SUM and MEAN, ``_pres`` holds per leaf the sum of ``|v|`` over
    the leaves before it (modulo 2^64, exact in differences), so that the window's sum after
    a bulk eviction is one difference, O(1).
    """

    name = "log_mta"

    _nodes: _Columns
    _pres: object
    _pre: cython.ulonglong[:]
    _offs: cython.longlong[:]
    _masks: cython.longlong[:]
    _cap: cython.Py_ssize_t
    _head: cython.Py_ssize_t
    _tail: cython.Py_ssize_t
    _top: cython.Py_ssize_t  # the root's level (0 when empty)
    _ptail: cython.ulonglong  # sum of |v| over leaves [0, tail), modulo 2^64 (INT bound)
    _track: cython.bint  # INT kind of SUM or MEAN: _pres is kept

    def __init__(self, monoid: Monoid, max_size: int | None = None) -> None:
        _TypedCore.__init__(self, monoid, max_size)
        self.clear()

    def clear(self) -> None:
        """Empty, at leaf 0 (LogMTA's ``_reset``), with small rings."""
        self._cap = 8
        self._head = self._tail = self._top = 0
        self._rekind(self._kind)

    @cython.cfunc
    def _layout(self, cap: cython.Py_ssize_t) -> cython.Py_ssize_t:
        """Set the rows of every level for leaf capacity ``cap``; return how many in all."""
        offs: cython.longlong[:] = _int64s(_LEVELS)
        masks: cython.longlong[:] = _int64s(_LEVELS)
        total: cython.Py_ssize_t = 0
        size: cython.Py_ssize_t
        number: cython.Py_ssize_t
        for number in range(_LEVELS):
            size = cap if number == 0 else max(cap >> (number - 1), 4)
            offs[number] = total
            masks[number] = size - 1
            total += size
        self._offs = offs
        self._masks = masks
        return total

    @cython.cfunc
    def _rekind(self, kind: cython.int) -> cython.void:
        """New empty columns for ``kind`` (an empty window takes either kind)."""
        self._kind = kind
        self._track = kind == _INT and (self._op == _SUM or self._op == _MEAN)
        self._nodes = _Columns(self._layout(self._cap), kind, _has_counts(self._op), _extra(self._op))
        self._pres = _uint64s(self._cap if self._track else 0)
        self._pre = self._pres
        self._ptail = 0
        self._magnitude = 0

    @cython.cfunc
    @cython.final
    @cython.inline
    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.exceptval(check=False)
    def _slot(self, number: cython.Py_ssize_t, index: cython.Py_ssize_t) -> cython.Py_ssize_t:
        return self._offs[number] + (index & self._masks[number])

    @cython.cfunc
    def _size(self) -> cython.Py_ssize_t:
        return self._tail - self._head

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _grow(self) -> cython.void:
        """Twice the room: the nodes of every level between head and tail (and the leaves'
        prefix sums) move to the new rings."""
        old: _Columns = self._nodes
        old_offs: cython.longlong[:] = self._offs
        old_masks: cython.longlong[:] = self._masks
        old_cap: cython.Py_ssize_t = self._cap
        h: cython.Py_ssize_t = self._head
        t: cython.Py_ssize_t = self._tail
        kind: cython.int = self._kind
        mean: cython.bint = _has_counts(self._op)
        number: cython.Py_ssize_t
        j: cython.Py_ssize_t
        self._cap = 2 * old_cap
        nodes = _Columns(self._layout(self._cap), kind, mean, _extra(self._op))
        for number in range(_LEVELS):
            for j in range(h >> number, ((t - 1) >> number) + 1):
                _set(kind, mean, nodes, self._slot(number, j), old, old_offs[number] + (j & old_masks[number]))
        self._nodes = nodes
        if self._track:
            old_pre: cython.ulonglong[:] = self._pre
            self._pres = _uint64s(self._cap)
            self._pre = self._pres
            for j in range(h, t):
                self._pre[j & (self._cap - 1)] = old_pre[j & (old_cap - 1)]

    @cython.cfunc
    def _put(self, kind: cython.int) -> cython.void:
        """LogMTA.insert (Algorithm 1): the leaf, the levels the root climbs through (each
        node their only live child's: the old root), then the right spine up to the root."""
        if kind != self._nodes.kind:  # an empty window takes the other kind
            self._rekind(kind)
        h: cython.Py_ssize_t = self._head
        t: cython.Py_ssize_t = self._tail
        if t - h == self._cap:
            self._grow()
        nodes: _Columns = self._nodes
        op: cython.int = self._op
        mean: cython.bint = _has_counts(op)
        s: cython.Py_ssize_t = self._slot(0, t)
        if _rowop(op):
            self._store(nodes, s, kind)
        elif kind == _FLOAT:
            nodes.d[s] = self._xd
        else:
            nodes.i[s] = self._xi
        if mean and not _rowop(op):
            nodes.c[s] = self._xc
        if self._track:
            self._pre[t & (self._cap - 1)] = self._ptail
            self._ptail = (self._ptail + self._xu) & _MASK64
        self._tail = t + 1
        if h == t:
            self._top = 0
            return
        top: cython.Py_ssize_t = self._top  # bit_length(h ^ (t - 1)) climbs to bit_length(h ^ t)
        while h >> top != t >> top:
            top += 1
        root: cython.Py_ssize_t = self._slot(self._top, h >> self._top)
        number: cython.Py_ssize_t
        for number in range(self._top + 1, top):
            _set(kind, mean, nodes, self._slot(number, h >> number), nodes, root)
        if _rowop(op):
            self._climb_rows(t, top)
        elif kind == _FLOAT:
            _log_climb(op, nodes.d, nodes.c, mean, self._offs, self._masks, t, top, self._xd, self._xc)
        else:
            _log_climb(op, nodes.i, nodes.c, mean, self._offs, self._masks, t, top, self._xi, self._xc)
        self._top = top

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _append(self, d: cython.const[cython.double][:], i: cython.const[cython.longlong][:],
                c: cython.const[cython.longlong][:], ones: cython.bint,
                n: cython.Py_ssize_t, kind: cython.int, magnitude: cython.ulonglong) -> cython.void:
        """One by one, as the object algorithm's insert_many does."""
        j: cython.Py_ssize_t
        track: cython.bint = kind == _INT and (self._op == _SUM or self._op == _MEAN)
        self._xc = 1
        self._xu = 0
        for j in range(n):
            if kind == _FLOAT:
                self._xd = d[j]
            else:
                self._xi = i[j]
                if track:
                    self._xu = _abs64(i[j])
            if not ones:
                self._xc = c[j]
            self._put(kind)
        self._magnitude += magnitude

    @cython.cfunc
    def _evict(self, k: cython.Py_ssize_t) -> cython.void:
        """LogMTA._move_head (Algorithm 2, lines 21-27): the left spine of the new head, O(log n)
        whatever ``k``."""
        if not k:
            return
        h: cython.Py_ssize_t = self._head + k
        t: cython.Py_ssize_t = self._tail
        self._head = h
        if h == t:
            self._top = 0
            self._magnitude = 0
            return
        top: cython.Py_ssize_t = self._top  # down to bit_length(h ^ (t - 1)) for the new head
        while top and h >> (top - 1) == (t - 1) >> (top - 1):
            top -= 1
        nodes: _Columns = self._nodes
        mean: cython.bint = _counted(self._op)
        s: cython.Py_ssize_t = self._slot(0, h)
        if _rowop(self._op):
            self._spine_rows(h, t, top)
        elif self._kind == _FLOAT:
            _log_spine(self._op, nodes.d, nodes.c, mean, self._offs, self._masks, h, t, top, nodes.d[s])
        else:
            _log_spine(self._op, nodes.i, nodes.c, mean, self._offs, self._masks, h, t, top, nodes.i[s])
        self._top = top
        if self._track:
            self._magnitude = (self._ptail - self._pre[h & (self._cap - 1)]) & _MASK64

    @cython.cfunc
    def _climb_rows(self, t: cython.Py_ssize_t, top: cython.Py_ssize_t) -> cython.void:
        """:func:`_log_climb` of whole rows (VARIANCE, ARGMIN, ARGMAX) from leaf ``t``: node
        ``(l, j >> 1)`` = combine(its left child, the one below) where the path turns left,
        else the one below."""
        nodes: _Columns = self._nodes
        j: cython.Py_ssize_t = t
        number: cython.Py_ssize_t
        for number in range(1, top + 1):
            if j & 1:
                _combined_wide(self._op, self._kind, nodes, self._slot(number, j >> 1), nodes,
                          self._slot(number - 1, j - 1), nodes, self._slot(number - 1, j))
            else:
                _set(self._kind, nodes.counted, nodes, self._slot(number, j >> 1), nodes, self._slot(number - 1, j))
            j >>= 1

    @cython.cfunc
    def _spine_rows(self, h: cython.Py_ssize_t, t: cython.Py_ssize_t, top: cython.Py_ssize_t) -> cython.void:
        """:func:`_log_spine` of whole rows from leaf ``h``: node ``(l, h >> l)`` = combine(the
        one below, its right sibling) when that sibling holds live leaves, else the one below."""
        nodes: _Columns = self._nodes
        child: cython.Py_ssize_t
        number: cython.Py_ssize_t
        for number in range(1, top + 1):
            child = h >> (number - 1)
            if not child & 1 and (child + 1) << (number - 1) < t:
                _combined_wide(self._op, self._kind, nodes, self._slot(number, h >> number), nodes,
                          self._slot(number - 1, child), nodes, self._slot(number - 1, child + 1))
            else:
                _set(self._kind, nodes.counted, nodes, self._slot(number, h >> number), nodes,
                     self._slot(number - 1, child))

    # -- results ----------------------------------------------------------------------

    @cython.ccall
    def query(self) -> object:
        if self._head == self._tail:
            return self.monoid.identity
        return self._row(self._nodes, self._slot(self._top, self._head >> self._top))

    def __iter__(self) -> Iterator[Any]:
        return iter([self._row(self._nodes, self._slot(0, j)) for j in range(self._head, self._tail)])

    def oldest(self) -> Any:
        """The oldest partial (the window is not empty)."""
        return self._row(self._nodes, self._slot(0, self._head))

    # -- batches that may be undone (mta.Window.insert_slices) -------------------------

    def snapshot(self) -> tuple:
        return (self._kind, self._nodes.copy(), self._pres[:], self._cap, self._head, self._tail, self._top,
                self._ptail, self._magnitude, self._kind2)

    def restore(self, snapshot: tuple) -> None:
        (self._kind, self._nodes, self._pres, self._cap, self._head, self._tail, self._top, self._ptail,
         self._magnitude) = snapshot[:9]
        self._kind2 = snapshot[9] if len(snapshot) > 9 else -1  # older pickles: no _kind2
        self._track = self._kind == _INT and (self._op == _SUM or self._op == _MEAN)
        self._pre = self._pres
        self._layout(self._cap)

    def __reduce__(self) -> tuple:
        return (_restored, (type(self), (self.monoid, None if self._max_size < 0 else self._max_size),
                            self.snapshot()))

    # -- demotion ---------------------------------------------------------------------

    def to_object(self, monoid: Monoid | None = None, wrap: Any = None) -> Any:
        """The object :class:`LogMTA` in this state: the same head, tail, root and the nodes of
        every level up to the root from the head's on (all in its write buffers), so that every
        later result is the one it would have given; ``monoid`` and ``wrap`` as for
        :meth:`TypedTwoStacks.to_object` (a node wraps the window positions of its live leaves)."""
        from mta.algorithms.log_mta import LogMTA

        twin = LogMTA(monoid if monoid is not None else self.monoid)
        wrap = wrap if wrap is not None else _bare
        h: cython.Py_ssize_t = self._head
        t: cython.Py_ssize_t = self._tail
        levels: cython.Py_ssize_t = self._top + 1
        number: cython.Py_ssize_t
        while len(twin._bufs) < levels:
            twin._add_level()
        for number in range(levels):
            first = h >> number
            twin.store.level(number).reset(first)
            twin._bufs[number] = [wrap(max(j << number, h) - h, min((j + 1) << number, t) - 1 - h,
                                       self._row(self._nodes, self._slot(number, j)))
                                  for j in range(first, ((t - 1) >> number) + 1)] if h < t else []
            twin._bstart[number] = first
        twin._leaves = twin._bufs[0]
        twin._cstart = list(twin._bstart)
        twin._caches = [[] for _ in twin._bufs]
        twin._head, twin._tail = h, t
        twin._root = twin._bufs[self._top][0] if h < t else twin.monoid.identity
        twin.hold = self.hold
        return twin
