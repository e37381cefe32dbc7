"""Typed Amortized MTA (issue 20): :class:`~mta.algorithms.amta.AmortizedMTA` for the
built-in number monoids, with the partials in typed columns (C doubles or int64) instead
of Python objects. In Cython's pure-Python mode: compiled, this is a C extension type;
without a compiler the same file runs as (slow) Python.

It is a twin, not a cousin: every combine happens in the order AmortizedMTA does it
(its folds included: ``Min.fold`` takes ``min()`` of a run and then combines, ``Sum``
folds left to right), and it keeps the same dyadic structure at the same absolute leaf
indices, the same stale stack (paper section 5.2) and even the object's leaf-buffer
start, which decides how a bulk eviction into a small window computes. So float results
are bit for bit the object algorithm's, and :meth:`TypedAMTA.to_object` hands over an
AmortizedMTA whose every later result is what one that had seen the same operations
gives.

Storage, in memory only (no level store):

- the leaves in a ring indexed by absolute leaf number, holding ``[head, tail)``;
- the stored nodes (levels from ``CHUNK_BITS`` up; the lower ones are folded from the
  leaves, as in AmortizedMTA) all in one ring: node ``(l, j)`` covers leaves
  ``[j 2^l, (j + 1) 2^l)`` and sits at ``q = (2j + 1) 2^(l - CHUNK_BITS)``, its midpoint
  over ``2^(CHUNK_BITS - 1)`` -- distinct for distinct nodes, and ``q >= head >> 4`` for
  every node wholly in the window (the only ones ever read);
- the stack (suffix aggregates of the left tree) in a fixed column: one entry per level
  below the root where ``head`` has a 0 bit, plus at most ``2^CHUNK_BITS - 1`` leaf
  suffixes, fewer than 128.

Rings grow by a quarter when full and never hold more than the live window, so memory is
O(largest window) whatever the number of steps. Nodes that straddle ``head`` when they
complete (AmortizedMTA stores them with evicted leaves in them and never reads them) are
not computed at all: an int64 fold over evicted leaves could overflow.

A value is a ``Part`` (``d`` for FLOAT kind, ``i`` for INT kind, ``c`` the count of a
Mean, MinCount or MaxCount partial). First and Last mark their identity (``_EMPTY``) with
``c == -1``; every stored value has ``c == 0``. Two more monoids fit the same three fields,
with columns only for them (the other monoids' memory does not change, and their steps
only by a few checks of the op):

- Variance and StdDev: ``(count, mean, M2)`` as ``(c, d, i)``, every mean a double and
  M2's bits in ``i`` (a column of their own: the one for ``d`` holds the means). A
  partial of one value, ``(1, v, 0)``, sets the kind: finite floats, or ints of at most
  2**25 (their deviations squared, below 2**53, are exact as doubles, so the same C
  operations give the object's floats; larger ints are :class:`Untyped`); it goes back out
  with the int M2 and v of its kind. Partials of several values (floats) and the identity
  fit either kind.
- ArgMin and ArgMax: ``(value, key)`` as ``d`` or ``i``, and ``c`` the key (an int64, or a
  float key's bits: keys are never compared, NaN and -0.0 come back as they were); the
  identity ``None`` is a value whose unused field (``i`` for FLOAT kind, ``d`` for INT
  kind) is not 0, which no stored value has. Keys of one kind per window
  (chosen with the values' kind); others, strings included, are :class:`Untyped`.

INT-kind sums never overflow because the sum of ``|v|`` over the window's
leaves stays at most ``2^63 - 1`` (checked on insertion, :class:`Untyped` otherwise):
every partial sum is bounded by it. That sum is a difference of prefix sums of ``|v|``
kept modulo ``2^64`` per leaf, exact because the true value is below ``2^64``, and O(1)
after a bulk eviction of any size.
"""

from __future__ import annotations

import math
import struct
from array import array
from types import SimpleNamespace
from typing import Any, Iterator, Sequence

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.algorithms.amta import AmortizedMTA
from mta.algorithms.tree import BUFFER_SIZE
from mta.algorithms.typed import (ARGMAX, ARGMIN, FIRST, LAST, MAX, MAXCOUNT, MEAN, MIN, MINCOUNT, SUM, VARIANCE, Untyped,
                                  _bare, _restored, serves, wide_op_of)
from mta.monoid import Count, Monoid, StdDev

COMPILED: bool = cython.compiled

__all__ = ["TypedAMTA", "Untyped"]


# -- C-level constants ---------------------------------------------------------------------

#: Ints of at most this magnitude are exact as doubles.
_EXACT = cython.declare(cython.longlong, 2 ** 53)

#: Ints of at most this magnitude are Variance's INT kind: their deviations squared are exact as doubles.
_VARIANCE_INT = cython.declare(cython.longlong, 2 ** 25)

Part = cython.struct(d=cython.double, i=cython.longlong, c=cython.longlong)
if not cython.compiled:  # Cython's own pure-mode struct checks every field of every value: 100x slower
    globals()["Part"] = SimpleNamespace

_SUM = cython.declare(cython.int, SUM)
_MIN = cython.declare(cython.int, MIN)
_MAX = cython.declare(cython.int, MAX)
_MEAN = cython.declare(cython.int, MEAN)
_MINCOUNT = cython.declare(cython.int, MINCOUNT)
_MAXCOUNT = cython.declare(cython.int, MAXCOUNT)
_FIRST = cython.declare(cython.int, FIRST)
_LAST = cython.declare(cython.int, LAST)
_VARIANCE = cython.declare(cython.int, VARIANCE)
_ARGMIN = cython.declare(cython.int, ARGMIN)
_ARGMAX = cython.declare(cython.int, ARGMAX)

