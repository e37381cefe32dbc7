"""Typed multi-query aggregators (issue 20): twins of SlideSide and SlickDeque over C columns.

The twins of the multi-query aggregators (:mod:`mta.algorithms.multi_query`) that carry
the load of ``benchmarks.multi_query`` (the SlideSide paper's Fig. 3), for the built-in
numeric monoids (:func:`mta.algorithms.typed.wide_op_of`), each where the object
aggregator's own rule (invertible, selection) sends it:

- :class:`TypedSlideSide`: :class:`~mta.algorithms.slideside.InvertibleSlideSide`, for
  ``Sum``/``Count``, ``Mean`` and ``Variance``/``StdDev`` (what ``SlideSide`` picks for
  an invertible monoid);
- :class:`TypedOverlaidSlideSide`: :class:`~mta.algorithms.slideside.OverlaidSlideSide`,
  for ``Min``, ``Max``, ``MinCount``, ``MaxCount``, ``First``, ``Last``, ``ArgMin`` and
  ``ArgMax`` (what ``SlideSide`` picks for them), and for ``Sum``/``Count``, ``Mean`` and
  ``Variance``/``StdDev`` where ``SlideSide`` is built with ``inverse=False`` or as fields
  of a Record mixing them with the others;
- :class:`TypedSlickDeque`: :class:`~mta.algorithms.slickdeque.SlickDequeNonInv`
  (Alg. 3), for the selections ``Min``, ``Max``, ``First``, ``Last``, ``ArgMin``, ``ArgMax``;
- :class:`TypedSlickDequeInv`: :class:`~mta.algorithms.slickdeque.SlickDequeInv`
  (Alg. 2), for ``Sum``/``Count``, ``Mean`` and ``Variance``/``StdDev``.

``MinCount``/``MaxCount``, First/Last and ArgMin/ArgMax rows are :data:`Part` (value, and
a count, a key or an identity mark), Variance rows :data:`Var` (count, mean, M2 and flags
for the ints the object's partial holds), combined (and inverted) by C functions that
follow the monoid's Python in its order of operations. The other typed cores have the
same functions (``typed._combined_rows``, ``typed_amta._chan``): compiled modules share
no C functions without ``.pxd`` files, so each holds its own copy.

:class:`TypedRecordSlideSide` and :class:`TypedRecordSlickDeque` serve a
:class:`~mta.monoid.Record` of ``Sum``/``Count``, ``Mean`` and ``Variance``/``StdDev``
fields (invertible: the object aggregators' Alg. 2 and InvertibleSlideSide), one field twin
per field in lockstep. A Record with another field is not invertible, nor ever a
selection: ``SlideSide`` gives it the OverlaidSlideSide, whose scans combine the older
operand first and never invert, and :class:`TypedRecordOverlaidSlideSide` serves it
when every field has a :class:`TypedOverlaidSlideSide` (Min, Max, MinCount, MaxCount,
First, Last, ArgMin, ArgMax, and Sum/Count, Mean, Variance/StdDev, which that twin serves
too: the common "stats" Record of Count, Sum, Min and First); SlickDeque refuses it.
(The Record's fold between levels, a left fold of fewer than four, picks what the
fields' folds pick: the oldest of equal Min values, the left fold's sums.)

:func:`twin` names the twin of a ``MULTI_QUERY`` entry for a monoid (None: there is none);
``mta.algorithms.multi_query_aggregator`` builds it when the typed cores are in use.

As in :mod:`mta.algorithms.typed`, an aggregator holds one *kind* of value, chosen by the
first partial after construction or :meth:`clear`: ``FLOAT`` (C doubles) or ``INT`` (C
int64, with the INT bound: for ``SUM`` and ``MEAN`` the sum of ``|v|`` over the held
partials stays <= 2**63 - 1, and every sum these algorithms compute is one of held
partials, so none overflows). Every combine and invert happens in the object
algorithm's order on the same operands, so results are the object algorithm's, ints
exact and floats bit for bit. Min's identity ``+inf`` (Max's ``-inf``), which the shared
final inserts for an empty stretch, is held in INT columns too, as the int64 at that end.
Every monoid's identity (the shared final's empty partial) is held too, and a window of
identities only takes either kind. A partial it cannot hold (another type, the other kind,
an int beyond int64, a count outside ``0 .. 2**32 - 1``, a sum beyond the INT bound, for
Min/Max/MinCount/MaxCount the int64 that stands for the identity, NaN where the monoid
compares it, another kind of ArgMin key, a Variance int beyond 2**25) makes :meth:`insert`
raise :class:`~mta.algorithms.typed.Untyped` before anything
changes; :meth:`to_object` then gives the object aggregator in the same state, which
takes it (the caller demotes, as ``mta.stream.shared`` does).

Cython in pure-Python mode: compiled, the aggregators are extension types over typed
memoryviews; interpreted, the same code runs (slowly) on ``array.array`` columns.
"""

from __future__ import annotations

import struct
from array import array
from types import SimpleNamespace
from typing import Any, Sequence

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.algorithms.multi_query import MultiQueryAggregator, check_ranges
from mta.algorithms.slickdeque import SlickDequeInv, SlickDequeNonInv
from mta.algorithms.slideside import InvertibleSlideSide, OverlaidSlideSide
from mta.algorithms.typed import (ARGMAX, ARGMIN, FIRST, FLOAT, INT, LAST, MAX, MAXCOUNT, MEAN, MIN, MINCOUNT, SUM,
                                  VARIANCE, Untyped, wide_op_of)
from mta.monoid import Count, Monoid, Record

COMPILED: bool = cython.compiled

__all__ = ["TypedSlideSide", "TypedOverlaidSlideSide", "TypedSlickDeque", "TypedSlickDequeInv", "TypedRecordSlideSide",
           "TypedRecordSlickDeque", "TypedRecordOverlaidSlideSide", "Untyped", "twin"]

_SUM = cython.declare(cython.int, SUM)
_MIN = cython.declare(cython.int, MIN)
_MAX = cython.declare(cython.int, MAX)
_MEAN = cython.declare(cython.int, MEAN)
_MINCOUNT = cython.declare(cython.int, MINCOUNT)
_MAXCOUNT = cython.declare(cython.int, MAXCOUNT)
_FIRST = cython.declare(cython.int, FIRST)
_LAST = cython.declare(cython.int, LAST)
_ARGMIN = cython.declare(cython.int, ARGMIN)
_ARGMAX = cython.declare(cython.int, ARGMAX)
_VARIANCE = cython.declare(cython.int, VARIANCE)
_FLOAT = cython.declare(cython.int, FLOAT)
_INT = cython.declare(cython.int, INT)
#: what _scalar returns for Min's or Max's identity bound for the INT columns (see _TypedMQ)
_IDENT = cython.declare(cython.int, 2)

_I64_MIN = -(2 ** 63)
_I64_MAX = 2 ** 63 - 1
#: The INT bound: the sum of |v| over the held partials (SUM, MEAN).
_LIMIT = cython.declare(cython.ulonglong, 2 ** 63 - 1)
_COUNT_LIMIT = 2 ** 32
_INF = cython.declare(cython.double, float("inf"))


def _doubles(n: cython.Py_ssize_t) -> array:
    return array("d", bytes(8 * n))


def _int64s(n: cython.Py_ssize_t) -> array:
    return array("q", bytes(8 * n))


@cython.cfunc
@cython.inline
def _abs64(v: cython.longlong) -> cython.ulonglong:
    """|v| (exact for -2**63 too, as unsigned)."""
    u: cython.ulonglong = cython.cast(cython.ulonglong, v)
    return 0 - u if v < 0 else u


_Number = cython.fused_type(cython.double, cython.longlong)


@cython.cfunc
@cython.inline
def _comb(op: cython.int, a: _Number, b: _Number) -> _Number:
    """Min's or Max's ``combine(a, b)``: ties keep the left operand."""
    if op == _MIN:
        return a if a <= b else b
    return a if a >= b else b


#: A row of the wide ops (MINCOUNT, MAXCOUNT, FIRST, LAST, ARGMIN, ARGMAX): the value in
#: ``d`` (FLOAT kind) or ``i`` (INT kind); ``c`` a MinCount / MaxCount count, an ArgMin /
#: ArgMax key (an int64, or a float key's bits), or -1 for First's and Last's identity.
#: ArgMin's and ArgMax's identity (None) has 1 in both ``d`` and ``i``, every other row 0
#: in the one its kind leaves unused; MinCount's (MaxCount's) ``(inf, 0)`` has ``inf``
#: in ``d`` and the int64 at that end in ``i`` (as Min's). So an identity row is right for
#: either kind, and a window of identities only takes either.
Part = cython.struct(d=cython.double, i=cython.longlong, c=cython.longlong)
if not cython.compiled:  # Cython's own pure-mode struct checks every field of every value: 100x slower
    globals()["Part"] = SimpleNamespace

_Bits = cython.union(d=cython.double, i=cython.longlong)
_DOUBLE_BYTES, _INT64_BYTES = struct.Struct("<d").pack, struct.Struct("<q").pack
_DOUBLE_OF_INT64, _INT64_OF_DOUBLE = struct.Struct("<d").unpack, struct.Struct("<q").unpack


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _bits(x: cython.double) -> cython.longlong:
    """The bits of a double as an int64 (a float key in the ``c`` column)."""
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


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _part_at(d: cython.double[:], i: cython.longlong[:], c: cython.longlong[:], k: cython.Py_ssize_t) -> Part:
    """Row ``k`` of wide-op columns: values ``d`` / ``i``, and ``c``."""
    return Part(d=d[k], i=i[k], c=c[k])


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _part_put(d: cython.double[:], i: cython.longlong[:], c: cython.longlong[:], k: cython.Py_ssize_t,
              p: Part) -> cython.void:
    """Row ``k`` of wide-op columns (see :func:`_part_at`) = ``p``."""
    d[k], i[k], c[k] = p.d, p.i, p.c


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _empty(fl: cython.bint, p: Part) -> cython.bint:
    """Whether an ArgMin / ArgMax row is the identity (see :data:`Part`)."""
    return p.i != 0 if fl else p.d != 0.0


