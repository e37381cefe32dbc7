"""The Stream engine's typed ingest: in-order tuples of a built-in numeric monoid in C columns (issue 20).

For ``Count``, ``Sum``, ``Min``, ``Max`` and ``Mean`` (``mta.algorithms.typed.op_of``),
``MinCount``, ``MaxCount``, ``First``, ``Last``, ``Variance``, ``StdDev``, ``ArgMin``, ``ArgMax``
and Records of them but ArgMin and ArgMax (:func:`op_for`), the common case of
:class:`~mta.stream.engine.Stream` -- tuples in timestamp order, at or after
the watermark -- costs a Python tuple per tuple in ``pending`` and a Python call per tuple
into the newest slice. :class:`TypedIngest` takes that case instead: ``Stream.insert`` (and
``insert_many`` of numpy columns) appends the timestamp and the value to C columns, and the
next ``advance`` folds each run of tuples that falls into one slice in a C loop, straight
into the slice store's newest slice.

What it takes (anything else goes to the engine's object path, which first *flushes* the
columns into ``pending`` as the tuples they stand for, so both paths see the same stream):
timestamps exactly ints of magnitude below 2**53 or finite floats, one kind per batch held,
not older than ``floor`` (the watermark and the newest tuple: the columns stay sorted, in
arrival order); values exactly ints in int64 or floats, one kind per batch held, that the
monoid lifts unchanged (finite for Sum, Mean, MinCount and MaxCount, not NaN for Min and
Max; any float for First and Last, NaN and infinities included; Count ignores them; for
Variance and StdDev, finite floats and ints of magnitude at most 2**25); for ArgMin and ArgMax,
``(key, value)`` tuples (a list goes the object way) of a value as for Min and Max and a key
exactly an int in int64 or a float (any: keys are never compared), one kind per batch held,
never numpy columns (numbers are no pairs); for a Record, the values every field takes (a
dict goes the object way: only a number is lifted by every field); for Sum and Mean of ints,
the sum of ``|v|`` over the columns stays below 2**63, so a run's sum
is exact in an int64.

Exactness: a run is combined into the slice's aggregate in the object path's order, one
value after another (``a + v``; ``a if a <= v else v``; ``a if a >= v else v``), from the
slice's first partial as the object path takes it (``-0.0`` stays ``-0.0``); in C only when
the aggregate is of the run's kind (a float aggregate for float values, an int64 one for
Min, Max, MinCount and MaxCount of ints), else through ``monoid.combine`` until it is.
MinCount / MaxCount fold ``(v, 1)`` as ``_mincount`` / ``_maxcount`` do: a strictly smaller
(larger) v replaces the value and restarts the count at 1, an equal one keeps the
aggregate's value (``0.0`` against ``-0.0``: the older) and adds 1. First keeps the slice's
aggregate, Last takes the run's newest value (the identity ``_EMPTY`` is never a value).
Variance / StdDev fold ``(1, v, 0)`` by ``_chan``'s operations in its order, in doubles,
once the aggregate is ``(int count below 2**53, float mean, float M2 or the int 0)`` or a
lifted int ``(1, v, 0)``, ``|v| <= 2**25`` (ints that small make ``_chan``'s int products exact
and its int quotients correctly rounded, as the doubles' are). ArgMin / ArgMax fold
``(v, key)`` as ``_argmin`` / ``_argmax`` do: a strictly smaller (larger) v replaces the
aggregate, a tie keeps the older. A Record's partial is folded field by field (its combine
is the fields' combines), each field as that monoid, from the same columns.
Sums of ints are exact in any order: a run's C sum is added to the Python aggregate. So results are the object
path's, floats bit for bit.

Cython pure-Python mode: compiled, the columns are typed memoryviews; interpreted, the same
code runs on ``array.array`` (the engine uses it only compiled, :data:`USE`, unless a test
sets it).
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.algorithms.typed import wide_op_of
from mta.monoid import Count, Monoid, Record

COMPILED: bool = cython.compiled

#: Whether ``mta.Stream`` takes the typed ingest (compiled only; tests set it to run the
#: integration on the pure path too).
USE: bool = COMPILED

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
_RECORD = cython.declare(cython.int, 11)
_NONE = cython.declare(cython.int, -1)
_FLOAT = cython.declare(cython.int, 0)
_INT = cython.declare(cython.int, 1)
_INF = cython.declare(cython.double, float("inf"))

_EXACT = 2 ** 53  # ints below it in magnitude are exact as doubles
_EXACT_C = cython.declare(cython.longlong, 2 ** 53)
_I64_MIN = -(2 ** 63)
_I64_MAX = 2 ** 63 - 1
_LIMIT = cython.declare(cython.ulonglong, 2 ** 63 - 1)
# Variance / StdDev of ints: below it in magnitude, _chan's int arithmetic is exact in doubles
_VARIANCE_INT = 2 ** 25
_VARIANCE_INT_C = cython.declare(cython.longlong, 2 ** 25)
# what a float value must be to be taken: anything (Count, First, Last), not NaN (Min, Max), finite
_ANY = cython.declare(cython.int, 0)
_NOT_NAN = cython.declare(cython.int, 1)
_FINITE = cython.declare(cython.int, 2)



def op_for(monoid: Monoid) -> int | None:
    """The op of a monoid the typed ingest takes (exact types: ``typed.wide_op_of``, whose op
    numbers this module's constants are), or None. A Record takes it when every field does, but
    ArgMin, ArgMax and Records (their values are no numbers)."""
    if type(monoid) is Record:
        ops = [op_for(m) for m in monoid.fields.values()]
        return _RECORD if all(op is not None and op != _ARGMIN and op != _ARGMAX and op != _RECORD
                              for op in ops) else None
    return wide_op_of(monoid)


@cython.cfunc
@cython.inline
def _abs64(v: cython.longlong) -> cython.ulonglong:
    u: cython.ulonglong = cython.cast(cython.ulonglong, v)
    return 0 - u if v < 0 else u


@cython.cfunc
def _as_bound(t: object) -> cython.double:
    """A double d with ``x >= d`` implying ``x >= t`` for every double x (t an int or float);
    also ``x < d`` exactly when ``x < t`` for every buffered timestamp x (|x| < 2**53: d is
    t, or beyond them on t's side)."""
    if type(t) is float:
        return t
    if t >= _EXACT:
        return _INF
    if t <= -_EXACT:
        return _ceil(t)
    return cython.cast(cython.double, t)


def _ceil(t: int) -> float:
    """The smallest double >= the int t (t below the doubles: their smallest)."""
    try:
        f = float(t)
    except OverflowError:
        return -1.7976931348623157e308
    return f if f >= t else math.nextafter(f, math.inf)


@cython.cfunc
def _chan_typed(agg: object, m: cython.Py_ssize_t) -> cython.bint:
    """Whether a Variance partial combines with m partials of the columns in C as ``_chan``
    would: a count, nonzero, that stays exact as a double, a float mean, M2 a float or the
    int 0; or one int lifted, ``(1, v, 0)`` with ``|v| <= 2**25`` (its int deltas, their
    squares and the quotients are then exact or rounded once, as in doubles)."""
    count = agg[0]
    mean = agg[1]
    m2 = agg[2]
    if type(count) is not int or type(m2) is not float and not (type(m2) is int and m2 == 0):
        return False
    if type(mean) is int:
        return count == 1 and -_VARIANCE_INT <= mean <= _VARIANCE_INT and type(m2) is int
    return type(mean) is float and 0 < count < _EXACT - m


@cython.cclass
class TypedIngest:
    """C columns of the in-order tuples waiting for the watermark (see the module docstring).

    ``live`` (set by the engine): whether the fast path may take a tuple; ``floor``: the
    smallest timestamp it may take (the engine's, as :func:`_as_bound` of it, while the
    columns are empty; the newest buffered one after)."""

    _slow: object  # the engine's object insert (flushes the columns first)
    live = cython.declare(cython.bint, visibility="public")
    _op: cython.int
    _count: cython.bint
    _arg: cython.bint  # ArgMin / ArgMax: values are (key, value) pairs, the keys in _kd or _ki
    _sums: cython.bint  # Sum or Mean (of a field): ints held within the INT bound (_abs)
    _variance: cython.bint  # Variance or StdDev (of a field): ints within 2**25
    _fields: list  # a Record's: a TypedIngest per field, folding from these columns
    _combines: tuple  # and the fields' combines
    _vcheck: cython.int  # _ANY, _NOT_NAN or _FINITE: the float values taken
    _tkind: cython.int
    _vkind: cython.int
    _kkind: cython.int
    _h: cython.Py_ssize_t  # the oldest tuple's index: the columns hold tuples _h .. _h + _n - 1
    _n: cython.Py_ssize_t
    _cap: cython.Py_ssize_t
    _floor: cython.double
    _abs: cython.ulonglong  # Sum and Mean of ints: the sum of |v| over the tuples held
    _t: cython.double[:]
    _vd: cython.double[:]
    _vi: cython.longlong[:]
    _kd: cython.double[:]  # ArgMin / ArgMax only (else one entry): float keys
    _ki: cython.longlong[:]  # and int keys

    def __init__(self, monoid: Monoid, slow: Any) -> None:
        op = op_for(monoid)
        if op is None:
            raise TypeError(f"no typed ingest for {monoid!r}")
        self._op = op
        self._count = type(monoid) is Count
        self._arg = op == _ARGMIN or op == _ARGMAX
        self._sums = (op == _SUM or op == _MEAN) and not self._count
        self._variance = op == _VARIANCE
        self._fields = []
        self._combines = ()
        f: TypedIngest
        if op == _RECORD:  # a value is taken when every field takes it
            self._fields = [TypedIngest(m, None) for m in monoid.fields.values()]
            self._combines = tuple([m.combine for m in monoid.fields.values()])
            self._vcheck = _ANY
            for f in self._fields:
                self._sums = self._sums or f._sums
                self._variance = self._variance or f._variance
                self._vcheck = max(self._vcheck, f._vcheck)
        elif self._count or op == _FIRST or op == _LAST:
            self._vcheck = _ANY
        elif op == _MIN or op == _MAX or self._arg:
            self._vcheck = _NOT_NAN
        else:
            self._vcheck = _FINITE
        self._slow = slow
        self.live = False
        self._cap = 0
        self._h = 0
        self._n = 0
        self._tkind = _NONE
        self._vkind = _NONE
        self._kkind = _NONE
        self._floor = -_INF
        self._abs = 0
        self._grow(16)  # small: a KeyedStream has one per key

    @property
    def n(self) -> int:
        """How many tuples the columns hold."""
        return self._n

    def set_floor(self, floor: Any) -> None:
        """No tuple older than ``floor`` may be taken (the engine's watermark and newest)."""
        bound: cython.double = _as_bound(floor)
        if self._n == 0 or bound > self._floor:
            self._floor = bound

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _room(self, m: cython.Py_ssize_t) -> cython.void:
        """Room for ``m`` more tuples after the newest: the tuples held move to the front (when
        the released ones before them are at least as many: each move is paid by a release),
        or into columns of twice what they then hold (so that the next time, they move)."""
        h: cython.Py_ssize_t = self._h
        n: cython.Py_ssize_t = self._n
        c: cython.Py_ssize_t
        if h + n + m <= self._cap:
            return
        if h >= n and n + m <= self._cap:
            for c in range(n):
                self._t[c] = self._t[h + c]
                self._vd[c] = self._vd[h + c]
                self._vi[c] = self._vi[h + c]
            if self._arg:
                for c in range(n):
                    self._kd[c] = self._kd[h + c]
                    self._ki[c] = self._ki[h + c]
            self._h = 0
            return
        self._grow(2 * (n + m))

    @cython.cfunc
    def _grow(self, need: cython.Py_ssize_t) -> cython.void:
        """Columns for at least ``need`` tuples, the tuples held at their front."""
        cap: cython.Py_ssize_t = max(self._cap, 16)
        while cap < need:
            cap *= 2
        t = array("d", bytes(8 * cap))
        vd = array("d", bytes(8 * cap))
        vi = array("q", bytes(8 * cap))
        keys: cython.Py_ssize_t = cap if self._arg else 1
        nt: cython.double[:] = t
        nvd: cython.double[:] = vd
        nvi: cython.longlong[:] = vi
        nkd: cython.double[:] = array("d", bytes(8 * keys))
        nki: cython.longlong[:] = array("q", bytes(8 * keys))
        h: cython.Py_ssize_t = self._h
        n: cython.Py_ssize_t = self._n
        if n:
            nt[:n] = self._t[h:h + n]
            nvd[:n] = self._vd[h:h + n]
            nvi[:n] = self._vi[h:h + n]
            if self._arg:
                nkd[:n] = self._kd[h:h + n]
                nki[:n] = self._ki[h:h + n]
        self._t, self._vd, self._vi, self._cap, self._h = nt, nvd, nvi, cap, 0
        self._kd, self._ki = nkd, nki

    # -- taking tuples ----------------------------------------------------------------

    def insert(self, ts: Any, value: Any) -> Any:
        """``Stream.insert``: the plain in-order case into the columns, anything else the object way."""
        if self.live and (self._take_pair(ts, value) if self._arg else self._take(ts, value)):
            return True
        return self._slow(ts, value)

    def take(self, ts: Any, value: Any) -> bool:
        """Add the tuple if it is one the fast path takes (else change nothing, return False)."""
        return self._take_pair(ts, value) if self._arg else self._take(ts, value)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.initializedcheck(False)
    def _take_pair(self, ts: object, pair: object) -> cython.bint:
        """ArgMin / ArgMax: :meth:`_take` of a ``(key, value)`` tuple's value, its key beside
        it (a list goes the object way: it is kept as given)."""
        if type(pair) is not tuple or len(pair) != 2:
            return False
        key = pair[0]
        kx: cython.double = 0.0
        ki: cython.longlong = 0
        kk: cython.int
        if type(key) is float:
            kx = key
            kk = _FLOAT
        elif type(key) is int:
            if not cython.compiled and not _I64_MIN <= key <= _I64_MAX:
                return False
            try:
                ki = key
            except OverflowError:  # compiled only: beyond int64
                return False
            kk = _INT
        else:
            return False
        if (self._n and kk != self._kkind) or not self._take(ts, pair[1]):
            return False
        n: cython.Py_ssize_t = self._h + self._n - 1
        if kk == _FLOAT:
            self._kd[n] = kx
        else:
            self._ki[n] = ki
        self._kkind = kk
        return True

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.initializedcheck(False)
    def _take(self, ts: object, value: object) -> cython.bint:
        t: cython.double
        tk: cython.int
        it: cython.longlong
        kind = type(ts)
        if kind is float:
            t = ts
            tk = _FLOAT
            if not -_INF < t < _INF:
                return False
        elif kind is int:
            try:
                it = ts
            except OverflowError:  # compiled only: beyond a C long long
                return False
            if not -_EXACT_C < it < _EXACT_C:
                return False
            t = it
            tk = _INT
        else:
            return False
        if t < self._floor or (self._n and tk != self._tkind):
            return False
        x: cython.double = 0.0
        i: cython.longlong = 0
        vk: cython.int
        vkind = type(value)
        if vkind is float:
            x = value
            vk = _FLOAT
            if self._vcheck == _NOT_NAN:
                if x != x:
                    return False
            elif self._vcheck == _FINITE and not -_INF < x < _INF:
                return False
        elif vkind is int:
            if not cython.compiled and not _I64_MIN <= value <= _I64_MAX:
                return False
            try:
                i = value
            except OverflowError:  # compiled only: beyond int64
                return False
            vk = _INT
            if self._sums and _abs64(i) > _LIMIT - self._abs:
                return False
            if self._variance and not -_VARIANCE_INT_C <= i <= _VARIANCE_INT_C:
                return False
        else:
            return False
        if self._n and vk != self._vkind:
            return False
        if self._h + self._n == self._cap:
            self._room(1)
        n: cython.Py_ssize_t = self._h + self._n
        self._t[n] = t
        if vk == _FLOAT:
            self._vd[n] = x
        else:
            self._vi[n] = i
            if self._sums:
                self._abs += _abs64(i)
        self._tkind, self._vkind = tk, vk
        self._floor = t
        self._n += 1
        return True

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert_columns(self, timestamps: Any, values: Any) -> bool:
        """``Stream.insert_many(timestamps, values)`` of 1-D int64/float64 numpy arrays of equal
        length, when every tuple is one the fast path takes (checked before any is added);
        False (nothing added) otherwise: the engine then takes them the object way."""
        if not self.live or type(timestamps) is not np.ndarray or type(values) is not np.ndarray or self._arg:
            return False  # ArgMin / ArgMax: a column of numbers holds no (key, value) pairs
        if timestamps.ndim != 1 or values.ndim != 1 or len(timestamps) != len(values):
            return False
        m: cython.Py_ssize_t = len(timestamps)
        tk: cython.int
        vk: cython.int
        if timestamps.dtype == np.float64:
            tk = _FLOAT
        elif timestamps.dtype == np.int64:
            tk = _INT
        else:
            return False
        if values.dtype == np.float64:
            vk = _FLOAT
        elif values.dtype == np.int64:
            vk = _INT
        else:
            return False
        if m == 0:
            return True
        if self._n and (tk != self._tkind or vk != self._vkind):
            return False
        tsd: cython.double[:] = np.ascontiguousarray(timestamps, dtype=np.float64)
        tsi: cython.longlong[:]
        k: cython.Py_ssize_t
        t: cython.double
        prev: cython.double = self._floor
        if tk == _INT:  # exact as doubles only below 2**53
            tsi = np.ascontiguousarray(timestamps)
            for k in range(m):
                if not -_EXACT_C < tsi[k] < _EXACT_C:
                    return False
        for k in range(m):
            t = tsd[k]
            if not (t >= prev and -_INF < t < _INF):
                return False
            prev = t
        total: cython.ulonglong = self._abs
        x: cython.double
        vd: cython.double[:]
        vi: cython.longlong[:]
        if vk == _FLOAT:
            vd = np.ascontiguousarray(values)
            if self._vcheck != _ANY:
                for k in range(m):
                    x = vd[k]
                    if self._vcheck == _NOT_NAN:
                        if x != x:
                            return False
                    elif not -_INF < x < _INF:
                        return False
        else:
            vi = np.ascontiguousarray(values)
            if self._variance:
                for k in range(m):
                    if not -_VARIANCE_INT_C <= vi[k] <= _VARIANCE_INT_C:
                        return False
            if self._sums:
                for k in range(m):
                    if _abs64(vi[k]) > _LIMIT - total:
                        return False
                    total += _abs64(vi[k])
        self._room(m)
        n: cython.Py_ssize_t = self._h + self._n
        for k in range(m):
            self._t[n + k] = tsd[k]
        if vk == _FLOAT:
            for k in range(m):
                self._vd[n + k] = vd[k]
        else:
            for k in range(m):
                self._vi[n + k] = vi[k]
        self._abs = total
        self._tkind, self._vkind = tk, vk
        self._floor = prev
        self._n += m
        return True

    # -- handing them on --------------------------------------------------------------

    # _ts, _value, _key, _input, _partial, _fold: k, i, j index the columns (the oldest tuple
    # held is _h)

    @cython.cfunc
    def _ts(self, k: cython.Py_ssize_t) -> object:
        if self._tkind == _INT:
            return int(self._t[k])
        return self._t[k]

    @cython.cfunc
    def _value(self, k: cython.Py_ssize_t) -> object:
        if self._vkind == _INT:
            return self._vi[k]
        return self._vd[k]

    @cython.cfunc
    def _key(self, k: cython.Py_ssize_t) -> object:
        if self._kkind == _INT:
            return self._ki[k]
        return self._kd[k]

    @cython.cfunc
    def _input(self, k: cython.Py_ssize_t) -> object:
        """The value as ``insert`` was given it (ArgMin / ArgMax: the pair)."""
        if self._arg:
            return (self._key(k), self._value(k))
        return self._value(k)

    @cython.cfunc
    def _partial(self, k: cython.Py_ssize_t) -> object:
        """``monoid.lift`` of value k (the monoid lifts these values unchanged)."""
        if self._count:
            return 1
        if self._op == _RECORD:  # its fields read its columns (_share_columns)
            f: TypedIngest
            out = []
            for f in self._fields:
                out.append(f._partial(k))
            return tuple(out)
        if self._op == _MEAN or self._op == _MINCOUNT or self._op == _MAXCOUNT:
            return (self._value(k), 1)
        if self._op == _VARIANCE:
            return (1, self._value(k), 0)
        if self._arg:
            return (self._value(k), self._key(k))
        return self._value(k)

    def flush(self) -> list:
        """Every tuple held, ``[(ts, value, partial)]`` in arrival order; the columns empty."""
        h: cython.Py_ssize_t = self._h
        self._share_columns()
        out = [(self._ts(k), self._input(k), self._partial(k)) for k in range(h, h + self._n)]
        self._h = 0
        self._n = 0
        self._abs = 0
        self._tkind = self._vkind = self._kkind = _NONE
        return out

    def release(self, watermark: Any, slices: Any, combine: Any) -> tuple:
        """Fold the tuples older than ``watermark`` into ``slices`` (a ``TimeSlices`` without
        kept tuples), as ``slices.append`` of each in turn would; keep the others. Return
        ``(how many, the newest of them or None)``."""
        w: cython.double = _as_bound(watermark)
        h: cython.Py_ssize_t = self._h
        n: cython.Py_ssize_t = h + self._n
        k: cython.Py_ssize_t = h
        while k < n and self._t[k] < w:
            k += 1
        if k == h:
            return 0, None
        self._share_columns()
        starts, ends, aggs, counts, firsts, lasts = (slices.starts, slices.ends, slices.aggs, slices.counts,
                                                     slices.firsts, slices.lasts)
        i: cython.Py_ssize_t = h
        j: cython.Py_ssize_t
        e: cython.double
        while i < k:
            if not starts or not self._t[i] < _as_bound(ends[-1]):
                slices.append(self._ts(i), self._partial(i))  # opens the slice at its edges
                i += 1
                continue
            e = _as_bound(ends[-1])
            j = i
            while j < k and self._t[j] < e:
                j += 1
            count = counts[-1]
            if not count:
                agg = self._partial(i)
                firsts[-1] = self._ts(i)
                i0 = i + 1
            else:
                agg = aggs[-1]
                i0 = i
            aggs[-1] = self._fold(agg, i0, j, combine)
            counts[-1] = count + (j - i)
            lasts[-1] = self._ts(j - 1)
            i = j
        newest = self._ts(k - 1)
        self._drop(k - h)
        return k - h, newest

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _fold(self, agg: object, i: cython.Py_ssize_t, j: cython.Py_ssize_t, combine: object) -> object:
        """``agg`` combined with the partials of tuples i:j in order."""
        if self._count:
            return agg + (j - i)
        op: cython.int = self._op
        if op == _RECORD:
            return self._fold_record(agg, i, j)
        if op == _FIRST:  # the aggregate is a value (never the identity): it stays
            return agg
        if op == _LAST:
            return self._value(j - 1) if i < j else agg
        if op == _MINCOUNT or op == _MAXCOUNT:
            return self._fold_count(agg, i, j, combine)
        if op == _VARIANCE:
            return self._fold_variance(agg, i, j, combine)
        if self._arg:
            return self._fold_arg(agg, i, j, combine)
        mean: cython.bint = op == _MEAN
        s: object = agg[0] if mean else agg
        while i < j and not self._typed(s):  # the object way until the aggregate is of the run's kind
            agg = combine(agg, self._partial(i))
            s = agg[0] if mean else agg
            i += 1
        if i == j:
            return agg
        c: cython.Py_ssize_t
        acc_d: cython.double
        acc_i: cython.longlong
        if self._vkind == _FLOAT:
            acc_d = s
            for c in range(i, j):
                if op == _MIN:
                    acc_d = acc_d if acc_d <= self._vd[c] else self._vd[c]
                elif op == _MAX:
                    acc_d = acc_d if acc_d >= self._vd[c] else self._vd[c]
                else:
                    acc_d = acc_d + self._vd[c]
            s = acc_d
        elif op == _MIN or op == _MAX:
            acc_i = s
            for c in range(i, j):
                if op == _MIN:
                    acc_i = acc_i if acc_i <= self._vi[c] else self._vi[c]
                else:
                    acc_i = acc_i if acc_i >= self._vi[c] else self._vi[c]
            s = acc_i
        else:  # ints: exact in any order, and the run's sum fits an int64 (the INT bound)
            acc_i = 0
            for c in range(i, j):
                acc_i += self._vi[c]
            s = s + acc_i
        if mean:
            return (s, agg[1] + (j - i))
        return s

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _fold_count(self, agg: object, i: cython.Py_ssize_t, j: cython.Py_ssize_t, combine: object) -> object:
        """MinCount / MaxCount: ``agg`` combined with the partials ``(v, 1)`` of tuples i:j in
        order: a strictly better v replaces the value and restarts the count, an equal one
        keeps the aggregate's value (``-0.0`` stays) and adds one."""
        while i < j and not self._typed(agg[0]):  # the object way until the value is of the run's kind
            agg = combine(agg, self._partial(i))
            i += 1
        if i == j:
            return agg
        low: cython.bint = self._op == _MINCOUNT
        restart: cython.bint = False
        n: cython.longlong = 0  # the count since the restart, or added to agg's count
        c: cython.Py_ssize_t
        acc_d: cython.double
        acc_i: cython.longlong
        x: cython.double
        y: cython.longlong
        s: object
        if self._vkind == _FLOAT:
            acc_d = agg[0]
            for c in range(i, j):
                x = self._vd[c]
                if (x < acc_d) if low else (x > acc_d):
                    acc_d = x
                    n = 1
                    restart = True
                elif x == acc_d:
                    n += 1
            s = acc_d
        else:
            acc_i = agg[0]
            for c in range(i, j):
                y = self._vi[c]
                if (y < acc_i) if low else (y > acc_i):
                    acc_i = y
                    n = 1
                    restart = True
                elif y == acc_i:
                    n += 1
            s = acc_i
        if not restart and n == 0:
            return agg
        return (s, n if restart else agg[1] + n)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.cdivision(True)
    def _fold_variance(self, agg: object, i: cython.Py_ssize_t, j: cython.Py_ssize_t, combine: object) -> object:
        """Variance / StdDev: ``agg`` combined with the partials ``(1, v, 0)`` of tuples i:j in
        order, each step ``_chan``'s operations in its order (its counts and ints as doubles:
        exact, below 2**53 and 2**25; ``M2 + 0``: the int 0 of a lifted partial)."""
        while i < j and not _chan_typed(agg, j - i):  # the object way until the partial is of floats
            agg = combine(agg, self._partial(i))
            i += 1
        if i == j:
            return agg
        count = agg[0]
        na: cython.double = count
        ma: cython.double = agg[1]
        m2: cython.double = agg[2]
        n: cython.double
        delta: cython.double
        c: cython.Py_ssize_t
        ints: cython.bint = self._vkind == _INT
        for c in range(i, j):
            n = na + 1.0
            delta = (cython.cast(cython.double, self._vi[c]) if ints else self._vd[c]) - ma
            ma = ma + delta * 1.0 / n
            m2 = m2 + 0.0 + delta * delta * na * 1.0 / n
            na = n
        return (count + (j - i), ma, m2)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _fold_arg(self, agg: object, i: cython.Py_ssize_t, j: cython.Py_ssize_t, combine: object) -> object:
        """ArgMin / ArgMax: ``agg`` combined with the partials ``(v, key)`` of tuples i:j in
        order: a strictly smaller (larger) v replaces the aggregate, a tie keeps the older."""
        while i < j and (agg is None or not self._typed(agg[0])):  # the object way until typed
            agg = combine(agg, self._partial(i))
            i += 1
        if i == j:
            return agg
        low: cython.bint = self._op == _ARGMIN
        best: cython.Py_ssize_t = -1  # the column of the aggregate's value, -1: agg's own
        c: cython.Py_ssize_t
        acc_d: cython.double
        acc_i: cython.longlong
        if self._vkind == _FLOAT:
            acc_d = agg[0]
            for c in range(i, j):
                if (self._vd[c] < acc_d) if low else (self._vd[c] > acc_d):
                    acc_d = self._vd[c]
                    best = c
        else:
            acc_i = agg[0]
            for c in range(i, j):
                if (self._vi[c] < acc_i) if low else (self._vi[c] > acc_i):
                    acc_i = self._vi[c]
                    best = c
        return agg if best < 0 else self._partial(best)

    @cython.cfunc
    def _share_columns(self) -> cython.void:
        """A Record's fields read its value columns: pointed at them once per batch (flush,
        release), as taking tuples may regrow the columns or set their kind, never during one."""
        f: TypedIngest
        for f in self._fields:
            f._vd, f._vi, f._vkind = self._vd, self._vi, self._vkind

    @cython.cfunc
    def _fold_record(self, agg: object, i: cython.Py_ssize_t, j: cython.Py_ssize_t) -> object:
        """A Record: each field's partial folded by the field (``Record.combine`` is the
        fields' combines, field by field; the fields read the columns, _share_columns)."""
        f: TypedIngest
        out = []
        c: cython.Py_ssize_t = 0
        for f in self._fields:
            out.append(f._fold(agg[c], i, j, self._combines[c]))
            c += 1
        return tuple(out)

    @cython.cfunc
    def _typed(self, s: object) -> cython.bint:
        """Whether the C loop combines into aggregate ``s`` as the object path would."""
        if self._vkind == _FLOAT:
            return type(s) is float
        if type(s) is not int:
            return False
        if self._op != _SUM and self._op != _MEAN:
            return _I64_MIN <= s <= _I64_MAX
        return True

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _drop(self, k: cython.Py_ssize_t) -> cython.void:
        """Forget the oldest k tuples."""
        c: cython.Py_ssize_t
        if self._sums and self._vkind == _INT:
            for c in range(self._h, self._h + k):
                self._abs -= _abs64(self._vi[c])
        self._h += k
        self._n -= k
        if self._n == 0:
            self._h = 0
            self._abs = 0
            self._tkind = self._vkind = self._kkind = _NONE