BITS = cython.declare(cython.Py_ssize_t, AmortizedMTA.CHUNK_BITS)
CHUNK_MASK = cython.declare(cython.Py_ssize_t, (1 << AmortizedMTA.CHUNK_BITS) - 1)
#: AmortizedMTA's leaf-buffer size: when it flushes decides one branch of its bulk eviction.
BUFFER = cython.declare(cython.Py_ssize_t, BUFFER_SIZE)
#: Largest sum of |v| over an INT-kind window of SUM or MEAN partials.
LIMIT = cython.declare(cython.ulonglong, 2**63 - 1)
INT64_MAX = cython.declare(cython.longlong, 2**63 - 1)
INT64_MIN = cython.declare(cython.longlong, -INT64_MAX - 1)
STACK_SIZE = cython.declare(cython.Py_ssize_t, 128)
LEAF_START = cython.declare(cython.Py_ssize_t, 64)
NODE_START = cython.declare(cython.Py_ssize_t, 8)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _bitlen(x: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """``int.bit_length`` of a non-negative index."""
    n: cython.Py_ssize_t = 0
    while x:
        x >>= 1
        n += 1
    return n


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _wrap64(x: cython.ulonglong) -> cython.ulonglong:
    """``x`` modulo 2^64 (C's unsigned arithmetic does it; Python's ints need the mask)."""
    if not cython.compiled:
        x &= 0xFFFF_FFFF_FFFF_FFFF
    return x


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _abs64(v: cython.longlong) -> cython.ulonglong:
    """|v| as an unsigned 64-bit int (2^63 for -2^63)."""
    if v < 0:
        return cython.cast(cython.ulonglong, -(v + 1)) + 1
    return cython.cast(cython.ulonglong, v)


_Bits = cython.union(d=cython.double, i=cython.longlong)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _bits(x: cython.double) -> cython.longlong:
    """The bits of a double as an int64 (an ArgMin / ArgMax float key in the int64 column)."""
    if cython.compiled:
        u: _Bits
        u.d = x
        return u.i
    return _INT64_OF_DOUBLE(_DOUBLE_BYTES(x))[0]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _double(b: cython.longlong) -> cython.double:
    """The double whose bits :func:`_bits` gave."""
    if cython.compiled:
        u: _Bits
        u.i = b
        return u.d
    return _DOUBLE_OF_INT64(_INT64_BYTES(b))[0]


_DOUBLE_BYTES, _INT64_BYTES = struct.Struct("<d").pack, struct.Struct("<q").pack
_DOUBLE_OF_INT64, _INT64_OF_DOUBLE = struct.Struct("<d").unpack, struct.Struct("<q").unpack


def _column(typecode: str, size: int) -> array:
    """``size`` zeros of ``typecode`` (no temporary of that size on the way)."""
    return array(typecode, [0]) * size


def _regrow(old: array, base: int, cap: int, low: int, high: int, size: int) -> array:
    """A new column of ``size`` slots holding the ring ``old``'s indices ``[low, high)``
    at slots ``0 ..`` (the new ring's base is ``low``)."""
    new = _column(old.typecode, size)
    n = min(high - low, cap)  # a ring holds no more (nodes: indices past it are not stored yet)
    offset = low - base
    if offset >= cap:
        offset -= cap
    first = min(n, cap - offset)
    target, source = memoryview(new), memoryview(old)
    target[:first] = source[offset:offset + first]
    target[first:n] = source[:n - first]
    return new


def _as_int64(column: array) -> memoryview:
    """The same bytes as int64 (a column holds doubles or int64 by the window's kind)."""
    return memoryview(column).cast("B").cast("q")


_NO_ROWS = _column("d", 0)
_NO_INT_ROWS = _column("q", 0)


@cython.cfunc
@cython.inline
@cython.cdivision(True)
@cython.exceptval(check=False)
def _chan(a: Part, b: Part) -> Part:
    """``mta.monoid._chan`` of ``(count, mean, M2)`` partials ``(c, d, e)``, its operations in
    its order (the counts, below 2**53, are exact as doubles; Python converts them too)."""
    if a.c == 0:
        return b
    if b.c == 0:
        return a
    n: cython.longlong = a.c + b.c
    na: cython.double = a.c
    nb: cython.double = b.c
    nn: cython.double = n
    delta: cython.double = b.d - a.d
    m2: cython.double = _double(a.i) + _double(b.i) + delta * delta * na * nb / nn
    return Part(d=a.d + delta * nb / nn, i=_bits(m2), c=n)


@cython.final
def _plain(p: Any) -> tuple:
    """A value (a struct compiled, a namespace interpreted) as a plain ``(d, i, c)`` tuple."""
    if isinstance(p, dict):
        return (p["d"], p["i"], p["c"])
    return (p.d, p.i, p.c)


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.initializedcheck(False)
class TypedAMTA:
    """AmortizedMTA over typed columns, for Sum, Count, Min, Max, Mean, MinCount, MaxCount,
    First, Last, Variance, StdDev, ArgMin and ArgMax partials whose values are all exactly
    ``float`` or all exactly ``int`` (int64; Variance: at most 2**25). See the module
    docstring."""

    name = AmortizedMTA.name
    monoid = cython.declare(object, visibility="public")
    hold = cython.declare(cython.bint, visibility="public")
    #: Under TypedTimed (see typed._TypedCore.timed).
    timed = cython.declare(cython.bint, visibility="public")
    #: How many times the leaf buffer moved (AmortizedMTA's flushes): a stored window commits then.
    moves = cython.declare(cython.Py_ssize_t, visibility="readonly")
    #: AmortizedMTA's store is durable: an eviction of a few that would read it goes in bulk.
    durable = cython.declare(cython.bint, visibility="public")

    _op: cython.int
    _max_size: cython.Py_ssize_t  # mta.Window's MaxSize, for push (-1: none)
    _float: cython.bint        # the kind: FLOAT (doubles) or INT (int64)
    _mean: cython.bint         # partials are pairs (value, count): Mean, MinCount, MaxCount
    _cnt: cython.bint          # the int64 columns are kept: counts (pairs, Variance) or keys (ArgMin / ArgMax)
    _var: cython.bint          # Variance / StdDev: the M2 columns are kept
    _arg: cython.bint          # ArgMin / ArgMax
    _ivar: cython.bint         # Variance of the INT kind (its means are doubles: _float stays True)
    _fkey: cython.bint         # ArgMin / ArgMax: the keys are floats (their bits in the int64 column)
    _keykind: cython.bint      # the key kind of the partial _decode last read
    _neutral: cython.bint      # the partial _decode last read fits either kind (Variance, count != 1)
    _last_one: cython.Py_ssize_t  # Variance: the newest leaf of one value (its kind fixes the window's)
    _batch_last: cython.Py_ssize_t  # Variance: the last partial of one value in the batch _check_many read
    _ddof: cython.longlong     # Variance / StdDev
    _sqrt: cython.bint         # StdDev
    _count: cython.bint        # Count: INT kind only (its fold sums floats in another order)
    _track: cython.bint        # INT kind of SUM or MEAN: prefix sums of |v| are kept
    _kind: cython.bint         # the kind of the partial _decode last read
    _identity: Part

    # AmortizedMTA's state, field for field
    _head: cython.Py_ssize_t
    _tail: cython.Py_ssize_t
    _r0: Part
    _r1: Part
    _root_level: cython.Py_ssize_t
    _merge_mask: cython.Py_ssize_t
    _quiet_mask: cython.Py_ssize_t
    _stale: cython.bint        # AmortizedMTA's stack is None
    _sn: cython.Py_ssize_t     # stack size
    _levels: cython.Py_ssize_t  # how many levels AmortizedMTA has
    _bstart: cython.Py_ssize_t  # where AmortizedMTA's leaf buffer starts (the rest is in its store)
    _flush_due: cython.bint
    _held_head: cython.Py_ssize_t

    # leaves: ring [head, tail) of values (d/i over one column), Mean counts, prefixes of |v|
    _lvals: object
    _lcnts: object
    _lpres: object
    _lm2s: object
    _ld: cython.double[:]
    _li: cython.longlong[:]
    _lc: cython.longlong[:]
    _lp: cython.ulonglong[:]
    _le: cython.longlong[:]
    _lcap: cython.Py_ssize_t
    _lbase: cython.Py_ssize_t
    _ptail: cython.ulonglong   # sum of |v| over leaves [0, tail), modulo 2^64
    # stored nodes, by q (module docstring)
    _nvals: object
    _ncnts: object
    _nm2s: object
    _nd: cython.double[:]
    _ni: cython.longlong[:]
    _nc: cython.longlong[:]
    _ne: cython.longlong[:]
    _ncap: cython.Py_ssize_t
    _nbase: cython.Py_ssize_t
    # the stack
    _svals: object
    _scnts: object
    _sm2s: object
    _sd: cython.double[:]
    _si: cython.longlong[:]
    _sc: cython.longlong[:]
    _se: cython.longlong[:]
    _sxs: object
    _sx: cython.longlong[:]    # where each entry's suffix starts: entry = agg[x, B)

    def __init__(self, monoid: Monoid, max_size: int | None = None) -> None:
        op = wide_op_of(monoid) if serves(monoid) else None
        if op is None:
            raise TypeError(f"TypedAMTA serves Sum, Count, Min, Max, Mean, MinCount, MaxCount, First, Last, "
                            f"Variance, StdDev, ArgMin and ArgMax, not {monoid!r}")
        self.monoid = monoid
        self.hold = False
        self.timed = False
        self.durable = False
        self._max_size = -1 if max_size is None else max_size
        self._op = op
        self._mean = op == MEAN or op == MINCOUNT or op == MAXCOUNT
        self._var = op == VARIANCE
        self._arg = op == ARGMIN or op == ARGMAX
        self._cnt = self._mean or self._var or self._arg
        self._ddof = monoid.ddof if self._var else 0
        self._sqrt = type(monoid) is StdDev
        self._ivar = self._fkey = self._keykind = self._neutral = False
        self._count = type(monoid) is Count
        self._flush_due = False
        self._held_head = 0
        self.moves = 0
        self._svals = _column("d", STACK_SIZE)
        self._sxs = _column("q", STACK_SIZE)
        self._scnts = _column("q", STACK_SIZE if self._cnt else 0)
        self._sm2s = _column("q", STACK_SIZE if self._var else 0)
        self._lpres = _column("Q", 0)
        self._set_kind(True)
        self._reset()

    def _reset(self) -> None:
        """Empty, at leaf 0, with small rings (AmortizedMTA's ``_reset``)."""
        self._head = self._tail = 0
        self._last_one = -1
        self._r0 = self._r1 = self._identity
        self._root_level = self._merge_mask = self._quiet_mask = 0
        self._stale = False
        self._sn = 0
        self._levels = BITS + 1
        self._bstart = 0
        self._lvals = _column("d", LEAF_START)
        self._lcnts = _column("q", LEAF_START if self._cnt else 0)
        self._lm2s = _column("q", LEAF_START if self._var else 0)
        if len(self._lpres):
            self._lpres = _column("Q", LEAF_START)
        self._lcap = LEAF_START
        self._lbase = 0
        self._ptail = 0
        self._nvals = _column("d", NODE_START)
        self._ncnts = _column("q", NODE_START if self._cnt else 0)
        self._nm2s = _column("q", NODE_START if self._var else 0)
        self._ncap = NODE_START
        self._nbase = 0
        self._bind()

    def _bind(self) -> None:
        """Point the typed views at the columns (after they are made or replaced)."""
        self._ld = self._lvals
        self._li = _as_int64(self._lvals)
        self._lc = self._lcnts
        self._lp = self._lpres
        self._le = self._lm2s
        self._nd = self._nvals
        self._ni = _as_int64(self._nvals)
        self._nc = self._ncnts
        self._ne = self._nm2s
        self._sd = self._svals
        self._si = _as_int64(self._svals)
        self._sc = self._scnts
        self._se = self._sm2s
        self._sx = self._sxs

    @cython.cfunc
    def _set_kind(self, kind: cython.bint) -> cython.int:
        """Switch to FLOAT (True) or INT kind (and ArgMin / ArgMax to the key kind
        ``_keykind``); only while the window is empty."""
        op: cython.int = self._op
        if self._var:
            self._ivar = not kind
            kind = True  # every mean is a double
        if self._arg:
            self._fkey = self._keykind
        self._float = kind
        self._track = not kind and (op == _SUM or op == _MEAN)
        if self._track and not len(self._lpres):
            self._lpres = _column("Q", self._lcap)
            self._lp = self._lpres
        if op == _MIN or op == _MINCOUNT:
            self._identity = Part(d=math.inf, i=INT64_MAX, c=0)
        elif op == _MAX or op == _MAXCOUNT:
            self._identity = Part(d=-math.inf, i=INT64_MIN, c=0)
        elif op == _FIRST or op == _LAST:
            self._identity = Part(d=0.0, i=0, c=-1)  # _EMPTY
        elif self._arg:  # None: the field the kind leaves unused is not 0 (_empty)
            self._identity = Part(d=0.0, i=1, c=0) if kind else Part(d=1.0, i=0, c=0)
        else:
            self._identity = Part(d=0.0, i=0, c=0)
        return 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _window_kind(self) -> cython.bint:
        """The window's kind: True FLOAT, False INT."""
        return not self._ivar if self._var else self._float

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _kinded(self) -> cython.bint:
        """Whether the window's kind is fixed: it is not empty (Variance: it holds a partial
        of one value; the others fit either kind)."""
        if self._var:
            return self._last_one >= self._head
        return self._head != self._tail

    # -- values -------------------------------------------------------------------------------

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _comb(self, a: Part, b: Part) -> Part:
        """The monoid's combine(a, b), as the object algorithm computes it."""
        op: cython.int = self._op
        if op == _SUM:
            if self._float:
                return Part(d=a.d + b.d, i=0, c=0)
            return Part(d=0.0, i=a.i + b.i, c=0)
        if op == _MIN:  # ties keep the left operand
            if self._float:
                return a if a.d <= b.d else b
            return a if a.i <= b.i else b
        if op == _MAX:
            if self._float:
                return a if a.d >= b.d else b
            return a if a.i >= b.i else b
        if op == _FIRST:  # the left operand unless it is the identity
            return b if a.c < 0 else a
        if op == _LAST:
            return a if b.c < 0 else b
        if op == _MINCOUNT:  # _mincount: the smaller wins, equal values add their counts
            if (a.d < b.d) if self._float else (a.i < b.i):
                return a
            if (b.d < a.d) if self._float else (b.i < a.i):
                return b
            return Part(d=a.d, i=a.i, c=a.c + b.c)
        if op == _MAXCOUNT:
            if (a.d > b.d) if self._float else (a.i > b.i):
                return a
            if (b.d > a.d) if self._float else (b.i > a.i):
                return b
            return Part(d=a.d, i=a.i, c=a.c + b.c)
        if op != _MEAN:
            return self._comb_more(a, b)
        if self._float:
            return Part(d=a.d + b.d, i=0, c=a.c + b.c)
        return Part(d=0.0, i=a.i + b.i, c=a.c + b.c)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _empty(self, p: Part) -> cython.bint:
        """Whether an ArgMin / ArgMax value is the identity (None): its kind's unused field
        is not 0 (every other value has 0 there)."""
        return p.i != 0 if self._float else p.d != 0.0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _comb_more(self, a: Part, b: Part) -> Part:
        """:meth:`_comb` of Variance, ArgMin and ArgMax: a call of its own, so that the
        inlined combine of the other monoids stays as small as it was."""
        op: cython.int = self._op
        if op == _VARIANCE:
            return _chan(a, b)
        if self._empty(a):  # ArgMin / ArgMax: None
            return b
        if self._empty(b):
            return a
        if op == _ARGMIN:  # ties keep the left operand
            if self._float:
                return a if a.d <= b.d else b
            return a if a.i <= b.i else b
        if self._float:
            return a if a.d >= b.d else b
        return a if a.i >= b.i else b

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _lslot(self, index: cython.Py_ssize_t) -> cython.Py_ssize_t:
        s: cython.Py_ssize_t = index - self._lbase
        if s >= self._lcap:
            s -= self._lcap
        return s

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _leaf(self, index: cython.Py_ssize_t) -> Part:
        s: cython.Py_ssize_t = self._lslot(index)
        c: cython.longlong = 0
        m: cython.longlong = 0
        if self._cnt:
            c = self._lc[s]
            if self._var:  # M2's bits in i
                m = self._le[s]
        if self._float:
            return Part(d=self._ld[s], i=m, c=c)
        return Part(d=0.0, i=self._li[s], c=c)

    @cython.cfunc
    def _put_leaf(self, index: cython.Py_ssize_t, p: Part) -> cython.int:
        """Store leaf ``index`` (the next one: leaves are put in order)."""
        s: cython.Py_ssize_t
        if index - self._head >= self._lcap:
            self._grow_leaves(index)
        s = self._lslot(index)
        if self._float:
            self._ld[s] = p.d
        else:
            self._li[s] = p.i
            if self._track:
                self._lp[s] = self._ptail
                self._ptail = _wrap64(self._ptail + _abs64(p.i))
        if self._cnt:
            self._lc[s] = p.c
            if self._var:
                self._le[s] = p.i
        return 0

    def _grow_leaves(self, stop: int) -> None:
        """Room for leaves ``[head, stop]``: the live ones move to bigger columns."""
        cap, base, low = self._lcap, self._lbase, self._head
        size = cap + (cap >> 2) + 16
        self._lvals = _regrow(self._lvals, base, cap, low, stop, size)
        if self._cnt:
            self._lcnts = _regrow(self._lcnts, base, cap, low, stop, size)
        if self._var:
            self._lm2s = _regrow(self._lm2s, base, cap, low, stop, size)
        if len(self._lpres):
            self._lpres = _regrow(self._lpres, base, cap, low, stop, size)
        self._lcap, self._lbase = size, low
        self._bind()

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _nslot(self, number: cython.Py_ssize_t, index: cython.Py_ssize_t) -> cython.Py_ssize_t:
        s: cython.Py_ssize_t = ((2 * index + 1) << (number - BITS)) - self._nbase
        if s >= self._ncap:
            s -= self._ncap
        return s

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _stored(self, number: cython.Py_ssize_t, index: cython.Py_ssize_t) -> Part:
        """Node ``(number, index)`` of a stored level (``number >= CHUNK_BITS``)."""
        s: cython.Py_ssize_t = self._nslot(number, index)
        c: cython.longlong = 0
        m: cython.longlong = 0
        if self._cnt:
            c = self._nc[s]
            if self._var:  # M2's bits in i
                m = self._ne[s]
        if self._float:
            return Part(d=self._nd[s], i=m, c=c)
        return Part(d=0.0, i=self._ni[s], c=c)

    @cython.cfunc
    def _store(self, number: cython.Py_ssize_t, index: cython.Py_ssize_t, p: Part) -> cython.int:
        s: cython.Py_ssize_t = self._nslot(number, index)
        if self._float:
            self._nd[s] = p.d
        else:
            self._ni[s] = p.i
        if self._cnt:
            self._nc[s] = p.c
            if self._var:
                self._ne[s] = p.i
        return 0

    def _grow_nodes(self, stop: int) -> None:
        """Room for nodes ``q`` in ``[head >> (CHUNK_BITS - 1), stop]``."""
        cap, base, low = self._ncap, self._nbase, self._head >> (BITS - 1)
        size = max(cap + (cap >> 2) + 4, stop - low + 1)
        self._nvals = _regrow(self._nvals, base, cap, low, stop, size)
        if self._cnt:
            self._ncnts = _regrow(self._ncnts, base, cap, low, stop, size)
        if self._var:
            self._nm2s = _regrow(self._nm2s, base, cap, low, stop, size)
        self._ncap, self._nbase = size, low
        self._bind()

    @cython.cfunc
    @cython.exceptval(check=False)
    def _node(self, number: cython.Py_ssize_t, index: cython.Py_ssize_t) -> Part:
        """Node ``(number, index)`` as AmortizedMTA's ``_node`` gives it (levels between 0 and
        CHUNK_BITS folded from the leaves by ``reduce``)."""
        if number == 0:
            return self._leaf(index)
        if number < BITS:
            return self._reduce(index << number, (index + 1) << number)
        return self._stored(number, index)

    @cython.cfunc
    @cython.exceptval(check=False)
    def _reduce(self, start: cython.Py_ssize_t, stop: cython.Py_ssize_t) -> Part:
        """``functools.reduce(combine, leaves[start:stop])`` (not empty)."""
        acc: Part = self._leaf(start)
        i: cython.Py_ssize_t
        for i in range(start + 1, stop):
            acc = self._comb(acc, self._leaf(i))
        return acc

    @cython.cfunc
    @cython.exceptval(check=False)
    def _fold(self, acc: Part, start: cython.Py_ssize_t, stop: cython.Py_ssize_t) -> Part:
        """``monoid.fold(acc, leaves[start:stop])``: Min and Max take ``min()`` / ``max()``
        of the run first (the first of equal values, ``<`` / ``>`` as the builtins
        compare), then combine; the others fold left to right (Count: INT kind only,
        where its ``acc + sum(run)`` is exact in any order)."""
        op: cython.int = self._op
        i: cython.Py_ssize_t
        best: Part
        v: Part
        if op != _MIN and op != _MAX:
            for i in range(start, stop):
                acc = self._comb(acc, self._leaf(i))
            return acc
        if start == stop:
            return acc
        best = self._leaf(start)
        for i in range(start + 1, stop):
            v = self._leaf(i)
            if op == _MIN:
                if (v.d < best.d) if self._float else (v.i < best.i):
                    best = v
            elif (v.d > best.d) if self._float else (v.i > best.i):
                best = v
        return self._comb(acc, best)

    # -- the stack ----------------------------------------------------------------------------

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _push(self, p: Part, x: cython.Py_ssize_t) -> cython.int:
        """Push ``p`` = agg[x, B)."""
        n: cython.Py_ssize_t = self._sn
        self._sx[n] = x
        if self._float:
            self._sd[n] = p.d
        else:
            self._si[n] = p.i
        if self._cnt:
            self._sc[n] = p.c
            if self._var:
                self._se[n] = p.i
        self._sn = n + 1
        return 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _top(self) -> Part:
        return self._top_at(self._sn - 1)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _push_on(self, value: Part, x: cython.Py_ssize_t) -> cython.int:
        """Push ``value`` (= agg[x, top's x)) combined with the top (alone on an empty stack)."""
        if self._sn:
            value = self._comb(value, self._top())
        return self._push(value, x)

    # -- partials in and out ------------------------------------------------------------------

    @cython.cfunc
    def _decode(self, partial: object) -> Part:
        """``partial`` as a Part, its kind in ``_kind`` (ArgMin / ArgMax: its key's in
        ``_keykind``); Untyped if it does not fit a column."""
        value: object = partial
        c: cython.longlong = 0
        if self._cnt and not self._mean:
            if self._var:
                return self._decode_variance(partial)
            if type(partial) is not tuple or len(partial) != 2:
                raise Untyped(f"not a (value, key) partial: {partial!r}")
            value = partial[0]
            c = self._decode_key(partial[1])
            if type(value) is float and value != value:
                raise Untyped("ArgMin / ArgMax take no NaN (as their lift)")
        elif self._mean:
            if type(partial) is not tuple or len(partial) != 2:
                raise Untyped(f"not a (value, count) partial: {partial!r}")
            value = partial[0]
            count: object = partial[1]
            if type(count) is not int or not 0 <= count < 2**32:
                raise Untyped(f"a count must be an int in [0, 2**32), got {count!r}")
            c = count
        if type(value) is float:
            if self._count:
                raise Untyped("Count partials are ints")
            if self._op != _MEAN and self._mean and not -math.inf < value < math.inf:
                raise Untyped("MinCount / MaxCount take finite values (as their lift)")
            self._kind = True
            return Part(d=value, i=0, c=c)
        if type(value) is not int:
            raise Untyped(f"not an int or a float: {value!r}")
        try:
            if not cython.compiled and not -2**63 <= value < 2**63:
                raise OverflowError  # as the compiled conversion below does
            i: cython.longlong = value
        except OverflowError:
            raise Untyped(f"an int outside int64: {value!r}") from None
        self._kind = False
        return Part(d=0.0, i=i, c=c)

    @cython.cfunc
    def _decode_key(self, key: object) -> cython.longlong:
        """An ArgMin / ArgMax key as an int64 (a float key: its bits), its kind in ``_keykind``."""
        if type(key) is float:
            self._keykind = True
            return _bits(key)
        if type(key) is int and -2**63 <= key < 2**63:
            self._keykind = False
            return key
        raise Untyped(f"a key must be an int in int64 or a float, got {key!r}")

    @cython.cfunc
    def _decode_variance(self, partial: object) -> Part:
        """A ``(count, mean, M2)`` partial as ``(c, d, e)``. Count 1: ``(1, v, 0)`` as lifted,
        v a finite float (FLOAT kind) or an int of at most 2**25 (INT kind: every combine
        is then exact where it must be, so the doubles give the object's floats); other
        counts fit either kind (``_neutral``): the identity ``(0, 0.0, 0.0)`` or finite
        float mean and M2 (what ``_chan`` gives)."""
        self._neutral = False
        if type(partial) is not tuple or len(partial) != 3:
            raise Untyped(f"not a (count, mean, M2) partial: {partial!r}")
        count: object = partial[0]
        mean: object = partial[1]
        m2: object = partial[2]
        if type(count) is not int or not 0 <= count < 2**32:
            raise Untyped(f"a count must be an int in [0, 2**32), got {count!r}")
        if count == 1:
            if type(m2) is not int or m2 != 0:
                raise Untyped(f"a partial of one value has M2 the int 0, got {m2!r}")
            if type(mean) is float and -math.inf < mean < math.inf:
                self._kind = True
                return Part(d=mean, i=0, c=1)
            if type(mean) is int and -_VARIANCE_INT <= mean <= _VARIANCE_INT:
                self._kind = False
                return Part(d=float(mean), i=0, c=1)
            raise Untyped(f"a mean must be a finite float or an int of at most 2**25, got {mean!r}")
        if type(mean) is not float or type(m2) is not float:
            raise Untyped(f"mean and M2 of a partial of {count} values must be floats")
        if not (-math.inf < mean < math.inf and -math.inf < m2 < math.inf):
            raise Untyped("mean and M2 must be finite")
        if count == 0 and (mean != 0.0 or m2 != 0.0 or math.copysign(1.0, mean) < 0 or math.copysign(1.0, m2) < 0):
            raise Untyped(f"a partial of no values must be the identity, got {partial!r}")
        self._neutral = True
        self._kind = self._window_kind()
        return Part(d=mean, i=_bits(m2), c=count)

    @cython.cfunc
    def _encode(self, p: Part) -> object:
        if not self._cnt:
            return p.d if self._float else p.i
        if self._var:
            if p.c == 0:
                return self.monoid.identity
            if p.c == 1:
                return (1, int(p.d) if self._ivar else p.d, 0)
            return (p.c, p.d, _double(p.i))
        value: object = p.d if self._float else p.i
        if self._arg:
            if self._empty(p):
                return None
            return (value, _double(p.c) if self._fkey else p.c)
        return (value, p.c) if self._mean else value

    @cython.cfunc
    @cython.exceptval(check=False)
    def _window_abs(self) -> cython.ulonglong:
        """Sum of |v| over the window (INT kind of SUM or MEAN)."""
        if self._head == self._tail:
            return 0
        return _wrap64(self._ptail - self._lp[self._lslot(self._head)])

    @cython.cfunc
    def _admit(self, partial: object) -> Part:
        """``partial`` decoded and checked against the window (kind, int64 bound); switches
        the kind of an empty window. Untyped, with nothing changed, if it does not fit."""
        p: Part = self._decode(partial)
        if self._cnt and not self._mean:  # Variance, ArgMin, ArgMax
            if self._kind != self._window_kind() or (self._arg and self._keykind != self._fkey):
                if self._kinded():
                    raise Untyped("a partial of the other kind in a non-empty window")
                self._set_kind(self._kind)
            if self._var and not self._neutral:
                self._last_one = self._tail  # (the leaf it becomes)
            return p
        if self._kind != self._float:
            if self._head != self._tail:
                raise Untyped("a partial of the other kind in a non-empty window")
            self._set_kind(self._kind)
        if self._track and _abs64(p.i) > LIMIT - self._window_abs():
            raise Untyped("the window's sum of |v| would exceed 2**63 - 1")
        return p

    @cython.cfunc
    def _check_many(self, partials: object, vd: cython.double[:], vi: cython.longlong[:],
                    vc: cython.longlong[:], ve: cython.longlong[:], keep: cython.bint) -> cython.int:
        """The kind of ``partials`` (1 FLOAT, 0 INT; ArgMin / ArgMax: their key kind in
        ``_keykind``) if :meth:`insert_many` takes them all (with ``keep``, decoded into the
        rows of ``vd`` or ``vi``, ``vc`` and ``ve``); raise Untyped otherwise. Changes
        nothing (but the scratch fields)."""
        empty: cython.bint = self._head == self._tail
        kind: cython.int = self._window_kind() if self._kinded() else -1
        keys: cython.bint = self._fkey
        total: cython.ulonglong = 0 if empty or not self._track else self._window_abs()
        bounded: cython.bint = self._op == _SUM or self._op == _MEAN
        a: cython.ulonglong
        p: Part
        j: cython.Py_ssize_t = 0
        self._batch_last = -1
        for partial in partials:
            p = self._decode(partial)
            if self._neutral:
                pass
            elif kind < 0:
                self._batch_last = j
                kind = self._kind
                keys = self._keykind
            elif kind != self._kind or (self._arg and keys != self._keykind):
                raise Untyped("partials of both kinds")
            else:
                self._batch_last = j
            if bounded and not kind:
                a = _abs64(p.i)
                if a > LIMIT - total:
                    raise Untyped("the window's sum of |v| would exceed 2**63 - 1")
                total += a
            if keep:
                if kind > 0 or self._var:  # (kind < 0: a neutral Variance partial)
                    vd[j] = p.d
                else:
                    vi[j] = p.i
                if self._cnt:
                    vc[j] = p.c
                if self._var:
                    ve[j] = p.i
            j += 1
        self._keykind = keys
        return self._window_kind() if kind < 0 else kind

    # -- insertion (AmortizedMTA.insert) ------------------------------------------------------

    def insert(self, partial: Any) -> None:
        self._insert(self._admit(partial))

    @cython.cfunc
    def _insert(self, p: Part) -> cython.int:
        t: cython.Py_ssize_t = self._tail
        t1: cython.Py_ssize_t = t + 1
        h: cython.Py_ssize_t = self._head
        right: Part
        self._put_leaf(t, p)
        self._tail = t1
        if t1 & self._quiet_mask:  # the common case: R1 takes the leaf
            self._r1 = self._comb(self._r1, p)
            return 0
        if not t1 & CHUNK_MASK:
            self._complete_chunk(t1)
        if t1 & self._merge_mask:
            self._r1 = self._comb(self._r1, p)
        elif h == t:  # the first leaf of an empty window: R0 alone
            self._r0 = p
            self._r1 = self._identity
            self._set_root_level(_bitlen(t ^ t1) - 1)
            self._stale = False
            self._sn = 0
        else:  # a tree completes and merges with the left one: all of it joins R0
            right = self._comb(self._r1, p)
            self._r0 = self._comb(self._r0, right)
            self._r1 = self._identity
            self._set_root_level(_bitlen(h ^ t1) - 1)
            if h == t - 1:
                self._stale = False
                self._sn = 0
                self._push(right, t)
            elif h == t - 2 and not self._stale and self._sn == 0:
                self._push(p, t)
                self._push(right, t - 1)
            else:
                self._stale = True
                self._sn = 0
        if t1 - self._bstart > BUFFER:  # AmortizedMTA flushes its leaf buffer here
            if self.hold:
                self._flush_due = True
            else:
                self._move_buffer()
        return 0

    def insert_many(self, partials: Sequence[Any]) -> None:
        """As :meth:`insert` one by one, all or nothing: Untyped, and no change, if one
        partial does not fit."""
        if type(partials) is not list and type(partials) is not tuple:
            partials = list(partials)
        n: cython.Py_ssize_t = len(partials)
        if not n:
            return
        rows = _column("d", n)
        counts = _column("q", n if self._cnt else 0)
        m2s = _column("q", n if self._var else 0)
        kind: cython.bint = self._check_many(partials, rows, _as_int64(rows), counts, m2s, True)
        if kind != self._window_kind() or (self._arg and self._keykind != self._fkey):
            self._set_kind(kind)  # the window's kind is not fixed (_check_many)
        if self._var and self._batch_last >= 0:
            self._last_one = self._tail + self._batch_last
        self._insert_rows(rows, _as_int64(rows), counts, m2s, False, n)

    def accepts(self, partials: Sequence[Any]) -> bool:
        """Whether :meth:`insert_many` would take ``partials``."""
        try:
            self._check_many(partials, _NO_ROWS, _NO_INT_ROWS, _NO_INT_ROWS, _NO_INT_ROWS, False)
        except Untyped:
            return False
        return True

    @cython.ccall
    def fits(self, partial: object) -> cython.bint:
        """Whether :meth:`insert` takes ``partial``: :meth:`_admit`'s checks, changing nothing
        (but the scratch ``_kind``)."""
        p: Part
        try:
            p = self._decode(partial)
        except Untyped:
            return False
        if not self._kinded():  # an empty window takes either kind (_admit switches it)
            return self._kind or not (self._op == _SUM or self._op == _MEAN) or _abs64(p.i) <= LIMIT
        if self._kind != self._window_kind() or (self._arg and self._keykind != self._fkey):
            return False
        return not (self._track and _abs64(p.i) > LIMIT - self._window_abs())

    def insert_array(self, values: Any, keys: Any = None, abs_total: Any = None) -> None:
        """:meth:`insert_many` of the values of a float64 or int64 buffer (a numpy array) as
        value partials (pairs: with count 1), without a Python object per value. The caller
        has checked that the monoid lifts every value unchanged; Untyped, and no change,
        for the other kind or beyond the INT bound (``abs_total``: an int64 column's sum of
        |v| when the caller has it, as TypedRecord for all its fields; else summed here). Variance lifts ``v`` to ``(1, v, 0)``:
        floats finite, ints of at most 2**25 (the INT kind), checked here; ArgMin and ArgMax
        ``(value, key)`` with the keys of ``keys`` (:meth:`_insert_arg_array`)."""
        view = memoryview(values)
        if self._arg:
            self._insert_arg_array(view, keys)
            return
        if keys is not None:
            raise Untyped("only ArgMin / ArgMax take keys")
        if self._var:
            self._insert_variance_array(view)
            return
        n: cython.Py_ssize_t = len(view)
        kind: cython.bint = view.format == "d"
        total: cython.ulonglong = 0
        a: cython.ulonglong
        j: cython.Py_ssize_t
        vi: cython.const[cython.longlong][:] = _NO_INT_ROWS  # const: numpy arrays may be read-only
        if not n:
            return
        if self._head != self._tail and kind != self._float:
            raise Untyped("values of the other kind in a non-empty window")
        if not kind:
            vi = view
            if self._op == _SUM or self._op == _MEAN:
                total = 0 if self._head == self._tail or not self._track else self._window_abs()
                if abs_total is not None:
                    a = abs_total
                    if a > LIMIT - total:
                        raise Untyped("the window's sum of |v| would exceed 2**63 - 1")
                    total += a
                else:
                    for j in range(n):
                        a = _abs64(vi[j])
                        if a > LIMIT - total:
                            raise Untyped("the window's sum of |v| would exceed 2**63 - 1")
                        total += a
        if kind != self._float:
            self._set_kind(kind)
        if kind:
            self._insert_rows(view, _NO_INT_ROWS, _NO_INT_ROWS, _NO_INT_ROWS, True, n)
        else:
            self._insert_rows(_NO_ROWS, vi, _NO_INT_ROWS, _NO_INT_ROWS, True, n)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _insert_arg_array(self, view: object, keys: Any) -> None:
        """:meth:`insert_array` for ArgMin / ArgMax: values not NaN (checked here), each with
        the key of ``keys`` (a float64 or int64 buffer of the same length; float keys as
        their bits in the int64 column)."""
        n: cython.Py_ssize_t = len(view)
        j: cython.Py_ssize_t
        x: cython.double
        kind: cython.bint = view.format == "d"
        vd: cython.const[cython.double][:] = _NO_ROWS
        vi: cython.const[cython.longlong][:] = _NO_INT_ROWS
        if keys is None:
            raise Untyped("ArgMin / ArgMax lift (key, value) pairs")
        kview = memoryview(keys)
        if len(kview) != n:
            raise Untyped("as many keys as values")
        fkey: cython.bint = kview.format == "d"
        if not n:
            return
        if self._head != self._tail and (kind != self._float or fkey != self._fkey):
            raise Untyped("values or keys of the other kind in a non-empty window")
        if kind:
            vd = view
            for j in range(n):
                x = vd[j]
                if x != x:
                    raise Untyped("ArgMin / ArgMax take no NaN (as their lift)")
        else:
            vi = view
        kd: cython.const[cython.double][:] = _NO_ROWS
        bits: cython.longlong[:] = _NO_INT_ROWS
        kc: cython.const[cython.longlong][:] = _NO_INT_ROWS
        if fkey:
            kd = kview
            bits = _column("q", n)
            for j in range(n):
                bits[j] = _bits(kd[j])
            kc = bits
        else:
            kc = kview
        if kind != self._float or fkey != self._fkey:
            self._keykind = fkey
            self._set_kind(kind)
        self._insert_rows(vd, vi, kc, _NO_INT_ROWS, False, n)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _insert_variance_array(self, view: memoryview) -> None:
        """:meth:`insert_array` for Variance: each value ``v`` as ``(1, v, 0)``."""
        n: cython.Py_ssize_t = len(view)
        j: cython.Py_ssize_t
        x: cython.double
        kind: cython.bint = view.format == "d"
        vd: cython.const[cython.double][:] = _NO_ROWS
        vi: cython.const[cython.longlong][:] = _NO_INT_ROWS
        if not n:
            return
        if self._kinded() and kind != self._window_kind():
            raise Untyped("values of the other kind in a non-empty window")
        if kind:
            vd = view
            for j in range(n):
                x = vd[j]
                if not -math.inf < x < math.inf:
                    raise Untyped("Variance takes finite values")
        else:
            vi = view
            for j in range(n):
                if not -_VARIANCE_INT <= vi[j] <= _VARIANCE_INT:
                    raise Untyped("Variance's INT kind takes ints of at most 2**25")
            vd = array("d", view)  # exact: the means are doubles
        if kind != self._window_kind():
            self._set_kind(kind)
        self._last_one = self._tail + n - 1
        self._insert_rows(vd, _NO_INT_ROWS, _NO_INT_ROWS, _NO_INT_ROWS, True, n)

    @cython.cfunc
    @cython.inline
    def _row(self, vd: cython.const[cython.double][:], vi: cython.const[cython.longlong][:],
             vc: cython.const[cython.longlong][:], ve: cython.const[cython.longlong][:], ones: cython.bint,
             j: cython.Py_ssize_t) -> Part:
        c: cython.longlong = (1 if ones else vc[j]) if self._cnt else 0
        if self._float:  # (Variance: M2's bits in i; of one value, those of 0.0)
            return Part(d=vd[j], i=(0 if ones else ve[j]) if self._var else 0, c=c)
        return Part(d=0.0, i=vi[j], c=c)

    @cython.cfunc
    def _insert_rows(self, vd: cython.const[cython.double][:], vi: cython.const[cython.longlong][:],
                     vc: cython.const[cython.longlong][:], ve: cython.const[cython.longlong][:], ones: cython.bint,
                     n: cython.Py_ssize_t) -> cython.int:
        """Insert ``n`` checked rows of the window's kind (counts or keys ``vc``, M2s ``ve``;
        or count 1 and M2 0 each when ``ones``) as AmortizedMTA.insert_many does: each run
        of quiet insertions (up to the next chunk boundary or tree merge) folded into R1 at
        once, the others one by one."""
        i: cython.Py_ssize_t = 0
        k: cython.Py_ssize_t
        t: cython.Py_ssize_t
        run: cython.Py_ssize_t
        while i < n:
            t = self._tail
            run = min(n - i, (t | self._quiet_mask) - t)  # t + 1 .. t + run are all quiet
            if run <= 1:
                self._insert(self._row(vd, vi, vc, ve, ones, i))
                i += 1
                continue
            self._put_run(vd, vi, vc, ve, ones, i, t, run)
            i += run
        return 0

    @cython.cfunc
    def _put_run(self, vd: cython.const[cython.double][:], vi: cython.const[cython.longlong][:],
                 vc: cython.const[cython.longlong][:], ve: cython.const[cython.longlong][:], ones: cython.bint,
                 i: cython.Py_ssize_t, t: cython.Py_ssize_t, run: cython.Py_ssize_t) -> cython.int:
        """Rows ``i .. i+run-1`` as leaves ``t .. t+run-1`` (as :meth:`_put_leaf` one by one)
        and R1 folded over them (as :meth:`_fold`), in one loop without a struct per row:
        Sum and Mean add each leaf to R1 in leaf order, the fold's own order."""
        k: cython.Py_ssize_t
        s: cython.Py_ssize_t
        x: cython.double
        v: cython.longlong
        c: cython.longlong = 0
        while t + run - 1 - self._head >= self._lcap:
            self._grow_leaves(t)
        cap: cython.Py_ssize_t = self._lcap
        s0: cython.Py_ssize_t = self._lslot(t)
        ld: cython.double[:] = self._ld
        acc: Part = self._r1
        adds: cython.bint = self._op == _SUM or self._op == _MEAN
        if self._float and not self._mean and adds:  # the plain case: one load, store and add a row
            x = acc.d
            for k in range(run):
                s = s0 + k
                if s >= cap:
                    s -= cap
                ld[s] = vd[i + k]
                x = x + vd[i + k]
            self._r1 = Part(d=x, i=0, c=0)
            self._tail = t + run
            return 0
        li: cython.longlong[:] = self._li
        lc: cython.longlong[:] = self._lc
        lp: cython.ulonglong[:] = self._lp
        le: cython.longlong[:] = self._le
        for k in range(run):
            s = s0 + k
            if s >= cap:
                s -= cap
            if self._cnt:
                c = 1 if ones else vc[i + k]
                lc[s] = c
            if self._var:
                le[s] = 0 if ones else ve[i + k]
            if self._float:
                x = vd[i + k]
                ld[s] = x
                if adds:
                    acc = Part(d=acc.d + x, i=0, c=acc.c + c if self._mean else 0)
            else:
                v = vi[i + k]
                li[s] = v
                if self._track:
                    lp[s] = self._ptail
                    self._ptail = _wrap64(self._ptail + _abs64(v))
                if adds:
                    acc = Part(d=0.0, i=acc.i + v, c=acc.c + c if self._mean else 0)
        self._tail = t + run
        self._r1 = acc if adds else self._fold(acc, t, t + run)
        return 0

    def push(self, timestamp: Any, partial: Any) -> int:
        """``mta.Window``'s insertion in one call: :meth:`insert`, then evict down to the
        window's MaxSize (as AmortizedMTA.enforce would); return how many were evicted."""
        self._insert(self._admit(partial))
        n: cython.Py_ssize_t = self._tail - self._head
        if 0 <= self._max_size < n:
            self._evict_checked(n - self._max_size)
            return n - self._max_size
        return 0

    @cython.cfunc
    def _complete_chunk(self, t1: cython.Py_ssize_t) -> cython.int:
        """Store the node of the chunk that ends at ``t1`` and every ancestor it completes
        (only those wholly in the window: see the module docstring)."""
        number: cython.Py_ssize_t = BITS
        j: cython.Py_ssize_t = (t1 >> BITS) - 1
        start: cython.Py_ssize_t = t1 - CHUNK_MASK - 1
        live: cython.bint = start >= self._head
        value: Part
        if live:
            q: cython.Py_ssize_t = 2 * j + 1
            if q - (self._head >> (BITS - 1)) >= self._ncap:
                self._grow_nodes(q)
            value = self._fold(self._leaf(start), start + 1, t1)
            self._store(number, j, value)
        while j & 1:
            j >>= 1
            number += 1
            if number == self._levels:
                self._levels += 1
            if live and (j << number) >= self._head:  # the parent is wholly in the window
                value = self._comb(self._stored(number - 1, 2 * j), value)
                self._store(number, j, value)
            else:
                live = False
        return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _set_root_level(self, level: cython.Py_ssize_t) -> cython.int:
        self._root_level = level
        self._merge_mask = (((cython.cast(cython.Py_ssize_t, 1) << level) - 1) << 1) | 1  # 2^(level+1) - 1
        self._quiet_mask = self._merge_mask & CHUNK_MASK
        return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _move_buffer(self) -> cython.int:
        """AmortizedMTA's flush: its leaf buffer keeps only the incomplete chunk."""
        n: cython.Py_ssize_t = (self._tail & ~CHUNK_MASK) - self._bstart
        if n > 0:
            self._bstart += n
        self.moves += 1
        return 0

    def flush(self) -> None:
        """AmortizedMTA.flush's move of the leaf buffer (its store part is the caller's)."""
        self._move_buffer()

    def layout(self) -> tuple:
        """``(head, tail, leaf-buffer start, number of levels, root level)``: where AmortizedMTA
        would have its leaves and levels (a stored window writes them in its format)."""
        return (self._head, self._tail, self._bstart, self._levels, self._root_level)

    def part(self, number: int, index: int) -> Any:
        """The partial of leaf ``index`` (``number`` 0, in the window) or of stored node
        ``(number, index)`` (``number >= CHUNK_BITS``); None for a node not wholly in the
        window (never computed here, never read by AmortizedMTA)."""
        if number == 0:
            if not self._head <= index < self._tail:
                raise IndexError(f"leaf {index} is outside [{self._head}, {self._tail})")
            return self._encode(self._leaf(index))
        if number < BITS or number >= self._levels or index < 0 or (index + 1) << number > self._tail:
            raise IndexError(f"node ({number}, {index}) is not stored")
        if index << number < self._head:
            return None
        return self._encode(self._stored(number, index))

    def leaves(self, start: int, stop: int) -> list:
        """The partials of leaves ``[start, stop)`` (in the window)."""
        if not self._head <= start <= stop <= self._tail:
            raise IndexError(f"leaves [{start}, {stop}) are outside [{self._head}, {self._tail})")
        i: cython.Py_ssize_t
        return [self._encode(self._leaf(i)) for i in range(start, stop)]

    def halves(self) -> tuple:
        """``(R0, R1)``, AmortizedMTA's result pair (the window is not empty)."""
        return (self._encode(self._r0), self._encode(self._r1))

    def start_at(self, head: int) -> None:
        """Empty, at leaf ``head``: the first step of :meth:`resume`'s reopening (then the
        window's live leaves are inserted)."""
        if head < 0:
            raise ValueError(f"a window starts at a leaf >= 0, not {head}")
        self._reset()
        self._head = self._tail = self._bstart = head
        self._moved()

    def resume(self, bstart: int, levels: int, root_level: int, r0: Any, r1: Any) -> None:
        """AmortizedMTA's ``_restore`` of a checkpoint, once :meth:`start_at` its head and the
        insertion of its live leaves have made the same leaves and the same nodes wholly in
        the window: its leaf-buffer start ``bstart``, number of ``levels``, and (a window
        not empty) its R0, R1 (``r1`` read only when the window reaches past the left
        tree) and root level, the stack stale as AmortizedMTA leaves it. Untyped if R0 or
        R1 does not fit the window's columns (the core is then to be dropped)."""
        h: cython.Py_ssize_t = self._head
        t: cython.Py_ssize_t = self._tail
        level: cython.Py_ssize_t = root_level
        p0: Part
        p1: Part = self._identity
        if not 0 <= bstart <= t or levels < self._levels or not 0 <= level < 63:
            raise ValueError("a checkpoint that does not match the window's leaves")
        if h < t:
            p0 = self._resumed(r0)
            if ((h >> level) + 1) << level < t:
                p1 = self._resumed(r1)
            self._set_root_level(level)
            self._r0, self._r1 = p0, p1
            self._stale = True
            self._sn = 0
        self._bstart = bstart
        self._levels = levels

    @cython.cfunc
    def _resumed(self, partial: object) -> Part:
        """A result partial of the window's own kind, decoded (Untyped otherwise)."""
        p: Part = self._decode(partial)
        if self._var and self._neutral:
            return p
        if (self._kind != self._window_kind() if self._var else self._kind != self._float) or \
                (self._arg and self._keykind != self._fkey):
            raise Untyped("a result partial of the other kind")
        return p

    # -- eviction (AmortizedMTA.evict) --------------------------------------------------------

    def evict(self, k: Any = 1) -> None:
        if type(k) is int and k == 1:
            self._evict_one()
            return
        self._check_evict(k)
        self._evict_checked(k)

    @cython.cfunc
    def _evict_checked(self, k: cython.Py_ssize_t) -> cython.int:
        """AmortizedMTA.evict(k) once ``0 <= k <= len`` is known."""
        i: cython.Py_ssize_t
        if k >= max(2, _bitlen(self._tail - self._head)):  # bulk (paper section 4.2.4)
            self._move_head(self._head + k)
            return 0
        if k > 1 and self.durable and not (
                (self._head + k) >> BITS == self._head >> BITS and not self._stale and self._sn >= k):
            # AmortizedMTA's _local_steps: single evictions would read its store, so it goes in bulk
            self._move_head(self._head + k)
            return 0
        for i in range(k):
            self._evict_one()
        return 0

    def _check_evict(self, k: Any) -> None:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"evict count must be an int, got {type(k).__name__}")
        if k < 0 or k > self._tail - self._head:
            raise ValueError(f"cannot evict {k} elements from a window of {self._tail - self._head}")

    @cython.cfunc
    def _evict_one(self) -> cython.int:
        h1: cython.Py_ssize_t = self._head + 1
        if self._sn and not self._stale:
            # Algorithm 6: the stack top is the left tree without its head leaf.
            self._sn -= 1
            self._r0 = self._top_at(self._sn)
            self._head = h1
            self._moved()
            if not h1 & CHUNK_MASK:
                self._enter_chunk(h1)
            return 0
        if self._tail > self._head:
            self._move_head(h1)  # a stale or empty stack: rebuilt for the new head
            return 0
        self._check_evict(1)
        return 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _top_at(self, n: cython.Py_ssize_t) -> Part:
        c: cython.longlong = 0
        m: cython.longlong = 0
        if self._cnt:
            c = self._sc[n]
            if self._var:  # M2's bits in i
                m = self._se[n]
        if self._float:
            return Part(d=self._sd[n], i=m, c=c)
        return Part(d=0.0, i=self._si[n], c=c)

    @cython.cfunc
    @cython.cdivision(True)
    @cython.exceptval(check=False)
    def _moved(self) -> cython.int:
        """After ``head`` moved forward by at most a ring's size: keep each ring's base at
        most one turn behind its lowest live index (so one wrap maps an index to a slot)."""
        d: cython.Py_ssize_t = self._head - self._lbase
        if d >= self._lcap:
            self._lbase += d - d % self._lcap
        d = (self._head >> (BITS - 1)) - self._nbase
        if d >= self._ncap:
            self._nbase += d - d % self._ncap
        return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _enter_chunk(self, h1: cython.Py_ssize_t) -> cython.int:
        """Algorithm 7 once the head enters a new chunk: push the right siblings of the
        levels that now start a new pair, highest first, then the chunk's leaf suffixes."""
        c: cython.Py_ssize_t = (h1 >> BITS) - 1  # the chunk just left
        number: cython.Py_ssize_t
        for number in range(BITS + _bitlen(c ^ (c + 1)) - 2, BITS - 1, -1):
            self._push_on(self._stored(number, (h1 >> number) + 1), ((h1 >> number) + 1) << number)
        self._push_suffixes(h1)
        return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _push_suffixes(self, h: cython.Py_ssize_t) -> Part:
        """Push agg[i, B) for the leaves i after ``h`` in its chunk, last leaf first; return leaf ``h``."""
        end: cython.Py_ssize_t = min(((h >> BITS) + 1) << BITS,
                                     ((h >> self._root_level) + 1) << self._root_level)
        i: cython.Py_ssize_t
        for i in range(end - 1, h, -1):
            self._push_on(self._leaf(i), i)
        return self._leaf(h)

    @cython.cfunc
    @cython.exceptval(check=False)
    def _rebuild(self) -> cython.int:
        """Recompute the stack and R0 for the left tree (Algorithm 4), O(log n)."""
        h: cython.Py_ssize_t = self._head
        number: cython.Py_ssize_t
        leaf: Part
        self._stale = False
        self._sn = 0
        for number in range(self._root_level - 1, BITS - 1, -1):
            if not (h >> number) & 1:
                self._push_on(self._stored(number, (h >> number) + 1), ((h >> number) + 1) << number)
        leaf = self._push_suffixes(h)
        self._r0 = self._comb(leaf, self._top()) if self._sn else leaf
        return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _right_result(self) -> Part:
        """R1 = the roots after the left tree, left to right (Algorithm 5), O(log n)."""
        t: cython.Py_ssize_t = self._tail
        r1: Part = self._identity
        number: cython.Py_ssize_t
        for number in range(self._root_level - 1, -1, -1):
            if (t >> number) & 1:
                r1 = self._comb(r1, self._node(number, (t >> number) - 1))
        return r1

    @cython.cfunc
    @cython.exceptval(check=False)
    def _move_head(self, h: cython.Py_ssize_t) -> cython.int:
        """Bulk eviction: jump ``head`` to ``h`` in O(log n) whatever the distance."""
        t: cython.Py_ssize_t = self._tail
        old: cython.Py_ssize_t = self._head
        level: cython.Py_ssize_t
        middle: cython.Py_ssize_t
        i: cython.Py_ssize_t
        top: Part
        self._head = h
        self._moved()
        if h >= self._bstart and 0 < t - h <= CHUNK_MASK + 1:
            # A window of at most one chunk, all in AmortizedMTA's leaf buffer: the stack is
            # all leaf suffixes, and stack, R0 and R1 come straight from the leaves.
            level = _bitlen(h ^ t) - 1
            self._set_root_level(level)
            middle = ((h >> level) + 1) << level  # B, where R1 starts
            self._stale = False
            self._sn = 0
            if middle - h == 1:
                self._r0 = self._leaf(h)
            else:
                top = self._leaf(middle - 1)
                self._push(top, middle - 1)
                for i in range(middle - 2, h, -1):
                    top = self._comb(self._leaf(i), top)
                    self._push(top, i)
                self._r0 = self._comb(self._leaf(h), top)
            self._r1 = self._fold(self._leaf(middle), middle + 1, t) if middle < t else self._identity
        elif h == t:
            self._r0 = self._r1 = self._identity
            self._stale = False
            self._sn = 0
            self._root_level = self._merge_mask = self._quiet_mask = 0
        else:
            boundary: cython.Py_ssize_t = ((old >> self._root_level) + 1) << self._root_level
            level = _bitlen(h ^ t) - 1
            same_tree: cython.bint = level == self._root_level and h >> level == old >> level
            self._set_root_level(level)
            if h == boundary and ((h >> level) + 1) << level == t:
                # The head moved onto the last tree, which R1 holds whole: the stack can wait.
                self._r0 = self._r1
                self._r1 = self._identity
                self._stale = True
                self._sn = 0
            else:
                self._rebuild()
                if not same_tree:
                    self._r1 = self._right_result()
        return 0

    # -- results and state --------------------------------------------------------------------

    @cython.cfunc
    def _total(self) -> Part:
        """The window's aggregate (not empty)."""
        level: cython.Py_ssize_t = self._root_level
        if self.timed and ((self._head >> level) + 1) << level >= self._tail:
            # R1 = agg[B, tail) is empty: the timed monoid's combine(R0, identity) is R0 itself
            return self._r0
        return self._comb(self._r0, self._r1)

    def query(self) -> Any:
        if self._head == self._tail:
            return self.monoid.identity
        return self._encode(self._total())

    def result(self) -> Any:
        """``monoid.lower(query())``: the window's result."""
        if self._head == self._tail:
            return None if self._cnt or self._op == _FIRST or self._op == _LAST else self.monoid.identity
        p: Part = self._total()
        if self._var:  # Variance.lower: M2 / (count - ddof) (count 1: the int 0 over an int, 0.0)
            if p.c <= self._ddof:
                return None
            if self._sqrt:
                return math.sqrt(_double(p.i) / cython.cast(cython.double, p.c - self._ddof))
            return _double(p.i) / cython.cast(cython.double, p.c - self._ddof)
        if self._arg:  # _Arg.lower: (key, value)
            return (_double(p.c) if self._fkey else p.c, p.d if self._float else p.i)
        if not self._mean:
            return self._encode(p)
        if not p.c:
            return None
        if self._op != _MEAN:  # MinCount / MaxCount: the partial itself
            return self._encode(p)
        if self._float:
            return p.d / cython.cast(cython.double, p.c)
        if -_EXACT <= p.i <= _EXACT:  # both exact as doubles: one rounding, as Python's int / int
            return cython.cast(cython.double, p.i) / cython.cast(cython.double, p.c)
        total: object = p.i  # Python's int / int, correctly rounded (a C division would round twice)
        return total / p.c

    def oldest(self) -> Any:
        """The oldest partial (the window is not empty)."""
        return self._encode(self._leaf(self._head))

    def __len__(self) -> int:
        return self._tail - self._head

    def __iter__(self) -> Iterator[Any]:
        """The leaf partials, oldest to newest."""
        return iter([self._encode(self._leaf(i)) for i in range(self._head, self._tail)])

    def clear(self) -> None:
        self._reset()

    def begin_hold(self) -> None:
        self.hold = True
        self._held_head = self._head

    def end_hold(self) -> bool:
        """Leave hold; AmortizedMTA's deferred flush of its leaf buffer, if one came due.
        Return False: nothing here ever needs a commit."""
        self.hold = False
        if self._flush_due:
            self._flush_due = False
            self._move_buffer()
        return False

    def snapshot(self) -> Any:
        """The whole state, columns copied (O(window)), for :meth:`restore`."""
        return (self._state(), self._lvals[:], self._lcnts[:], self._lpres[:], self._nvals[:],
                self._ncnts[:], self._svals[:], self._scnts[:], self._sxs[:], self._lm2s[:], self._nm2s[:],
                self._sm2s[:])

    def restore(self, snapshot: Any) -> None:
        """Go back to a :meth:`snapshot` (restored at most once: its columns become the state)."""
        (state, self._lvals, self._lcnts, self._lpres, self._nvals, self._ncnts, self._svals, self._scnts,
         self._sxs, self._lm2s, self._nm2s, self._sm2s) = snapshot
        if type(state[6]) is tuple:  # unpickled: values as plain tuples (__reduce__)
            state = list(state)
            for index in (3, 6, 7):
                d, i, c = state[index]
                state[index] = Part(d=d, i=i, c=c)
        (self.hold, self._float, self._track, self._identity, self._head, self._tail, self._r0, self._r1,
         self._root_level, self._merge_mask, self._quiet_mask, self._stale, self._sn, self._levels,
         self._bstart, self._flush_due, self._held_head, self._lcap, self._lbase, self._ptail,
         self._ncap, self._nbase, self._ivar, self._fkey, self._last_one) = state
        self._bind()

    def _state(self) -> tuple:
        return (self.hold, self._float, self._track, self._identity, self._head, self._tail, self._r0, self._r1,
                self._root_level, self._merge_mask, self._quiet_mask, self._stale, self._sn, self._levels,
                self._bstart, self._flush_due, self._held_head, self._lcap, self._lbase, self._ptail,
                self._ncap, self._nbase, self._ivar, self._fkey, self._last_one)

    def __reduce__(self) -> tuple:
        # copy.deepcopy and pickle (the Stream engine copies windows); its values as plain
        # tuples, which both paths read (a struct pickles as a dict, a namespace as itself)
        snapshot = self.snapshot()
        state = list(snapshot[0])
        for index in (3, 6, 7):  # _identity, _r0, _r1
            state[index] = _plain(state[index])
        return (_restored, (type(self), (self.monoid, None if self._max_size < 0 else self._max_size),
                            (tuple(state), *snapshot[1:])))

    def to_object(self, monoid: Monoid | None = None, wrap: Any = None, store: Any = None) -> AmortizedMTA:
        """An in-memory AmortizedMTA in this window's state: same leaves, stored nodes, R0,
        R1, stack (or stale stack), masks, leaf-buffer start, flush due and hold, so that
        everything it computes from here is what it would have computed all along.

        Nodes and leaves it keeps but never reads again (evicted ones, and nodes that
        straddle ``head``) are filled with the identity. ``store``: the level store it writes
        its levels to (cleared first; default a new one in memory). ``monoid`` and ``wrap`` build it
        over another monoid whose partials wrap ours (``mta.algorithms.typed.TypedTimed``'s):
        a partial of leaves ``[x, y)`` becomes ``wrap(x - head, y - 1 - head, partial)``."""
        h, t = self._head, self._tail
        obj = AmortizedMTA(monoid if monoid is not None else self.monoid, store)
        filler = obj.monoid.identity
        wrap = wrap if wrap is not None else _bare

        def wrapped(x: int, y: int, p: Any) -> Any:
            return wrap(x - h, y - 1 - h, self._encode(p))

        def leaf(i: int) -> Any:
            return wrapped(i, i + 1, self._leaf(i))

        store = obj.store
        while len(obj._bufs) < self._levels:
            obj._add_level()
        split = self._bstart
        level = store.level(0)
        if h < split:
            level.reset(h)
            level.extend([leaf(i) for i in range(h, split)])
            leaves = [leaf(i) for i in range(split, t)]
        else:
            level.reset(split)
            leaves = [filler] * (h - split) + [leaf(i) for i in range(h, t)]
        obj._bufs[0] = obj._leaves = leaves
        obj._bstart[0] = split
        for number in range(BITS, self._levels):
            # from the pair that holds head's node, so that the next right child finds its sibling
            first = (h >> number) & ~1
            nodes = [wrapped(j << number, (j + 1) << number, self._stored(number, j)) if j << number >= h else filler
                     for j in range(first, t >> number)]
            store.level(number).reset(first)
            obj._bufs[number] = nodes
            obj._bstart[number] = first
        obj._cstart = list(obj._bstart)
        obj._caches = [[] for _ in obj._bufs]
        obj._head, obj._tail = h, t
        obj._root_level, obj._merge_mask, obj._quiet_mask = self._root_level, self._merge_mask, self._quiet_mask
        if h < t:
            middle = ((h >> self._root_level) + 1) << self._root_level  # B: R0 = agg[h, B), R1 = agg[B, t)
            obj._r0 = wrapped(h, middle, self._r0)
            obj._r1 = wrapped(middle, t, self._r1) if middle < t else filler
            obj._stack = None if self._stale else [wrapped(self._sx[i], middle, self._top_at(i))
                                                   for i in range(self._sn)]
        obj._flush_due = self._flush_due
        obj.hold = self.hold
        obj._held_head = self._held_head
        return obj