@cython.cfunc
@cython.exceptval(check=False)
def _wcomb(op: cython.int, fl: cython.bint, a: Part, b: Part) -> Part:
    """``combine(a, b)`` of a wide op's rows of kind FLOAT (``fl``) or INT, as the monoid's:
    ``_first``, ``_last``, ``_mincount`` (the smaller value wins, equal ones add their counts,
    keeping the left value), ``_argmin`` (ties keep the left); Sum's and Mean's rows of
    :class:`TypedOverlaidSlideSide` add (``a + b``; in a FLOAT row ``i`` says the sum is a
    float, 0 the int 0)."""
    if op == _FIRST:
        return b if a.c < 0 else a
    if op == _LAST:
        return a if b.c < 0 else b
    if op == _MINCOUNT:
        if (a.d < b.d) if fl else (a.i < b.i):
            return a
        if (b.d < a.d) if fl else (b.i < a.i):
            return b
        return Part(d=a.d, i=a.i, c=a.c + b.c)
    if op == _MAXCOUNT:
        if (a.d > b.d) if fl else (a.i > b.i):
            return a
        if (b.d > a.d) if fl else (b.i > a.i):
            return b
        return Part(d=a.d, i=a.i, c=a.c + b.c)
    if op == _SUM or op == _MEAN:
        if fl:
            return Part(d=a.d + b.d, i=a.i | b.i, c=a.c + b.c)
        return Part(d=0.0, i=a.i + b.i, c=a.c + b.c)
    if _empty(fl, a):
        return b
    if _empty(fl, b):
        return a
    if op == _ARGMIN:
        if (a.d <= b.d) if fl else (a.i <= b.i):
            return a
        return b
    if (a.d >= b.d) if fl else (a.i >= b.i):
        return a
    return b


#: A Variance / StdDev row ``(count, mean, M2)``: ``c``, ``d``, ``m``, and in ``f`` the flags
#: of what the object partial holds as an int: the mean (``_MEAN_INT``: a count-1 partial of an
#: int of at most 2**25, as lifted) and M2 (``_M2_INT``: the int 0 of a lifted partial, of
#: ``invert``'s one-value rest and of its rounding clamp). Python's arithmetic turns those ints
#: into the same doubles (exactly), so the flags change the partials' types only.
Var = cython.struct(c=cython.longlong, d=cython.double, m=cython.double, f=cython.longlong)
if not cython.compiled:
    globals()["Var"] = SimpleNamespace
_MEAN_INT = cython.declare(cython.longlong, 1)
_M2_INT = cython.declare(cython.longlong, 2)
#: Variance takes int means up to this magnitude: the merge of two in doubles is Python's of
#: the ints, bit for bit (a difference squared is below 2**53).
_VARIANCE_INT = 2 ** 25


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _var_at(d: cython.double[:], m: cython.double[:], c: cython.longlong[:], f: cython.longlong[:],
            k: cython.Py_ssize_t) -> Var:
    """Row ``k`` of Variance columns: means ``d``, M2 ``m``, counts ``c``, flags ``f``."""
    return Var(c=c[k], d=d[k], m=m[k], f=f[k])


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _var_put(d: cython.double[:], m: cython.double[:], c: cython.longlong[:], f: cython.longlong[:],
             k: cython.Py_ssize_t, v: Var) -> cython.void:
    """Row ``k`` of Variance columns (see :func:`_var_at`) = ``v``."""
    d[k], m[k], c[k], f[k] = v.d, v.m, v.c, v.f


@cython.cfunc
@cython.cdivision(True)
@cython.exceptval(check=False)
def _chan(a: Var, b: Var) -> Var:
    """``mta.monoid._chan``, in its order of operations (counts below 2**53 are exact doubles)."""
    if a.c == 0:
        return b
    if b.c == 0:
        return a
    n: cython.longlong = a.c + b.c
    na: cython.double = a.c
    nb: cython.double = b.c
    nn: cython.double = n
    delta: cython.double = b.d - a.d
    return Var(c=n, d=a.d + (delta * nb) / nn, m=(a.m + b.m) + (((delta * delta) * na) * nb) / nn, f=0)


@cython.cfunc
@cython.cdivision(True)
@cython.exceptval(check=False)
def _var_invert(t: Var, front: Var) -> Var:
    """``Variance.invert(t, front)``, in its order of operations: the rest after ``front``
    (the identity when nothing is left, ``t`` when ``front`` is empty)."""
    nb: cython.longlong = t.c - front.c
    if nb <= 0:
        return Var(c=0, d=0.0, m=0.0, f=0)
    if front.c == 0:
        return t
    na: cython.double = front.c
    nn: cython.double = t.c
    mb: cython.double = front.d + ((t.d - front.d) * nn) / cython.cast(cython.double, nb)
    delta: cython.double = mb - front.d
    if nb == 1:
        return Var(c=1, d=mb, m=0.0, f=_M2_INT)
    m2b: cython.double = (t.m - front.m) - (((delta * delta) * na) * cython.cast(cython.double, nb)) / nn
    if m2b < 0:
        return Var(c=nb, d=mb, m=0.0, f=_M2_INT)
    return Var(c=nb, d=mb, m=m2b, f=0)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _same(fl: cython.bint, a: Part, b: Part) -> cython.bint:
    """Whether two rows of one kind are the same partial: value and ``c`` bit for bit."""
    return a.c == b.c and (_bits(a.d) == _bits(b.d) if fl else a.i == b.i)


@cython.cfunc
@cython.exceptval(check=False)
def _wpops(op: cython.int, fl: cython.bint, back: Part, x: Part) -> cython.bint:
    """Alg. 3's domination test for FIRST / LAST / ARGMIN / ARGMAX rows, as the object's
    (:meth:`~mta.algorithms.slickdeque.SlickDequeNonInv.insert`): whether ``combine(back, x)``
    (:func:`_wcomb`) selects ``x``, or selects ``back`` that is ``x`` bit for bit (then which
    one answers is not seen, and the deque stays short; an equal row of another sign or key
    stays)."""
    if op == _FIRST:
        return back.c < 0 or (x.c >= 0 and _same(fl, back, x))
    if op == _LAST:
        return x.c >= 0 or back.c < 0  # an identity ``x`` selects ``back``: the same if empty too
    if _empty(fl, back):
        return True
    if _empty(fl, x):
        return False
    if op == _ARGMIN:
        if not ((back.d <= x.d) if fl else (back.i <= x.i)):
            return True
    elif not ((back.d >= x.d) if fl else (back.i >= x.i)):
        return True
    return _same(fl, back, x)


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _TypedMQ:
    """What the twins share: monoid, ranges and capacity as the object aggregator has them,
    the number held (``len``), ``clear`` (the twin's columns by :meth:`_reset`), the first
    steps of an insert (:meth:`_take`: decode, kind, INT bound), Python partials."""

    monoid = cython.declare(object, visibility="public")
    ranges = cython.declare(tuple, visibility="public")
    capacity = cython.declare(cython.Py_ssize_t, visibility="public")
    _op: cython.int
    _kind: cython.int
    _n: cython.Py_ssize_t  # partials held, <= capacity
    _zero_float: cython.bint  # SUM, MEAN: a sum that is the int 0 goes to FLOAT columns as 0.0 (_sum_kind)
    _magnitude: cython.ulonglong  # INT kind, SUM and MEAN: sum of |v| over the held partials
    # MIN/MAX: the identity (+inf for Min, -inf for Max), held in INT columns as the int64 at
    # the same end (``_sentinel``: an int partial equal to it is refused), which orders
    # against every other int64 as the infinity does, so that the partials the shared final
    # inserts for empty stretches (the identity) leave an int window typed; ``_undecided``:
    # nothing but identities since clear (in the INT columns; the first float converts them)
    _undecided: cython.bint
    _sentinel: cython.longlong
    _ident: cython.double
    # scratch of _scalar: the decoded partial
    _xd: cython.double
    _xi: cython.longlong
    _xc: cython.longlong
    _xu: cython.ulonglong
    _xzero: cython.bint  # _sum_kind: the sum is the int 0
    # the wide ops (MINCOUNT, MAXCOUNT, FIRST, LAST, ARGMIN, ARGMAX): rows are Parts, in the
    # ``*c`` columns too;
    # ``_kind2``: ArgMin / ArgMax, the keys' kind (-1: none yet, chosen with the values' kind)
    _wide: cython.bint
    _kind2: cython.int
    _xk2: cython.int
    _xm: cython.double  # VARIANCE: M2 (its flags in _xi)

    def __init__(self, monoid: Monoid, ranges: Sequence[int], ops: tuple) -> None:
        op = wide_op_of(monoid)
        if op is None or op not in ops:
            raise TypeError(f"{type(self).__name__} does not serve {type(monoid).__name__}")
        self.monoid = monoid
        self.ranges = check_ranges(ranges)
        self.capacity = max(self.ranges)
        self._op = op
        self._kind = _FLOAT
        self._magnitude = 0
        self._xd = 0.0
        self._xi = self._xc = self._xu = 0
        self._undecided = True
        low: cython.bint = op == _MIN or op == _MINCOUNT
        self._sentinel = _I64_MAX if low else _I64_MIN
        self._ident = float("inf") if low else float("-inf")
        self._wide = op >= _MINCOUNT
        self._kind2 = self._xk2 = -1
        self._n = 0
        self._zero_float = False

    def clear(self) -> None:
        self._n = 0
        self._magnitude = 0
        self._undecided = True
        self._kind = _FLOAT
        self._kind2 = -1
        self._reset()

    @cython.cfunc
    def _reset(self) -> cython.void:
        """Empty the twin's own columns and positions (``clear``)."""

    def __len__(self) -> int:
        return self._n

    @cython.ccall
    def fits(self, partial: object) -> cython.bint:
        """Whether :meth:`insert` takes ``partial``, nothing changed either way (a Record twin
        checks every field before any inserts): :meth:`_take`, its state put back. The
        columns :meth:`_identities_to_float` may fill are unread while the kind stays INT."""
        kind: cython.int = self._kind
        kind2: cython.int = self._kind2
        undecided: cython.bint = self._undecided
        magnitude: cython.ulonglong = self._magnitude
        try:
            self._take(partial, self._outgoing())
        except Untyped:
            return False
        finally:
            self._kind, self._kind2, self._undecided, self._magnitude = kind, kind2, undecided, magnitude
        return True

    @cython.cfunc
    def _outgoing(self) -> cython.longlong:
        """The INT slot the next insert overwrites (:meth:`_take`'s ``old``)."""
        return 0

    @cython.cfunc
    @cython.final  # a direct call (not through the vtable)
    def _take(self, partial: object, old: cython.longlong) -> cython.int:
        """The first steps of an insert: decode ``partial`` and return the kind of the columns
        it goes to (the twin's kind from now on); :class:`Untyped`, nothing changed, if it does
        not fit. ``old``: the INT slot the partial overwrites once the twin is full (SUM, MEAN:
        its magnitude leaves the INT bound's sum)."""
        if self._op == _MIN or self._op == _MAX:
            return self._selection_kind(partial)
        if self._op == _VARIANCE:
            self._scalar_var(partial)
            return _FLOAT
        if self._wide:
            return self._wide_kind(partial)
        kind: cython.int
        if self._zero_float:
            kind = self._sum_kind(partial)
        else:
            kind = self._scalar(partial, self._kind if self._n else -1)
        if kind == _INT:
            self._bounded(partial, _abs64(old) if self._n == self.capacity else 0)
        self._kind = kind
        return kind

    @cython.cfunc
    @cython.final  # a direct call (not through the vtable)
    def _sum_kind(self, partial: object) -> cython.int:
        """SUM and MEAN: decode ``partial`` and return the kind of the columns it goes to, a
        sum that is the int 0 going to FLOAT ones as 0.0 when the twin holds floats, a float
        to FLOAT ones when the twin holds int zero sums only (their columns, both zero since
        clear, agree). A float less or plus the int 0 is the float less or plus 0.0, bit for
        bit, so the object's answers are the same."""
        k: cython.int = self._scalar(partial, -1)
        self._xzero = k == _INT and self._xi == 0
        if self._xzero:
            self._xd = 0.0
            return _FLOAT if self._n and self._kind == _FLOAT else _INT
        if self._undecided and k == _FLOAT:
            if self._n and self._kind == _INT:
                self._identities_to_float()
            self._undecided = False
            return k
        if self._n and k != self._kind:
            raise Untyped(partial)
        self._undecided = False
        return k

    @cython.cfunc
    def _scalar(self, p: object, kind: cython.int) -> cython.int:
        """Decode partial ``p`` into ``_xd``/``_xi``/``_xc`` (and ``_xu``: |v| where the INT
        bound counts it) and return its kind; :class:`Untyped` if it does not fit a window
        of ``kind`` (-1: any)."""
        v: cython.longlong
        if self._op == _MEAN:
            if type(p) is not tuple or len(p) != 2:
                raise Untyped(p)
            count = p[1]
            if type(count) is not int or not 0 <= count < _COUNT_LIMIT:
                raise Untyped(p)
            self._xc = count
            p = p[0]
        selection: cython.bint = self._op == _MIN or self._op == _MAX
        if type(p) is float:
            if selection and kind != _FLOAT and p == self._ident:
                self._xd = p
                self._xi = self._sentinel
                self._xu = 0
                return _IDENT
            if kind == _INT:
                raise Untyped(p)
            self._xd = p
            self._xu = 0
            return _FLOAT
        if type(p) is not int or kind == _FLOAT or not _I64_MIN <= p <= _I64_MAX:
            raise Untyped(p)
        v = p
        if selection and v == self._sentinel:
            raise Untyped(p)
        self._xi = v
        self._xu = _abs64(v) if self._op == _SUM or self._op == _MEAN else 0
        return _INT

    @cython.cfunc
    def _selection_kind(self, partial: object) -> cython.int:
        """MIN/MAX twins: decode ``partial`` and return the kind of the columns it goes to
        (the identity goes to INT columns unless the twin holds floats); the first value
        that is not the identity decides the kind, a float converting the identities held."""
        k: cython.int = self._scalar(partial, -1 if self._undecided else self._kind)
        if k == _IDENT:
            if self._undecided:
                self._kind = _INT
            return _INT
        if self._undecided:
            if k == _FLOAT and self._kind == _INT:
                self._identities_to_float()
            self._kind = k
            self._undecided = False
        return k

    @cython.cfunc
    def _scalar_var(self, p: object) -> cython.void:
        """Decode a Variance / StdDev partial into ``_xc``/``_xd``/``_xm`` and its flags in
        ``_xi`` (see :data:`Var`): the identity ``(0, 0.0, 0.0)``; ``(1, v, 0)``, v a finite
        float or an int of at most 2**25; ``(n, mean, M2)``, n in [2, 2**32), a finite float
        mean and M2 a finite float or the int 0. :class:`Untyped` for anything else."""
        x: cython.double
        if type(p) is not tuple or len(p) != 3:
            raise Untyped(p)
        count, mean, m2 = p
        if type(count) is not int or not 0 <= count < _COUNT_LIMIT:
            raise Untyped(p)
        flags: cython.longlong = 0
        if type(m2) is int and m2 == 0 and count:
            flags = _M2_INT
            self._xm = 0.0
        elif type(m2) is float and count != 1:
            x = m2
            if not -_INF < x < _INF:
                raise Untyped(p)
            self._xm = x
        else:
            raise Untyped(p)
        if type(mean) is int and count == 1 and -_VARIANCE_INT <= mean <= _VARIANCE_INT:
            flags |= _MEAN_INT
            self._xd = float(mean)
        elif type(mean) is float:
            x = mean
            if not -_INF < x < _INF:
                raise Untyped(p)
            self._xd = x
        else:
            raise Untyped(p)
        if count == 0 and (_bits(self._xd) != 0 or _bits(self._xm) != 0):
            raise Untyped(p)  # no values: the identity only (+0.0s)
        self._xc = count
        self._xi = flags
        self._xu = 0

    @cython.cfunc
    @cython.inline
    @cython.final
    @cython.exceptval(check=False)
    def _xvar(self) -> Var:
        """The decoded Variance row."""
        return Var(c=self._xc, d=self._xd, m=self._xm, f=self._xi)

    @cython.cfunc
    def _var_partial(self, v: Var) -> object:
        """The Python partial of a Variance row."""
        if v.c == 0:
            return self.monoid.identity
        return (v.c, int(v.d) if v.f & _MEAN_INT else v.d, 0 if v.f & _M2_INT else v.m)

    @cython.cfunc
    def _wide_kind(self, partial: object) -> cython.int:
        """The wide ops: decode ``partial`` (:meth:`_scalar_wide`) and return the kind of its
        row; an identity fits either (its row is right for both), the first other row
        decides the values' kind (and ArgMin's / ArgMax's keys')."""
        k: cython.int = self._scalar_wide(partial, -1 if self._undecided else self._kind)
        if k == _IDENT:
            return self._kind
        if self._undecided:
            self._kind = k
            self._kind2 = self._xk2
            self._undecided = False
        elif self._xk2 != self._kind2:
            raise Untyped(partial)
        return k

    @cython.cfunc
    def _scalar_wide(self, p: object, kind: cython.int) -> cython.int:
        """Decode a wide op's partial into ``_xd``/``_xi``/``_xc`` (a :data:`Part`; ArgMin's
        key kind in ``_xk2``) and return its kind, ``_IDENT`` for the identity;
        :class:`Untyped` if it does not fit a window of ``kind`` (-1: any): MinCount /
        MaxCount ``(value, count)`` of a finite value (or the identity), First / Last any
        float or int64, ArgMin / ArgMax ``(value, key)`` of a value but NaN and a key an
        int64 or a float but NaN (Alg. 3 compares keys: NaN is equal to itself there)."""
        op: cython.int = self._op
        x: cython.double
        self._xu = 0
        self._xc = 0
        value: object = p
        if op == _FIRST or op == _LAST:
            if p is self.monoid.identity:
                self._xd, self._xi, self._xc = 0.0, 0, -1
                return _IDENT
        elif op == _ARGMIN or op == _ARGMAX:
            if p is None:
                self._xd, self._xi = 1.0, 1
                return _IDENT
            if type(p) is not tuple or len(p) != 2:
                raise Untyped(p)
            value, key = p
            if type(key) is float:
                x = key
                if x != x:
                    raise Untyped(p)
                self._xc = _bits(x)
                self._xk2 = _FLOAT
            elif type(key) is int and _I64_MIN <= key <= _I64_MAX:
                self._xc = key
                self._xk2 = _INT
            else:
                raise Untyped(p)
            if type(value) is float:
                x = value
                if x != x:
                    raise Untyped(p)
        else:
            if type(p) is not tuple or len(p) != 2:
                raise Untyped(p)
            value, count = p
            if type(count) is not int or not 0 <= count < _COUNT_LIMIT:
                raise Untyped(p)
            if type(value) is float:
                x = value
                if x == self._ident and count == 0:
                    self._xd, self._xi = x, self._sentinel
                    return _IDENT
                if not -_INF < x < _INF:
                    raise Untyped(p)  # MinCount and MaxCount lift finite values only
            self._xc = count
        if type(value) is float:
            if kind == _INT:
                raise Untyped(p)
            self._xd, self._xi = value, 0
            return _FLOAT
        if type(value) is not int or kind == _FLOAT or not _I64_MIN <= value <= _I64_MAX:
            raise Untyped(p)
        self._xi = value
        if (op == _MINCOUNT or op == _MAXCOUNT) and self._xi == self._sentinel:
            raise Untyped(p)
        self._xd = 0.0
        return _INT

    @cython.cfunc
    @cython.inline
    @cython.final
    @cython.exceptval(check=False)
    def _x(self) -> Part:
        """The decoded row."""
        return Part(d=self._xd, i=self._xi, c=self._xc)

    @cython.cfunc
    def _identities_to_float(self) -> cython.void:
        """The INT columns hold identities only (``_sentinel``): the FLOAT ones get ``_ident``."""

    @cython.cfunc
    def _bounded(self, partial: object, evicted: cython.ulonglong) -> cython.void:
        """Take the decoded INT partial into the INT bound's sum, ``evicted`` (|v| of the held
        partial it pushes out) out of it; :class:`Untyped` (nothing changed) beyond the bound."""
        held: cython.ulonglong = self._magnitude - evicted
        if self._xu > _LIMIT - held:
            raise Untyped(partial)
        self._magnitude = held + self._xu

    @cython.cfunc
    def _partial(self, d: cython.double, i: cython.longlong, c: cython.longlong) -> object:
        """The Python partial of value ``d`` (FLOAT kind) or ``i`` (INT) and count ``c`` (MEAN)."""
        value: object
        if self._wide:
            return self._wide_partial(d, i, c)
        if self._kind == _FLOAT:
            value = d
        elif i == self._sentinel and (self._op == _MIN or self._op == _MAX):
            value = self._ident
        else:
            value = i
        if self._op == _MEAN:
            return (value, c)
        return value

    @cython.cfunc
    def _wide_partial(self, d: cython.double, i: cython.longlong, c: cython.longlong) -> object:
        """The Python partial of a wide op's row (see :data:`Part`)."""
        op: cython.int = self._op
        fl: cython.bint = self._kind == _FLOAT
        if (op == _FIRST or op == _LAST) and c < 0:
            return self.monoid.identity
        if (op == _ARGMIN or op == _ARGMAX) and (i != 0 if fl else d != 0.0):
            return None
        value: object
        if fl:
            value = d
        elif (op == _MINCOUNT or op == _MAXCOUNT) and i == self._sentinel:
            value = self._ident
        else:
            value = i
        if op == _FIRST or op == _LAST:
            return value
        if op == _MINCOUNT or op == _MAXCOUNT:
            return (value, c)
        return (value, _double(c) if self._kind2 == _FLOAT else c)

    @cython.cfunc
    def _zero(self, c: cython.longlong) -> object:
        """The Python partial whose sum is the int 0 (SUM; MEAN: with count ``c``)."""
        if self._op == _MEAN:
            return (0, c)
        return 0

    def _unknown_range(self, r: Any) -> Any:
        """The object aggregator's ValueError for a range it does not answer."""
        return MultiQueryAggregator._unknown_range(self, r)


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedSlideSide(_TypedMQ):
    """:class:`~mta.algorithms.slideside.InvertibleSlideSide` over typed columns: the circular
    buffer ``e`` of ``capacity`` partials, the prefix scan ``b`` of the current lap
    (``b[k]`` aggregates slots ``0 .. k-1``) and the suffix scan ``f`` of the previous lap
    (``f[k]``: its newest ``k``), each a column of doubles (``*d``) or int64s (``*i``) with
    counts (``*c``, MEAN).

    Sum's identity, the int 0 the shared final inserts for an empty stretch (Mean's
    ``(0, 0)``: its sum), is held as 0.0 by a FLOAT window (as by
    :class:`TypedSlickDequeInv`). The object's prefix and suffix sums over int zeros only
    are the int 0, and so are its answers from them: ``_ez`` marks the slots holding the
    int 0, ``_bfloat`` is the current lap's first slot holding a float
    and ``_ftail`` the number of int zeros the previous lap ends with, so that such an
    answer is the int 0 here too; any other is the same float, bit for bit (``x + 0`` and
    ``x - 0`` are ``x + 0.0`` and ``x - 0.0``)."""

    name = "slideside"
    any_range = True

    _ed: cython.double[:]
    _ei: cython.longlong[:]
    _ec: cython.longlong[:]
    _bd: cython.double[:]
    _bi: cython.longlong[:]
    _bc: cython.longlong[:]
    _fd: cython.double[:]
    _fi: cython.longlong[:]
    _fc: cython.longlong[:]
    _em: cython.double[:]  # VARIANCE: M2 (means in *d, counts in *c, flags in *i: see Var)
    _bm: cython.double[:]
    _fm: cython.double[:]
    _rs: cython.longlong[:]  # the ranges, in order
    _pos: cython.Py_ssize_t  # the slot of the next insert
    _wrapped: cython.bint  # the suffix scan was computed since clear (else f holds identities)
    _ez: cython.longlong[:]  # SUM, MEAN: 1 where the slot holds the int 0 (see the class docstring)
    _bfloat: cython.Py_ssize_t
    _ftail: cython.Py_ssize_t

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        _TypedMQ.__init__(self, monoid, ranges, (_SUM, _MEAN, _VARIANCE))
        n: cython.Py_ssize_t = self.capacity
        var: cython.bint = self._op == _VARIANCE
        m: cython.Py_ssize_t = n + 1 if self._op == _MEAN or var else 0
        self._em, self._bm, self._fm = _doubles(n if var else 0), _doubles(n + 1 if var else 0), \
            _doubles(n + 1 if var else 0)
        self._ed, self._ei, self._ec = _doubles(n), _int64s(n), _int64s(m)
        self._bd, self._bi, self._bc = _doubles(n + 1), _int64s(n + 1), _int64s(m)
        self._fd, self._fi, self._fc = _doubles(n + 1), _int64s(n + 1), _int64s(m)
        self._rs = array("q", self.ranges)
        self._zero_float = self._op == _SUM or self._op == _MEAN
        self._ez = _int64s(n if self._zero_float else 0)
        self.clear()

    @cython.cfunc
    def _reset(self) -> cython.void:
        self._pos = 0
        self._wrapped = False
        self._bfloat = self.capacity
        self._ftail = 0

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _identities_to_float(self) -> cython.void:
        """SUM: the INT columns hold int zeros only; the FLOAT ones become 0.0 where they do."""
        k: cython.Py_ssize_t
        for k in range(self.capacity):
            self._ed[k] = 0.0
        for k in range(self.capacity + 1):
            self._bd[k] = 0.0
            self._fd[k] = 0.0

    @cython.cfunc
    def _outgoing(self) -> cython.longlong:
        return self._ei[self._pos]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert(self, partial: Any) -> None:
        pos: cython.Py_ssize_t = self._pos
        n: cython.Py_ssize_t = self.capacity
        kind: cython.int = self._take(partial, self._ei[pos])
        if pos == 0 and self._n:
            self._suffix_scan()  # the buffer wraps, a full lap is held
        if self._zero_float:
            if pos == 0:
                self._bfloat = n
            if self._xzero:
                self._ez[pos] = 1
            else:
                self._ez[pos] = 0
                if self._bfloat == n:
                    self._bfloat = pos
        # older operand first; the lap's first partial needs no combine
        if self._op == _VARIANCE:
            self._put_var(pos)
        elif kind == _FLOAT:
            self._ed[pos] = self._xd
            self._bd[pos + 1] = self._bd[pos] + self._xd if pos else self._xd
        else:
            self._ei[pos] = self._xi
            self._bi[pos + 1] = self._bi[pos] + self._xi if pos else self._xi
        if self._op == _MEAN:
            self._ec[pos] = self._xc
            self._bc[pos + 1] = self._bc[pos] + self._xc if pos else self._xc
        pos += 1
        self._pos = 0 if pos == n else pos
        if self._n < n:
            self._n += 1

    @cython.cfunc
    def _put_var(self, pos: cython.Py_ssize_t) -> cython.void:
        """VARIANCE: the decoded row into slot ``pos`` and the prefix scan (``_chan``, the
        older operand first)."""
        x: Var = self._xvar()
        _var_put(self._ed, self._em, self._ec, self._ei, pos, x)
        _var_put(self._bd, self._bm, self._bc, self._bi, pos + 1,
                  _chan(_var_at(self._bd, self._bm, self._bc, self._bi, pos), x) if pos else x)

    @cython.cfunc
    def _scan_var(self) -> cython.void:
        """:meth:`_suffix_scan` of VARIANCE rows (``_chan(acc, older)``: Variance is commutative)."""
        n: cython.Py_ssize_t = self.capacity
        k: cython.Py_ssize_t
        _var_put(self._fd, self._fm, self._fc, self._fi, 1, _var_at(self._ed, self._em, self._ec, self._ei, n - 1))
        for k in range(2, n + 1):
            _var_put(self._fd, self._fm, self._fc, self._fi, k,
                      _chan(_var_at(self._fd, self._fm, self._fc, self._fi, k - 1),
                            _var_at(self._ed, self._em, self._ec, self._ei, n - k)))

    @cython.cfunc
    def _answer_var(self, end: cython.Py_ssize_t, start: cython.Py_ssize_t) -> object:
        """:meth:`_answer` of VARIANCE: Alg. 3's case b (``invert``), a, c (``_chan``)."""
        b: Var = _var_at(self._bd, self._bm, self._bc, self._bi, end)
        if start > 0:
            return self._var_partial(_var_invert(b, _var_at(self._bd, self._bm, self._bc, self._bi, start)))
        if start == 0:
            return self._var_partial(b)
        return self._var_partial(_chan(_var_at(self._fd, self._fm, self._fc, self._fi, -start), b))

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _suffix_scan(self) -> cython.void:
        """``f[k]``: the newest ``k`` of the full lap held (the buffer is at slot 0), accumulated
        from the newest: ``f[k] = f[k - 1] + e[n - k]``, as ``accumulate`` does."""
        n: cython.Py_ssize_t = self.capacity
        k: cython.Py_ssize_t
        self._wrapped = True
        if self._op == _VARIANCE:
            self._scan_var()
            return
        if self._kind == _FLOAT:
            self._fd[1] = self._ed[n - 1]
            for k in range(2, n + 1):
                self._fd[k] = self._fd[k - 1] + self._ed[n - k]
        else:
            self._fi[1] = self._ei[n - 1]
            for k in range(2, n + 1):
                self._fi[k] = self._fi[k - 1] + self._ei[n - k]
        if self._op == _MEAN:
            self._fc[1] = self._ec[n - 1]
            for k in range(2, n + 1):
                self._fc[k] = self._fc[k - 1] + self._ec[n - k]
        if self._zero_float:
            k = 0
            while k < n and self._ez[n - 1 - k]:
                k += 1
            self._ftail = k

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _answer(self, end: cython.Py_ssize_t, r: cython.Py_ssize_t) -> object:
        """The newest ``r`` (1 <= r <= held) when the current lap ends at ``end``: Alg. 3's
        case b (the prefix minus its oldest part), a (the prefix), c (suffix, then prefix)."""
        start: cython.Py_ssize_t = end - r
        if self._op == _VARIANCE:
            return self._answer_var(end, start)
        c: cython.longlong = 0
        d: cython.double = 0.0
        i: cython.longlong = 0
        mean: cython.bint = self._op == _MEAN
        zero: cython.bint = (self._zero_float and self._kind == _FLOAT and end <= self._bfloat
                             and (start >= 0 or -start <= self._ftail))  # sums of the int 0 only, as the object's
        if start > 0:  # only the kind's column is read (the other is cold)
            if self._kind == _FLOAT:
                d = self._bd[end] - self._bd[start]
            else:
                i = self._bi[end] - self._bi[start]
            if mean:
                c = self._bc[end] - self._bc[start]
        elif start == 0:
            if self._kind == _FLOAT:
                d = self._bd[end]
            else:
                i = self._bi[end]
            if mean:
                c = self._bc[end]
        else:
            if self._kind == _FLOAT:
                d = self._fd[-start] + self._bd[end]
            else:
                i = self._fi[-start] + self._bi[end]
            if mean:
                c = self._fc[-start] + self._bc[end]
        if zero:
            return self._zero(c)
        return self._partial(d, i, c)

    def query(self, r: Any) -> Any:
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        k: cython.Py_ssize_t = r
        if k > self._n:
            k = self._n
        if not k:
            return self.monoid.identity
        return self._answer(self._pos or self.capacity, k)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def answers(self) -> list:
        n: cython.Py_ssize_t = len(self._rs)
        j: cython.Py_ssize_t
        r: cython.Py_ssize_t
        end: cython.Py_ssize_t = self._pos or self.capacity
        out: list = [None] * n
        if not self._n:
            identity = self.monoid.identity
            for j in range(n):
                out[j] = identity
            return out
        for j in range(n):
            r = self._rs[j]
            if r > self._n:
                r = self._n
            out[j] = self._answer(end, r)
        return out

    def to_object(self) -> InvertibleSlideSide:
        """The object :class:`InvertibleSlideSide` in this state: the slots it has written
        since clear (its lists grow to them) hold the same partials."""
        twin = InvertibleSlideSide(self.monoid, self.ranges)
        n: cython.Py_ssize_t = self.capacity
        written: cython.Py_ssize_t = self._n  # slots 0 .. count-1 (all once a lap was held)
        k: cython.Py_ssize_t
        if self._op == _VARIANCE:
            twin._elements = [self._var_partial(_var_at(self._ed, self._em, self._ec, self._ei, k))
                              for k in range(written)]
            twin._back = [twin._identity, *(self._var_partial(_var_at(self._bd, self._bm, self._bc, self._bi, k))
                                            for k in range(1, written + 1))]
            if self._wrapped:
                twin._front = [twin._identity, *(self._var_partial(_var_at(self._fd, self._fm, self._fc, self._fi, k))
                                                 for k in range(1, n + 1))]
            twin._pos = self._pos
            twin._count = self._n
            return twin
        c: cython.bint = self._op == _MEAN
        zeros: cython.bint = self._zero_float and self._kind == _FLOAT  # the int 0 where the object has it
        twin._elements = [self._zero(self._ec[k] if c else 0) if zeros and self._ez[k] else
                          self._partial(self._ed[k], self._ei[k], self._ec[k] if c else 0) for k in range(written)]
        twin._back = [twin._identity, *(self._zero(self._bc[k] if c else 0) if zeros and k <= self._bfloat else
                                        self._partial(self._bd[k], self._bi[k], self._bc[k] if c else 0)
                                        for k in range(1, written + 1))]
        if self._wrapped:
            twin._front = [twin._identity, *(self._zero(self._fc[k] if c else 0) if zeros and k <= self._ftail else
                                             self._partial(self._fd[k], self._fi[k], self._fc[k] if c else 0)
                                             for k in range(1, n + 1))]
        twin._pos = self._pos
        twin._count = self._n
        return twin


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedSlickDeque(_TypedMQ):
    """:class:`~mta.algorithms.slickdeque.SlickDequeNonInv` (Alg. 3) over typed columns: the
    deque of (sequence number, partial) nodes in a ring (``p``, ``vd``/``vi``, and ``vc`` for
    First, Last, ArgMin and ArgMax: :data:`Part`; a power of two >= capacity slots), live
    from absolute index ``h`` for ``m`` nodes."""

    name = "slickdeque"
    any_range = True

    _p: cython.longlong[:]
    _vd: cython.double[:]
    _vi: cython.longlong[:]
    _vc: cython.longlong[:]  # the wide ops' c (see Part)
    _rs: cython.longlong[:]
    _ds: cython.longlong[:]  # the distinct ranges, largest first
    _order: cython.longlong[:]  # for each range, its index in _ds
    _mask: cython.Py_ssize_t
    _h: cython.Py_ssize_t
    _m: cython.Py_ssize_t
    _t: cython.longlong  # sequence number of the newest partial (the first is 1)

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        _TypedMQ.__init__(self, monoid, ranges, (_MIN, _MAX, _FIRST, _LAST, _ARGMIN, _ARGMAX))
        size: cython.Py_ssize_t = 1
        while size < self.capacity:
            size *= 2
        self._mask = size - 1
        self._p, self._vd, self._vi = _int64s(size), _doubles(size), _int64s(size)
        self._vc = _int64s(size if self._wide else 0)
        self._rs = array("q", self.ranges)
        distinct = sorted(set(self.ranges), reverse=True)
        self._ds = array("q", distinct)
        index = {r: k for k, r in enumerate(distinct)}
        self._order = array("q", [index[r] for r in self.ranges])
        self.clear()

    @cython.cfunc
    def _reset(self) -> cython.void:
        self._h = self._m = 0
        self._t = 0

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _identities_to_float(self) -> cython.void:
        k: cython.Py_ssize_t
        for k in range(self._mask + 1):
            self._vd[k] = self._ident

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert(self, partial: Any) -> None:
        kind: cython.int = self._take(partial, 0)
        mask: cython.Py_ssize_t = self._mask
        h: cython.Py_ssize_t = self._h
        m: cython.Py_ssize_t = self._m
        t: cython.longlong = self._t + 1
        self._t = t
        if self._n < self.capacity:
            self._n += 1
        # the oldest node expires when it falls out of the largest range
        if m and self._p[h & mask] == t - self.capacity:
            h += 1
            m -= 1
        # Alg. 3 line 16: a node the new partial dominates never answers again; popped when
        # ``combine(back, new)`` selects ``new`` (see SlickDequeNonInv.insert: not when it
        # merely equals it), or selects ``back`` of the same bits (which then answers is not
        # seen). Min's ``combine(b, x)`` selects ``x`` iff ``not b <= x``; NaN is not held.
        if self._wide:
            m = self._dominate(h, m, kind == _FLOAT)
        elif kind == _FLOAT:
            x: cython.double = self._xd
            b: cython.double
            if self._op == _MIN:
                while m:
                    b = self._vd[(h + m - 1) & mask]
                    if b <= x and not (b == x and _bits(b) == _bits(x)):
                        break
                    m -= 1
            else:
                while m:
                    b = self._vd[(h + m - 1) & mask]
                    if b >= x and not (b == x and _bits(b) == _bits(x)):
                        break
                    m -= 1
            self._vd[(h + m) & mask] = x
        else:  # equal ints are the same partial
            y: cython.longlong = self._xi
            if self._op == _MIN:
                while m and self._vi[(h + m - 1) & mask] >= y:
                    m -= 1
            else:
                while m and self._vi[(h + m - 1) & mask] <= y:
                    m -= 1
            self._vi[(h + m) & mask] = y
        self._p[(h + m) & mask] = t
        self._h = h & mask
        self._m = m + 1

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _dominate(self, h: cython.Py_ssize_t, m: cython.Py_ssize_t, fl: cython.bint) -> cython.Py_ssize_t:
        """A wide op's domination pops (the nodes from ``h``, ``m`` of them) and the decoded
        row as the newest node's partial; return the number of nodes before it."""
        mask: cython.Py_ssize_t = self._mask
        x: Part = self._x()
        while m and _wpops(self._op, fl, _part_at(self._vd, self._vi, self._vc, (h + m - 1) & mask), x):
            m -= 1
        _part_put(self._vd, self._vi, self._vc, (h + m) & mask, x)
        return m

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _answer(self, r: cython.Py_ssize_t) -> object:
        """The oldest node inside the newest ``r`` (numbered ``t - r + 1`` or later; the newest
        node always is): a binary search of the ring."""
        first: cython.longlong = self._t - r + 1
        mask: cython.Py_ssize_t = self._mask
        lo: cython.Py_ssize_t = 0
        hi: cython.Py_ssize_t = self._m - 1
        mid: cython.Py_ssize_t
        while lo < hi:
            mid = (lo + hi) // 2
            if self._p[(self._h + mid) & mask] < first:
                lo = mid + 1
            else:
                hi = mid
        k: cython.Py_ssize_t = (self._h + lo) & mask
        return self._partial(self._vd[k], self._vi[k], self._vc[k] if self._wide else 0)

    def query(self, r: Any) -> Any:
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        if not self._t:
            return self.monoid.identity
        return self._answer(r)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def answers(self) -> list:
        n: cython.Py_ssize_t = len(self._rs)
        j: cython.Py_ssize_t
        out: list = [None] * n
        if not self._t:
            identity = self.monoid.identity
            for j in range(n):
                out[j] = identity
            return out
        # the distinct ranges, largest first, reach back to ever newer nodes: one walk from
        # the oldest node, one Python partial per node that answers (as the object shares it)
        d: cython.Py_ssize_t = len(self._ds)
        mask: cython.Py_ssize_t = self._mask
        k: cython.Py_ssize_t = 0
        node: cython.Py_ssize_t = -1
        slot: cython.Py_ssize_t
        first: cython.longlong
        value: object = None
        by_range: list = [None] * d
        step: cython.Py_ssize_t
        hi: cython.Py_ssize_t
        mid: cython.Py_ssize_t
        for j in range(d):
            first = self._t - self._ds[j] + 1
            if self._p[(self._h + k) & mask] < first:
                # gallop, then bisect: the first node numbered ``first`` or later is in
                # (k, hi] (a deque that pops little, First's, is long: no walk over it)
                step = 1
                hi = k + 1
                while hi < self._m - 1 and self._p[(self._h + hi) & mask] < first:
                    k = hi
                    step *= 2
                    hi = k + step
                if hi > self._m - 1:
                    hi = self._m - 1
                while k + 1 < hi:
                    mid = (k + hi) // 2
                    if self._p[(self._h + mid) & mask] < first:
                        k = mid
                    else:
                        hi = mid
                k = hi
            if k != node:
                node = k
                slot = (self._h + k) & mask
                value = self._partial(self._vd[slot], self._vi[slot], self._vc[slot] if self._wide else 0)
            by_range[j] = value
        for j in range(n):
            out[j] = by_range[self._order[j]]
        return out

    def to_object(self) -> SlickDequeNonInv:
        """The object :class:`SlickDequeNonInv` in this state (the same nodes, no dead prefix)."""
        twin = SlickDequeNonInv(self.monoid, self.ranges)
        mask: cython.Py_ssize_t = self._mask
        slots = [(self._h + k) & mask for k in range(self._m)]
        twin._pos = [self._p[k] for k in slots]
        twin._val = [self._partial(self._vd[k], self._vi[k], self._vc[k] if self._wide else 0) for k in slots]
        twin._head = 0
        twin._t = self._t
        return twin


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedSlickDequeInv(_TypedMQ):
    """:class:`~mta.algorithms.slickdeque.SlickDequeInv` (Alg. 2) over typed columns: the
    newest ``capacity`` partials in a circular array (``e``; never-written slots hold the
    identity, 0) and one running aggregate (``a``) per distinct range (``_ds``).

    Sum's identity, the int 0 the shared final inserts for an empty stretch (Mean's
    ``(0, 0)``: its sum), is held as 0.0 by a FLOAT window, and a window of nothing but such
    zeros (``_undecided``) turns FLOAT at
    its first float: every answer takes every insert, so the object's answers are floats from
    the first float on, and a float less or plus the int 0 is the float less or plus 0.0, bit
    for bit (the slots the twin holds as 0.0 are read by those only)."""

    name = "slickdeque"
    any_range = False

    _ed: cython.double[:]
    _ei: cython.longlong[:]
    _ec: cython.longlong[:]
    _ad: cython.double[:]
    _ai: cython.longlong[:]
    _ac: cython.longlong[:]
    _em: cython.double[:]  # VARIANCE: M2 (means in *d, counts in *c, flags in *i: see Var)
    _am: cython.double[:]
    _ds: cython.longlong[:]  # the distinct ranges, in first-seen order
    _order: cython.longlong[:]  # for each range, its index in _ds
    _slot: dict
    _cur: cython.Py_ssize_t  # the slot of the next partial (the oldest one's)

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        _TypedMQ.__init__(self, monoid, ranges, (_SUM, _MEAN, _VARIANCE))
        distinct = list(dict.fromkeys(self.ranges))
        self._slot = {r: k for k, r in enumerate(distinct)}
        self._ds = array("q", distinct)
        self._order = array("q", [self._slot[r] for r in self.ranges])
        n: cython.Py_ssize_t = self.capacity
        d: cython.Py_ssize_t = len(distinct)
        var: cython.bint = self._op == _VARIANCE
        mean: cython.bint = self._op == _MEAN or var
        self._ed, self._ei, self._ec = _doubles(n), _int64s(n), _int64s(n if mean else 0)
        self._ad, self._ai, self._ac = _doubles(d), _int64s(d), _int64s(d if mean else 0)
        self._em, self._am = _doubles(n if var else 0), _doubles(d if var else 0)
        self._zero_float = self._op == _SUM or self._op == _MEAN
        self.clear()

    @cython.boundscheck(False)
    @cython.wraparound(False)
    @cython.cfunc
    def _reset(self) -> cython.void:
        # every partial and every range's answer start at the identity
        k: cython.Py_ssize_t
        var: cython.bint = self._op == _VARIANCE
        mean: cython.bint = self._op == _MEAN or var
        for k in range(self.capacity):
            self._ed[k] = 0.0
            self._ei[k] = 0
            if mean:
                self._ec[k] = 0
            if var:
                self._em[k] = 0.0
        for k in range(len(self._ds)):
            self._ad[k] = 0.0
            self._ai[k] = 0
            if mean:
                self._ac[k] = 0
            if var:
                self._am[k] = 0.0
        self._cur = 0

    @cython.cfunc
    def _outgoing(self) -> cython.longlong:
        return self._ei[self._cur]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert(self, partial: Any) -> None:
        cur: cython.Py_ssize_t = self._cur
        n: cython.Py_ssize_t = self.capacity
        kind: cython.int = self._take(partial, self._ei[cur])
        k: cython.Py_ssize_t
        old: cython.Py_ssize_t
        var: cython.bint = self._op == _VARIANCE
        # the partial leaving range r sits r slots back (r == capacity: the slot about to be
        # overwritten); the identity while fewer than r were inserted: invert, then combine
        for k in range(len(self._ds)):
            old = cur - self._ds[k]
            if old < 0:
                old += n
            if var:
                _var_put(self._ad, self._am, self._ac, self._ai, k,
                         _chan(_var_invert(_var_at(self._ad, self._am, self._ac, self._ai, k),
                                           _var_at(self._ed, self._em, self._ec, self._ei, old)), self._xvar()))
            elif kind == _FLOAT:
                self._ad[k] = (self._ad[k] - self._ed[old]) + self._xd
            else:
                self._ai[k] = (self._ai[k] - self._ei[old]) + self._xi
            if self._op == _MEAN:
                self._ac[k] = (self._ac[k] - self._ec[old]) + self._xc
        if kind == _FLOAT:
            self._ed[cur] = self._xd
        else:
            self._ei[cur] = self._xi
        if self._op == _MEAN or var:
            self._ec[cur] = self._xc
        if var:
            self._ei[cur] = self._xi
            self._em[cur] = self._xm
        cur += 1
        self._cur = 0 if cur == n else cur
        if self._n < n:
            self._n += 1

    @cython.cfunc
    def _answer(self, k: cython.Py_ssize_t) -> object:
        if not self._n:
            return self.monoid.identity
        if self._op == _VARIANCE:
            return self._var_partial(_var_at(self._ad, self._am, self._ac, self._ai, k))
        return self._partial(self._ad[k], self._ai[k], self._ac[k] if self._op == _MEAN else 0)

    def query(self, r: Any) -> Any:
        k = self._slot.get(r) if r.__class__ is int else None
        if k is None:
            raise self._unknown_range(r)
        return self._answer(k)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def answers(self) -> list:
        n: cython.Py_ssize_t = len(self._order)
        j: cython.Py_ssize_t
        out: list = [None] * n
        for j in range(n):
            out[j] = self._answer(self._order[j])
        return out

    def to_object(self) -> SlickDequeInv:
        """The object :class:`SlickDequeInv` in this state (the slots written since clear:
        its list grows to them)."""
        twin = SlickDequeInv(self.monoid, self.ranges)
        c: cython.bint = self._op == _MEAN
        written: cython.Py_ssize_t = self._n  # slots 0 .. size-1 (all once full)
        if self._op == _VARIANCE:
            twin._partials = [self._var_partial(_var_at(self._ed, self._em, self._ec, self._ei, k))
                              for k in range(written)]
        else:
            twin._partials = [self._partial(self._ed[k], self._ei[k], self._ec[k] if c else 0) for k in range(written)]
        twin._answers = [self._answer(k) for k in range(len(self._ds))]
        twin._cur = self._cur
        twin._size = self._n
        return twin


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedOverlaidSlideSide(_TypedMQ):
    """:class:`~mta.algorithms.slideside.OverlaidSlideSide` over typed columns, for ``Min``
    and ``Max`` (``*d`` / ``*i`` columns), the wide ops, ``Sum``/``Count`` and ``Mean`` (rows
    in the ``*c`` columns too: :data:`Part`) and ``Variance``/``StdDev`` (:data:`Var` rows:
    M2 in the ``*m`` columns, the flags in ``*i``): per level ``l`` (period ``per[l]``,
    largest range ``top[l]``) the count
    ``bs[l]`` and aggregate ``back[l]`` of its back part; the suffix scans in one column,
    scan ``j`` (the one a flip whose highest level is ``j`` computes, ``top[j] + 1`` rows
    from ``off[j]``, ``slen[j]`` of them filled, row 0 the identity) read by every level
    ``l`` with ``src[l] == j`` (the overlaid stacks: the object's shared scan list).

    The overlaid stacks combine and never invert, so they serve any of these monoids: a
    lone Sum, Mean or Variance gets :class:`TypedSlideSide` (:data:`_TWINS`: ``SlideSide``
    gives it the invertible variant) but this twin where SlideSide is built with
    ``inverse=False`` (the shared final once it may not subtract), and a Record mixing them
    with selections this twin per field (:class:`TypedRecordOverlaidSlideSide`).

    Sum's and Mean's rows: an INT window has the sum in ``i``; a FLOAT one the sum in ``d``
    and in ``i`` whether the object's sum is a float (1) or the int 0 (0: a sum of int
    zeros only, as the shared final's identity for an empty stretch). ``x + 0`` is
    ``x + 0.0`` bit for bit, so the flag only keeps the type of a sum of zeros; a window of
    int zeros that turns FLOAT keeps its ``i`` column (zeros: the flags of the int 0)."""

    name = "slideside"
    any_range = True

    _ed: cython.double[:]
    _ei: cython.longlong[:]
    _bd: cython.double[:]  # back aggregates, per level
    _bi: cython.longlong[:]
    _sd: cython.double[:]  # the scans
    _si: cython.longlong[:]
    _ec: cython.longlong[:]  # Part's and Var's c, of the elements, backs and scans
    _bc: cython.longlong[:]
    _sc: cython.longlong[:]
    _em: cython.double[:]  # VARIANCE: M2, of the elements, backs and scans
    _bm: cython.double[:]
    _sm: cython.double[:]
    _bs: cython.longlong[:]
    _per: cython.longlong[:]
    _top: cython.longlong[:]
    _off: cython.longlong[:]
    _slen: cython.longlong[:]
    _src: cython.longlong[:]
    _rs: cython.longlong[:]
    _lv: cython.longlong[:]  # for each range (in order), its level
    _levels: cython.Py_ssize_t
    _pos: cython.Py_ssize_t
    _rows: cython.bint  # rows are Parts: the wide ops, SUM, MEAN
    _var: cython.bint  # rows are Vars: VARIANCE
    _ints: cython.bint  # Count: int partials only (see _scalar)

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        _TypedMQ.__init__(self, monoid, ranges, (_MIN, _MAX, _MINCOUNT, _MAXCOUNT, _FIRST, _LAST, _ARGMIN, _ARGMAX,
                                                 _SUM, _MEAN, _VARIANCE))
        by_level: dict = {}
        for r in sorted(set(self.ranges)):
            by_level.setdefault(r.bit_length() - 1, []).append(r)
        levels = sorted(by_level)
        tops = [by_level[level][-1] for level in levels]
        offsets = [0]
        for top in tops:
            offsets.append(offsets[-1] + top + 1)
        L: cython.Py_ssize_t = len(levels)
        self._levels = L
        self._per = array("q", [1 << level for level in levels])
        self._top = array("q", tops)
        self._off = array("q", offsets[:-1])
        self._rs = array("q", self.ranges)
        self._lv = array("q", [levels.index(r.bit_length() - 1) for r in self.ranges])
        self._bs, self._slen, self._src = _int64s(L), _int64s(L), _int64s(L)
        self._bd, self._bi = _doubles(L), _int64s(L)
        self._sd, self._si = _doubles(offsets[-1]), _int64s(offsets[-1])
        self._ed, self._ei = _doubles(self.capacity), _int64s(self.capacity)
        self._zero_float = self._op == _SUM or self._op == _MEAN
        self._var = self._op == _VARIANCE
        self._rows = self._zero_float or (self._wide and not self._var)
        self._ints = type(monoid) is Count
        w: cython.bint = self._rows or self._var
        self._ec, self._bc, self._sc = _int64s(self.capacity if w else 0), _int64s(L if w else 0), \
            _int64s(offsets[-1] if w else 0)
        v: cython.bint = self._var
        self._em, self._bm, self._sm = _doubles(self.capacity if v else 0), _doubles(L if v else 0), \
            _doubles(offsets[-1] if v else 0)
        self.clear()

    @cython.cfunc
    def _reset(self) -> cython.void:
        i: cython.Py_ssize_t
        for i in range(self._levels):
            self._bs[i] = 0
            self._slen[i] = 1
            self._src[i] = i
        self._pos = 0

    @cython.cfunc
    def _outgoing(self) -> cython.longlong:
        return self._ei[self._pos]

    @cython.cfunc
    def _scalar(self, p: object, kind: cython.int) -> cython.int:
        """:meth:`_TypedMQ._scalar`, but Count takes ints only (its lift's): ``Count.fold``,
        which the object answers a range between the levels with, adds the floats of a
        Count in another order than the left fold (``acc + sum(rest)``)."""
        if self._ints and type(p) is not int:
            raise Untyped(p)
        return _TypedMQ._scalar(self, p, kind)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _identities_to_float(self) -> cython.void:
        """Min / Max: the identity in the FLOAT columns; SUM / MEAN: 0.0 (the ``i`` columns,
        all 0, are the flags of the int 0)."""
        fill: cython.double = 0.0 if self._zero_float else self._ident
        k: cython.Py_ssize_t
        for k in range(self.capacity):
            self._ed[k] = fill
        for k in range(self._levels):
            self._bd[k] = fill
        for k in range(len(self._sd)):
            self._sd[k] = fill

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _row(self, fl: cython.bint) -> Part:
        """The decoded row of a wide op, or SUM's / MEAN's in a FLOAT (``fl``) or INT window."""
        if not self._zero_float:
            return self._x()
        c: cython.longlong = self._xc if self._op == _MEAN else 0
        if fl:
            return Part(d=self._xd, i=0 if self._xzero else 1, c=c)
        return Part(d=0.0, i=self._xi, c=c)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert(self, partial: Any) -> None:
        kind: cython.int = self._take(partial, self._ei[self._pos])
        fl: cython.bint = kind == _FLOAT
        x: Part
        v: Var
        if self._rows:
            x = self._row(fl)
        elif self._var:
            v = self._xvar()
        i: cython.Py_ssize_t
        j: cython.Py_ssize_t = -1  # the highest level that flips (-1: none)
        if self._bs[0] == self._per[0]:
            # levels 0..j flip (periods are powers of two from the same first element):
            # one suffix scan of the newest top[j] (fewer while filling), shared by them
            j = 0
            while j + 1 < self._levels and self._bs[j + 1] == self._per[j + 1]:
                j += 1
            self._scan(j)
            for i in range(j + 1):
                self._src[i] = j
                if self._rows:
                    _part_put(self._bd, self._bi, self._bc, i, x)
                elif self._var:
                    _var_put(self._bd, self._bm, self._bc, self._bi, i, v)
                else:
                    self._bd[i] = self._xd
                    self._bi[i] = self._xi
                self._bs[i] = 1
        for i in range(j + 1, self._levels):
            if self._rows:
                _part_put(self._bd, self._bi, self._bc, i,
                          _wcomb(self._op, fl, _part_at(self._bd, self._bi, self._bc, i), x) if self._bs[i] else x)
            elif self._var:
                _var_put(self._bd, self._bm, self._bc, self._bi, i,
                         _chan(_var_at(self._bd, self._bm, self._bc, self._bi, i), v) if self._bs[i] else v)
            elif fl:
                self._bd[i] = _comb(self._op, self._bd[i], self._xd) if self._bs[i] else self._xd
            else:
                self._bi[i] = _comb(self._op, self._bi[i], self._xi) if self._bs[i] else self._xi
            self._bs[i] += 1
        n: cython.Py_ssize_t = self.capacity
        if self._rows:
            _part_put(self._ed, self._ei, self._ec, self._pos, x)
        elif self._var:
            _var_put(self._ed, self._em, self._ec, self._ei, self._pos, v)
        elif fl:
            self._ed[self._pos] = self._xd
        else:
            self._ei[self._pos] = self._xi
        self._pos = 0 if self._pos + 1 == n else self._pos + 1
        if self._n < n:
            self._n += 1

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _scan_rows(self, j: cython.Py_ssize_t, k: cython.Py_ssize_t) -> cython.void:
        """:meth:`_scan` of :data:`Part` rows, which combine as ``OverlaidSlideSide._suffix_scan``
        does: ``combine(older, acc)`` (ties keep the older: -0.0 against 0.0, First's equal
        values; sums add in the object's order)."""
        off: cython.Py_ssize_t = self._off[j]
        n: cython.Py_ssize_t = self.capacity
        fl: cython.bint = self._kind == _FLOAT
        m: cython.Py_ssize_t
        e: cython.Py_ssize_t
        if not k:
            return
        e = self._pos - 1 if self._pos else n - 1
        acc: Part = _part_at(self._ed, self._ei, self._ec, e)
        x: Part
        _part_put(self._sd, self._si, self._sc, off + 1, acc)
        for m in range(2, k + 1):
            e = self._pos - m
            if e < 0:
                e += n
            x = _part_at(self._ed, self._ei, self._ec, e)
            acc = _wcomb(self._op, fl, x, acc)
            _part_put(self._sd, self._si, self._sc, off + m, acc)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _scan_var(self, j: cython.Py_ssize_t, k: cython.Py_ssize_t) -> cython.void:
        """:meth:`_scan` of :data:`Var` rows: ``_chan(older, acc)``, the object's order."""
        off: cython.Py_ssize_t = self._off[j]
        n: cython.Py_ssize_t = self.capacity
        m: cython.Py_ssize_t
        e: cython.Py_ssize_t
        if not k:
            return
        e = self._pos - 1 if self._pos else n - 1
        acc: Var = _var_at(self._ed, self._em, self._ec, self._ei, e)
        x: Var
        _var_put(self._sd, self._sm, self._sc, self._si, off + 1, acc)
        for m in range(2, k + 1):
            e = self._pos - m
            if e < 0:
                e += n
            x = _var_at(self._ed, self._em, self._ec, self._ei, e)
            acc = _chan(x, acc)
            _var_put(self._sd, self._sm, self._sc, self._si, off + m, acc)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _scan(self, j: cython.Py_ssize_t) -> cython.void:
        """Scan ``j``: ``[identity, newest, newest two, ...]`` over the newest
        ``min(top[j], count)``, as ``OverlaidSlideSide._suffix_scan``: ``combine(older, acc)``
        (ties keep the older: -0.0 against 0.0)."""
        k: cython.Py_ssize_t = self._top[j] if self._top[j] < self._n else self._n
        off: cython.Py_ssize_t = self._off[j]
        n: cython.Py_ssize_t = self.capacity
        m: cython.Py_ssize_t
        e: cython.Py_ssize_t
        self._slen[j] = k + 1
        if self._rows:
            self._scan_rows(j, k)
            return
        if self._var:
            self._scan_var(j, k)
            return
        for m in range(1, k + 1):
            e = self._pos - m
            if e < 0:
                e += n
            if self._kind == _FLOAT:
                self._sd[off + m] = self._ed[e] if m == 1 else _comb(self._op, self._ed[e], self._sd[off + m - 1])
            else:
                self._si[off + m] = self._ei[e] if m == 1 else _comb(self._op, self._ei[e], self._si[off + m - 1])

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _answer(self, r: cython.Py_ssize_t) -> object:
        """The newest ``r`` (1 <= r <= held): one combine from the highest level whose parts
        cover it, else a fold as ``monoid.fold`` does (Min's and Max's: the builtin min/max of
        all but the oldest, keeping the first of equals, then combined with the oldest; the
        others': the left fold)."""
        i: cython.Py_ssize_t
        k: cython.Py_ssize_t
        s: cython.Py_ssize_t
        for i in range(self._levels - 1, -1, -1):
            k = r - self._bs[i]
            s = self._src[i]
            if 0 <= k < self._slen[s]:
                s = self._off[s] + k
                if self._rows:
                    return self._joined(s, i, k != 0)
                if self._var:
                    return self._joined_var(s, i, k != 0)
                if self._kind == _FLOAT:
                    return self._bd[i] if not k else _comb(self._op, self._sd[s], self._bd[i])
                return self._partial(0.0, self._bi[i] if not k else _comb(self._op, self._si[s], self._bi[i]), 0)
        n: cython.Py_ssize_t = self.capacity
        first: cython.Py_ssize_t = self._pos - r
        if first < 0:
            first += n
        e: cython.Py_ssize_t
        if self._rows:
            return self._fold(first, r)
        if self._var:
            return self._fold_var(first, r)
        md: cython.double = 0.0
        mi: cython.longlong = 0
        for k in range(1, r):
            e = first + k
            if e >= n:
                e -= n
            if self._kind == _FLOAT:
                if k == 1 or (self._ed[e] < md if self._op == _MIN else self._ed[e] > md):
                    md = self._ed[e]
            else:
                if k == 1 or (self._ei[e] < mi if self._op == _MIN else self._ei[e] > mi):
                    mi = self._ei[e]
        if self._kind == _FLOAT:
            return self._ed[first] if r == 1 else _comb(self._op, self._ed[first], md)
        return self._partial(0.0, self._ei[first] if r == 1 else _comb(self._op, self._ei[first], mi), 0)

    @cython.cfunc
    def _joined(self, s: cython.Py_ssize_t, i: cython.Py_ssize_t, join: cython.bint) -> object:
        """A :data:`Part` row's ``combine(scan row s, back i)`` when ``join``, else the back
        alone (a scan's row 0 is the identity: the same but for Sum's ``0 + -0.0``)."""
        if not join:
            return self._rowp(_part_at(self._bd, self._bi, self._bc, i))
        return self._rowp(_wcomb(self._op, self._kind == _FLOAT, _part_at(self._sd, self._si, self._sc, s),
                                 _part_at(self._bd, self._bi, self._bc, i)))

    @cython.cfunc
    def _joined_var(self, s: cython.Py_ssize_t, i: cython.Py_ssize_t, join: cython.bint) -> object:
        """:meth:`_joined` of :data:`Var` rows."""
        b: Var = _var_at(self._bd, self._bm, self._bc, self._bi, i)
        if not join:
            return self._var_partial(b)
        return self._var_partial(_chan(_var_at(self._sd, self._sm, self._sc, self._si, s), b))

    @cython.cfunc
    def _fold(self, first: cython.Py_ssize_t, r: cython.Py_ssize_t) -> object:
        """``monoid.fold`` of the ``r`` :data:`Part` rows from slot ``first``: left to right."""
        n: cython.Py_ssize_t = self.capacity
        fl: cython.bint = self._kind == _FLOAT
        acc: Part = _part_at(self._ed, self._ei, self._ec, first)
        k: cython.Py_ssize_t
        e: cython.Py_ssize_t
        for k in range(1, r):
            e = first + k
            if e >= n:
                e -= n
            acc = _wcomb(self._op, fl, acc, _part_at(self._ed, self._ei, self._ec, e))
        return self._rowp(acc)

    @cython.cfunc
    def _fold_var(self, first: cython.Py_ssize_t, r: cython.Py_ssize_t) -> object:
        """:meth:`_fold` of :data:`Var` rows."""
        n: cython.Py_ssize_t = self.capacity
        acc: Var = _var_at(self._ed, self._em, self._ec, self._ei, first)
        k: cython.Py_ssize_t
        e: cython.Py_ssize_t
        for k in range(1, r):
            e = first + k
            if e >= n:
                e -= n
            acc = _chan(acc, _var_at(self._ed, self._em, self._ec, self._ei, e))
        return self._var_partial(acc)

    @cython.cfunc
    def _rowp(self, p: Part) -> object:
        """The Python partial of a :data:`Part` row (Sum's and Mean's: see the class docstring)."""
        if not self._zero_float:
            return self._wide_partial(p.d, p.i, p.c)
        if self._kind == _FLOAT and not p.i:
            return self._zero(p.c)
        return self._partial(p.d, p.i, p.c)

    @cython.cfunc
    def _obj(self, d: cython.double[:], m: cython.double[:], i: cython.longlong[:], c: cython.longlong[:],
             k: cython.Py_ssize_t) -> object:
        """The Python partial of row ``k`` of the columns ``d``, ``m``, ``i``, ``c`` (the
        elements', the backs' or the scans')."""
        if self._rows:
            return self._rowp(_part_at(d, i, c, k))
        if self._var:
            return self._var_partial(_var_at(d, m, c, i, k))
        return self._partial(d[k], i[k], 0)

    def query(self, r: Any) -> Any:
        if r.__class__ is not int or not 0 < r <= self.capacity:
            raise self._unknown_range(r)
        k: cython.Py_ssize_t = r
        if k > self._n:
            k = self._n
        if not k:
            return self.monoid.identity
        return self._answer(k)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def answers(self) -> list:
        n: cython.Py_ssize_t = len(self._rs)
        j: cython.Py_ssize_t
        r: cython.Py_ssize_t
        out: list = [None] * n
        if not self._n:
            identity = self.monoid.identity
            for j in range(n):
                out[j] = identity
            return out
        if self._n < self.capacity:
            for j in range(n):
                r = self._rs[j]
                out[j] = self._answer(r if r <= self._n else self._n)
            return out
        # a full window: each range from its own level, combine(scan, back) (row 0 of a
        # scan is the identity, whose combine with the back is the back, bit for bit, but
        # Sum's and Mean's: ``0 + -0.0`` is 0.0)
        i: cython.Py_ssize_t
        k: cython.Py_ssize_t
        s: cython.Py_ssize_t
        for j in range(n):
            i = self._lv[j]
            k = self._rs[j] - self._bs[i]
            s = self._off[self._src[i]] + k
            if self._rows:
                out[j] = self._joined(s, i, k != 0 or self._zero_float)
            elif self._var:
                out[j] = self._joined_var(s, i, k != 0)
            elif self._kind == _FLOAT:
                out[j] = self._bd[i] if not k else _comb(self._op, self._sd[s], self._bd[i])
            else:
                out[j] = self._partial(0.0, self._bi[i] if not k else _comb(self._op, self._si[s], self._bi[i]), 0)
        return out

    def to_object(self) -> OverlaidSlideSide:
        """The object :class:`OverlaidSlideSide` in this state: the same levels, back parts,
        scans (one list per scan, shared by the levels reading it) and circular buffer."""
        twin = OverlaidSlideSide(self.monoid, self.ranges)
        identity = self.monoid.identity
        L: cython.Py_ssize_t = self._levels
        i: cython.Py_ssize_t
        k: cython.Py_ssize_t
        scans: dict = {}
        for i in range(L):
            s = self._src[i]
            if s not in scans:
                scans[s] = [identity, *(self._obj(self._sd, self._sm, self._si, self._sc, self._off[s] + k)
                                        for k in range(1, self._slen[s]))]
        twin._bs = [self._bs[i] for i in range(L)]
        twin._backs = [self._obj(self._bd, self._bm, self._bi, self._bc, i) if self._bs[i] else identity
                       for i in range(L)]
        twin._scans = [scans[self._src[i]] for i in range(L)]
        twin._elements = [self._obj(self._ed, self._em, self._ei, self._ec, k) for k in range(self._n)]
        twin._pos = self._pos
        twin._count = self._n
        return twin


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _TypedRecordMQ:
    """A twin for a :class:`~mta.monoid.Record` (:func:`_record_twin`): one field twin of
    class ``_field`` per field, in lockstep. The object aggregator over the Record combines
    (and inverts) field by field, in the order it would over each field alone (the scans
    of OverlaidSlideSide combine the older operand first, whatever the monoid), so each
    field twin's answers are that field's, and a Record answer is their tuple.

    :meth:`insert` checks every field (:meth:`_TypedMQ.fits`) before any field twin
    changes: :class:`Untyped`, nothing changed, if one cannot hold its partial (or the
    partial is not a tuple of the fields' partials); :meth:`to_object` then gives the object
    aggregator over the Record in this state, its lists the field twins' zipped."""

    monoid = cython.declare(object, visibility="public")
    ranges = cython.declare(tuple, visibility="public")
    capacity = cython.declare(cython.Py_ssize_t, visibility="public")
    _width: cython.Py_ssize_t
    _twins: list
    _inserts: list  # the field twins' bound methods

    def __init__(self, monoid: Record, ranges: Sequence[int]) -> None:
        if _record_twin(type(self).name, monoid, type(self)._overlaid) is not type(self):
            raise TypeError(f"{type(self).__name__} does not serve {monoid!r}")
        field: type = type(self)._field
        self._twins = [field(m, ranges) for m in monoid.fields.values()]
        self.monoid = monoid
        self.ranges = self._twins[0].ranges
        self.capacity = self._twins[0].capacity
        self._width = len(self._twins)
        self._inserts = [t.insert for t in self._twins]

    def insert(self, partial: Any) -> None:
        if type(partial) is not tuple or len(partial) != self._width:
            raise Untyped(partial)
        j: cython.Py_ssize_t
        t: _TypedMQ
        # the first field is inserted unchecked: it raises Untyped before it changes anything
        for j in range(1, self._width):
            t = self._twins[j]
            if not t.fits(partial[j]):
                raise Untyped(partial[j])
        for j in range(self._width):
            self._inserts[j](partial[j])

    def query(self, r: Any) -> tuple:
        return tuple([t.query(r) for t in self._twins])

    def answers(self) -> list:
        return list(zip(*[t.answers() for t in self._twins]))

    def __len__(self) -> int:
        return len(self._twins[0])

    def clear(self) -> None:
        for t in self._twins:
            t.clear()

    def to_object(self) -> MultiQueryAggregator:
        """The object aggregator over the Record in this state: each field twin's object
        aggregator gives its lists of partials (zipped into the Record's), lists of such
        lists (SlideSide's scans: one Record list per list of the first field's, shared as
        they are) and counts and positions (the first field's)."""
        fields = [t.to_object() for t in self._twins]
        twin = type(fields[0])(self.monoid, self.ranges)
        for key, how in type(self)._state:
            columns = [getattr(f, key) for f in fields]
            if how == "zip":
                value = list(zip(*columns))
            elif how == "nested":
                made: dict = {}
                value = []
                for k, first in enumerate(columns[0]):
                    if id(first) not in made:
                        made[id(first)] = list(zip(*[column[k] for column in columns]))
                    value.append(made[id(first)])
            else:
                value = columns[0]
            setattr(twin, key, value)
        return twin


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedRecordSlideSide(_TypedRecordMQ):
    """:class:`~mta.algorithms.slideside.InvertibleSlideSide` over a Record: a
    :class:`TypedSlideSide` per field."""

    name = "slideside"
    any_range = True
    _field = TypedSlideSide
    _overlaid = False
    _state = (("_elements", "zip"), ("_back", "zip"), ("_front", "zip"), ("_pos", "copy"), ("_count", "copy"))


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedRecordSlickDeque(_TypedRecordMQ):
    """:class:`~mta.algorithms.slickdeque.SlickDequeInv` over a Record: a
    :class:`TypedSlickDequeInv` per field."""

    name = "slickdeque"
    any_range = False
    _field = TypedSlickDequeInv
    _overlaid = False
    _state = (("_partials", "zip"), ("_answers", "zip"), ("_cur", "copy"), ("_size", "copy"))


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class TypedRecordOverlaidSlideSide(_TypedRecordMQ):
    """:class:`~mta.algorithms.slideside.OverlaidSlideSide` over a Record: a
    :class:`TypedOverlaidSlideSide` per field."""

    name = "slideside"
    any_range = True
    _field = TypedOverlaidSlideSide
    _overlaid = True  # served also where SlideSide is built with inverse=False
    _state = (("_bs", "copy"), ("_backs", "zip"), ("_scans", "nested"), ("_elements", "zip"), ("_pos", "copy"),
              ("_count", "copy"))


_INVERTIBLE_OPS = frozenset((SUM, MEAN, VARIANCE))
_OVERLAID_OPS = frozenset((MIN, MAX, MINCOUNT, MAXCOUNT, FIRST, LAST, ARGMIN, ARGMAX)) | _INVERTIBLE_OPS


def _record_twin(name: str, monoid: Monoid, overlaid: bool = False) -> type | None:
    """The Record twin of ``MULTI_QUERY[name](monoid, ...)`` for a Record (exact type: a
    subclass may combine otherwise), or None. The object aggregator a Record gets: Alg. 2 or
    InvertibleSlideSide when every field is invertible (Sum, Count, Mean, Variance, StdDev
    have twins), OverlaidSlideSide otherwise (a Record is never a selection; SlickDeque
    refuses it) or when ``overlaid`` (SlideSide with ``inverse=False``), whose twin needs
    every field to have a TypedOverlaidSlideSide (all of these and Min, Max, MinCount,
    MaxCount, First, Last, ArgMin, ArgMax)."""
    if type(monoid) is not Record:
        return None
    ops = {wide_op_of(m) for m in monoid.fields.values()}
    if ops <= _INVERTIBLE_OPS and not overlaid:
        return _RECORD_TWINS.get(name)
    if ops <= _OVERLAID_OPS and name == "slideside":
        return TypedRecordOverlaidSlideSide
    return None


for _cls in (TypedSlideSide, TypedOverlaidSlideSide, TypedSlickDeque, TypedSlickDequeInv, TypedRecordSlideSide,
             TypedRecordSlickDeque, TypedRecordOverlaidSlideSide):
    MultiQueryAggregator.register(_cls)

#: (MULTI_QUERY name, op) -> the twin of the object aggregator that name builds for the op
_TWINS: dict[tuple[str, int], type] = {
    ("slideside", SUM): TypedSlideSide, ("slideside", MEAN): TypedSlideSide, ("slideside", VARIANCE): TypedSlideSide,
    ("slideside", MIN): TypedOverlaidSlideSide, ("slideside", MAX): TypedOverlaidSlideSide,
    ("slickdeque", MIN): TypedSlickDeque, ("slickdeque", MAX): TypedSlickDeque,
    ("slickdeque", SUM): TypedSlickDequeInv, ("slickdeque", MEAN): TypedSlickDequeInv,
    ("slickdeque", VARIANCE): TypedSlickDequeInv,
    **{("slideside", op): TypedOverlaidSlideSide for op in (MINCOUNT, MAXCOUNT, FIRST, LAST, ARGMIN, ARGMAX)},
    **{("slickdeque", op): TypedSlickDeque for op in (FIRST, LAST, ARGMIN, ARGMAX)},
}

#: MULTI_QUERY name -> the twin for a Record of invertible fields with twins (:func:`_record_twin`)
_RECORD_TWINS: dict[str, type] = {"slideside": TypedRecordSlideSide, "slickdeque": TypedRecordSlickDeque}

#: The largest range a twin serves: it allocates its columns for the largest range up front,
#: where the object aggregators grow with what they hold.
MAX_CAPACITY = 2 ** 22


def twin(name: str, monoid: Monoid, ranges: Sequence[int], *, inverse: bool | None = None) -> type | None:
    """The typed twin of ``MULTI_QUERY[name](monoid, ranges)`` (with SlideSide's ``inverse``
    when not None: False builds the overlaid variant for any monoid, as the shared final does
    once it may not subtract; True the invertible one), or None when there is none (or the
    ranges are not positive ints up to :data:`MAX_CAPACITY`: the object aggregator then
    refuses them, or grows as it fills)."""
    cls: Any
    if inverse is not None and name != "slideside":
        return None  # the object aggregator takes no ``inverse``
    overlaid = inverse is False
    if type(monoid) is Record:
        cls = _record_twin(name, monoid, overlaid)
    else:
        op = wide_op_of(monoid)
        if op is None:
            cls = None
        elif overlaid:
            cls = TypedOverlaidSlideSide if op in _OVERLAID_OPS else None
        else:
            cls = _TWINS.get((name, op))
    if cls is None or (inverse and cls is not TypedSlideSide and cls is not TypedRecordSlideSide):
        return None
    try:
        fits = max(check_ranges(ranges)) <= MAX_CAPACITY
    except (TypeError, ValueError):
        return None
    return cls if fits else None
