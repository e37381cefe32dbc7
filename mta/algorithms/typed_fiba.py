"""Typed FiBA (issue 20): :class:`~mta.algorithms.fiba.FiBA`, the finger B-tree aggregator,
for the built-in monoids Sum, Count, Min, Max, Mean, MinCount, MaxCount, First, Last,
Variance, StdDev, ArgMin and ArgMax, with keys and partials in typed columns (C int64 or
doubles) instead of Python objects. In Cython's pure-Python
mode: compiled, the nodes are C extension types; without a compiler the same file runs
as (slow) Python.

It is a twin, not a cousin: the same nodes (arity, splits, merges, rotations, bulk-evict
cuts), the same position-dependent aggregates, the left finger's suffix folds, and every
combine in the order FiBA does it (its leaf folds included: ``Min.fold`` takes ``min()``
and then combines, which is the left fold for numbers that are not NaN). So float
results are bit for bit FiBA's, and :meth:`TypedFiBA.to_object` hands over a FiBA in the
same state, node for node, whose every later result is what one that had seen the same
operations gives. Even the undo journal (:meth:`snapshot`, :meth:`restore`) is FiBA's:
undoing re-inserts, which shapes the tree as it shapes FiBA's.

What it holds: keys all exactly ``int`` (int64) or all exactly ``float`` (not NaN);
partials all ``int`` (int64) or all ``float`` (not NaN), Mean's as ``(sum, count)`` with
an int count in ``[0, 2**32)``, Count's ints only. First and Last: values of one of those
kinds, NaN included (never compared). ArgMin and ArgMax: ``(value, key)`` with the value
as Min's and the key all exactly ``int`` (int64) or all exactly ``float`` (never compared:
kept as bits). Variance and StdDev: ``(count, mean, M2)`` as ``_chan`` merges them, count-1
partials as ``lift`` gives them (``(1, v, 0)``, the mean all ``float`` or all ``int`` of
magnitude at most 2**25, so that C doubles compute Chan's merge as Python does, deltas
squared exact) and merged ones with a count in ``[2, 2**32)`` and float mean and M2 (of
either kind: they keep the tree's). The kinds are chosen by the first entry of an empty
tree. Anything else raises :class:`~mta.algorithms.typed.Untyped`
before anything changes (a caller demotes to :meth:`to_object`). INT bound, as in
``mta.algorithms.typed``: for Sum, Count and Mean of ints the sum of ``|v|`` over the
entries stays at most ``2**63 - 1``, so no aggregate can overflow (an insertion that could
break it raises Untyped). That sum is kept exactly: a bulk eviction subtracts the
evicted entries' ``|v|`` in a C loop over them (amortized O(1) per entry, and only for
int sums; the cut itself stays O(log n)).

Storage: a node is an extension type with three C arrays of int64 (keys, values, and the
counts of Mean, MinCount, MaxCount and Variance, or ArgMin's keys in partials) of room for
FiBA's largest node at ``min_arity`` 16 and one entry over (so ``min_arity`` is at most 16
here: ValueError beyond); Variance's nodes have a fifth, for M2 (:class:`_TNodeX`), and
only theirs, after the pair keys' second column (see below), which they carry too. A partial in C (``Part``) is three fields whatever the op: a value ``d``
(double) or ``i`` (int64) and ``c``; First and Last mark their identity by ``c == -1``,
ArgMin and ArgMax theirs (None) by ``-1`` in the value field their kind leaves unused
(``i`` for FLOAT, ``d`` for INT), Variance's is count 0, its mean in ``d``, M2's bits in
``i``. A float value is stored as its bits; a
float key as an int64 in the same order (its bits, the magnitude flipped for a negative),
so that entries move between nodes as bits and keys compare as ints whatever their kind.
A -0.0 key is refused (Untyped): as a key it is 0.0, and it would read back as 0.0. Lookups
(``evict``, ``evict_upto``, ``query_range``, ``entries``) with a key of the other kind raise
Untyped too. Pair keys (``TypedFiBA(..., pairs=True)``, the out-of-order window's
``(timestamp, arrival)``): a key of either kind and an int64, compared as pairs, the second
part in a fourth column (:class:`_TNodeA`: only these trees' nodes, and Variance's, have
it; comparisons look at it only on equal first parts). The left finger's suffix folds are kept once, by the tree: only the left
finger ever has them (a node that stops being the left finger has left the tree).
No Python object per entry and two per node (the node, its children list): interpreted,
the arrays are lists and the values are unpacked with ``struct``, hence (slow) Python.
"""

from __future__ import annotations

import math
import struct
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Optional

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

from mta.algorithms.fiba import FiBA, _NEW, _Node
from mta.algorithms.typed import (_NO_DOUBLES, _NO_INT64S, ARGMAX, ARGMIN, FIRST, LAST, MAX, MAXCOUNT, MEAN, MIN, MINCOUNT,
                                  SUM, VARIANCE, Untyped, liftable, serves, wide_op_of)
from mta.monoid import Count, Monoid

COMPILED: bool = cython.compiled

__all__ = ["TypedFiBA", "Untyped"]

# A partial or aggregate: ``d`` (FLOAT kind) or ``i`` (INT kind), ``c`` a Mean's count; First,
# Last, Variance, ArgMin and ArgMax use the fields otherwise (see the module docstring).
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
#: The entry columns beyond keys and values an op uses (``_TNode.c``, ``_TNodeX.x``: Variance's M2).
_C = cython.declare(cython.int, 1)
_X = cython.declare(cython.int, 2)
#: The second key column (``_TNodeA.a``) of a tree with pair keys.
_A = cython.declare(cython.int, 4)
#: Largest sum of |v| over an INT-kind tree of SUM or MEAN partials.
LIMIT = cython.declare(cython.ulonglong, 2**63 - 1)
INT64_MAX = cython.declare(cython.longlong, 2**63 - 1)
INT64_MIN = cython.declare(cython.longlong, -INT64_MAX - 1)
#: Variance's int means: at most this magnitude (its C arithmetic is then the object one's, exactly).
_VAR_INT = cython.declare(cython.longlong, 2**25)
#: Room in a node: FiBA's largest (min_arity 16: 31 entries) and one over before it splits.
MAX_ARITY = cython.declare(cython.Py_ssize_t, 16)
CAP = cython.declare(cython.Py_ssize_t, 33)
_Bits = cython.union(d=cython.double, i=cython.longlong)
_D = struct.Struct("d")
_Q = struct.Struct("q")
_COUNT_HI = 2**32


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _abs64(v: cython.longlong) -> cython.ulonglong:
    """|v| as an unsigned 64-bit int (2^63 for -2^63). (typed_amta has the same: a cfunc is
    not shared between compiled modules without a .pxd.)"""
    if v < 0:
        return cython.cast(cython.ulonglong, -(v + 1)) + 1
    return cython.cast(cython.ulonglong, v)


@cython.cfunc
def _int64(x: object) -> cython.longlong:
    """An int as an int64; Untyped beyond."""
    if cython.compiled:
        try:
            return x
        except OverflowError:
            raise Untyped(f"an int outside int64: {x!r}") from None
    if not -2**63 <= x < 2**63:
        raise Untyped(f"an int outside int64: {x!r}")
    return x


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _bits(x: cython.double) -> cython.longlong:
    """The bits of a double, as an int64."""
    if cython.compiled:
        u: _Bits
        u.d = x
        return u.i
    return _Q.unpack(_D.pack(x))[0]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _double(x: cython.longlong) -> cython.double:
    """The double of these bits."""
    if cython.compiled:
        u: _Bits
        u.i = x
        return u.d
    return _D.unpack(_Q.pack(x))[0]


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _fkey(x: cython.double) -> cython.longlong:
    """A float key as an int64 in the same order (not NaN; -0.0 only for a lookup: it is
    0.0's): its bits, the magnitude bits flipped for a negative."""
    b: cython.longlong = _bits(x + 0.0)  # -0.0 + 0.0 is 0.0
    return b ^ INT64_MAX if b < 0 else b


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _unfkey(b: cython.longlong) -> cython.double:
    return _double(b ^ INT64_MAX if b < 0 else b)


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _TNode:
    """A node of :class:`TypedFiBA`: FiBA's ``_Node`` with its entries in C arrays.

    Entry ``j < n``: key ``k[j]`` (see :func:`_fkey`), value ``v[j]`` (an int64, or the bits
    of a double) and, for Mean, MinCount, MaxCount and Variance, count ``c[j]`` (ArgMin and
    ArgMax: the key in the partial; Variance's M2 is in a :class:`_TNodeX`'s ``x``).
    ``children`` a list (None for a leaf), ``agg`` and ``size`` as FiBA's
    (position-dependent); ``suffixed``: FiBA's ``suffix`` is not None (the left finger's
    suffix folds, ``slen`` of them, kept by the tree)."""

    n: cython.Py_ssize_t
    k: cython.longlong[33]  # CAP
    v: cython.longlong[33]
    c: cython.longlong[33]
    children: list
    parent: _TNode
    agg: Part
    size: cython.Py_ssize_t
    left: cython.bint
    right: cython.bint
    suffixed: cython.bint
    slen: cython.Py_ssize_t

    def __init__(self) -> None:
        if not cython.compiled:
            self.k, self.v, self.c = [0] * CAP, [0] * CAP, [0] * CAP
        self.n = 0
        self.children = None
        self.parent = None
        self.size = 0
        self.left = self.right = self.suffixed = False
        self.slen = 0


@cython.cfunc
@cython.cdivision(True)
@cython.exceptval(check=False)
def _chan(a: Part, b: Part) -> Part:
    """``mta.monoid._chan`` of two Variance partials (count ``c``, mean ``d``, M2's bits ``i``),
    its operations in its order: ``n`` and the counts as doubles (exact below 2**53)."""
    if a.c == 0:
        return b
    if b.c == 0:
        return a
    n: cython.longlong = a.c + b.c
    dn: cython.double = cython.cast(cython.double, n)
    na: cython.double = cython.cast(cython.double, a.c)
    nb: cython.double = cython.cast(cython.double, b.c)
    delta: cython.double = b.d - a.d
    return Part(d=a.d + (delta * nb) / dn, c=n,
                i=_bits((_double(a.i) + _double(b.i)) + (((delta * delta) * na) * nb) / dn))


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _TNodeA(_TNode):
    """A :class:`_TNode` with a second key column, ``a[j]``: entry ``j``'s key is the pair
    ``(k[j], a[j])``. Only trees with pair keys have it (and Variance's, through
    :class:`_TNodeX`), so the other trees' nodes are not bigger."""

    a: cython.longlong[33]  # CAP

    def __init__(self) -> None:
        super().__init__()
        if not cython.compiled:
            self.a = [0] * CAP


@cython.final
@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
class _TNodeX(_TNodeA):
    """A :class:`_TNodeA` with one more int64 column, ``x[j]``: Variance's M2 (bits of a
    double). Only Variance's trees have it, so the other ops' nodes are not bigger."""

    x: cython.longlong[33]  # CAP

    def __init__(self) -> None:
        super().__init__()
        if not cython.compiled:
            self.x = [0] * CAP


@cython.cfunc
@cython.inline
def _child(node: _TNode, i: cython.Py_ssize_t) -> _TNode:
    return node.children[i]


@cython.cfunc
@cython.inline
def _last_child(node: _TNode) -> _TNode:
    return node.children[len(node.children) - 1]


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _shift(node: _TNode, i: cython.Py_ssize_t, by: cython.Py_ssize_t, cols: cython.int) -> cython.int:
    """Move entries ``i ..`` of ``node`` by ``by`` places (right if positive); ``n`` follows.
    ``cols``: the node's columns beyond keys and values (``_C``, with ``_X`` for
    Variance; ``_A``: pair keys)."""
    n: cython.Py_ssize_t = node.n
    j: cython.Py_ssize_t
    if cols & (_X | _A):
        _shift_xa(node, i, by, cols)
    if by > 0:
        for j in range(n - 1, i - 1, -1):
            node.k[j + by] = node.k[j]
            node.v[j + by] = node.v[j]
            if cols & _C:
                node.c[j + by] = node.c[j]
    elif by < 0:
        for j in range(i, n):
            node.k[j + by] = node.k[j]
            node.v[j + by] = node.v[j]
            if cols & _C:
                node.c[j + by] = node.c[j]
    node.n = n + by
    return 0


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _shift_xa(node: _TNode, i: cython.Py_ssize_t, by: cython.Py_ssize_t, cols: cython.int) -> cython.int:
    """:func:`_shift` of the ``x`` and ``a`` columns (out of line: the other trees' shifts stay small)."""
    if cols & _X:
        _move(cython.cast(_TNodeX, node).x, i, node.n, by)
    if cols & _A:
        _move(cython.cast(_TNodeA, node).a, i, node.n, by)
    return 0


@cython.cfunc
@cython.inline
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _move(column: cython.p_longlong, i: cython.Py_ssize_t, n: cython.Py_ssize_t, by: cython.Py_ssize_t) -> cython.int:
    """Entries ``i .. n - 1`` of a node's ``column`` moved by ``by`` places (right if positive)."""
    j: cython.Py_ssize_t
    if by > 0:
        for j in range(n - 1, i - 1, -1):
            column[j + by] = column[j]
    elif by < 0:
        for j in range(i, n):
            column[j + by] = column[j]
    return 0


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _copy(src: _TNode, s: cython.Py_ssize_t, dst: _TNode, t: cython.Py_ssize_t, m: cython.Py_ssize_t,
          cols: cython.int) -> cython.int:
    """Entries ``s .. s + m - 1`` of ``src`` to places ``t ..`` of another node (bits)."""
    j: cython.Py_ssize_t
    if cols & (_X | _A):
        _copy_xa(src, s, dst, t, m, cols)
    for j in range(m):
        dst.k[t + j] = src.k[s + j]
        dst.v[t + j] = src.v[s + j]
        if cols & _C:
            dst.c[t + j] = src.c[s + j]
    return 0


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _copy_xa(src: _TNode, s: cython.Py_ssize_t, dst: _TNode, t: cython.Py_ssize_t, m: cython.Py_ssize_t,
             cols: cython.int) -> cython.int:
    """:func:`_copy` of the ``x`` and ``a`` columns."""
    j: cython.Py_ssize_t
    if cols & _X:
        for j in range(m):
            cython.cast(_TNodeX, dst).x[t + j] = cython.cast(_TNodeX, src).x[s + j]
    if cols & _A:
        for j in range(m):
            cython.cast(_TNodeA, dst).a[t + j] = cython.cast(_TNodeA, src).a[s + j]
    return 0


@cython.cclass
@cython.binding(False)  # builtin methods: cheaper to call than CyFunctions
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.initializedcheck(False)
class TypedFiBA:
    """FiBA over typed columns for Sum, Count, Min, Max, Mean, MinCount, MaxCount, First, Last,
    Variance, StdDev, ArgMin and ArgMax (see the module docstring): amortized O(log d)
    insert and evict at distance d from either end, O(1) query, O(log n) bulk eviction,
    range queries, prefix search."""

    name = FiBA.name
    uses_store = False
    monoid = cython.declare(object, visibility="public")
    hold = cython.declare(cython.bint, visibility="public")
    min_arity = cython.declare(cython.Py_ssize_t, visibility="readonly")

    _max_keys: cython.Py_ssize_t
    _min_keys: cython.Py_ssize_t
    _op: cython.int
    _mean: cython.bint        # partials are pairs (value, count): Mean, MinCount, MaxCount
    _cols: cython.int         # the entry columns beyond keys and values: _C, _X
    _ncols: cython.int        # the node's: _cols, and _A for pair keys
    _pairs: cython.bint       # keys are pairs (k, a): the second an int64 in column a
    _lower: cython.bint       # result() is monoid.lower(query())
    _count: cython.bint
    _float: cython.bint       # values' kind: FLOAT (doubles) or INT (int64)
    _dbl: cython.bint         # the value column holds doubles (FLOAT kind; Variance's means)
    _kfloat: cython.bint      # keys' kind
    _xfloat: cython.bint      # ArgMin / ArgMax: the kind of the keys in their partials
    _track: cython.bint       # INT kind of SUM or MEAN: the sum of |v| is kept
    _magnitude: cython.ulonglong
    _identity: Part
    _root: _TNode
    _lf: _TNode               # the left finger
    _rf: _TNode               # the right finger
    _journal: object          # FiBA's undo journal (None: no batch may be undone)
    # scratch
    _vkind: cython.bint       # the kind of the partial _decode last read
    _vany: cython.bint        # ... or it fits either kind (a Variance partial of count >= 2)
    _xkind: cython.bint       # the kind of the ArgMin / ArgMax partial's key _decode last read
    _qkind: cython.bint       # the kind of the key _key_in last read
    _q: cython.longlong       # that key (as stored: _fkey of a float) ...
    _qa: cython.longlong      # ... and its second part (pair keys)
    _sv: cython.longlong[33]  # the left finger's suffix folds (FiBA's suffix[r]): values ...
    _sc: cython.longlong[33]  # ... Mean counts ...
    _sx: cython.longlong[33]  # ... and Variance's M2
    _sowner: _TNode           # the node whose folds they are
    _top: _TNode              # what a rebalancing returns: top node, spines hit
    _hl: cython.bint
    _hr: cython.bint
    _hit: cython.bint         # a range query met an entry

    def __init__(self, monoid: Monoid, *, min_arity: int = 16, pairs: bool = False) -> None:
        op = wide_op_of(monoid) if serves(monoid) else None
        if op is None:
            raise TypeError("TypedFiBA serves Sum, Count, Min, Max, Mean, MinCount, MaxCount, First, Last, "
                            f"Variance, StdDev, ArgMin and ArgMax, not {monoid!r}")
        if isinstance(min_arity, bool) or not isinstance(min_arity, int) or min_arity < 2:
            raise ValueError(f"min_arity must be an int >= 2, got {min_arity!r}")
        if min_arity > MAX_ARITY:
            raise ValueError(f"TypedFiBA's nodes hold min_arity <= {MAX_ARITY}, got {min_arity}")
        self.monoid = monoid
        self.hold = False
        self.min_arity = min_arity
        self._max_keys = 2 * min_arity - 1
        self._min_keys = min_arity - 1
        self._op = op
        self._mean = op == _MEAN or op == _MINCOUNT or op == _MAXCOUNT
        self._cols = ((_C if self._mean or op == _VARIANCE or op == _ARGMIN or op == _ARGMAX else 0)
                      | (_X if op == _VARIANCE else 0))
        self._pairs = pairs
        self._ncols = self._cols | (_A if pairs else 0)
        self._lower = self._mean or op >= _FIRST
        self._count = type(monoid) is Count
        self._journal = None
        self._kfloat = self._vkind = self._qkind = self._hl = self._hr = self._hit = False
        self._xfloat = self._xkind = self._vany = False
        self._q = self._qa = 0
        self._sowner = None
        if not cython.compiled:
            self._sv, self._sc, self._sx = [0] * CAP, [0] * CAP, [0] * CAP
        self._top = None
        self._set_kind(True)
        self._reset()

    @cython.cfunc
    def _set_kind(self, kind: cython.bint) -> cython.int:
        """Values of FLOAT (True) or INT kind; only while the tree is empty."""
        op: cython.int = self._op
        self._float = kind
        self._dbl = kind or op == _VARIANCE
        self._track = not kind and (op == _SUM or op == _MEAN)
        self._magnitude = 0
        # the identity's arithmetic (its type is monoid.identity's; see _enc)
        if op == _MIN or op == _MINCOUNT:
            self._identity = Part(d=math.inf, i=INT64_MAX, c=0)
        elif op == _MAX or op == _MAXCOUNT:
            self._identity = Part(d=-math.inf, i=INT64_MIN, c=0)
        elif op == _FIRST or op == _LAST:
            self._identity = Part(d=0.0, i=0, c=-1)  # _EMPTY: marked by c == -1
        elif op == _ARGMIN or op == _ARGMAX:  # None: marked in the field the kind's values leave unused
            self._identity = Part(d=-1.0, i=-1, c=0)
        else:  # Variance's: count 0
            self._identity = Part(d=0.0, i=0, c=0)
        return 0

    def _reset(self) -> None:
        self._sowner = None
        self._root = self._new()
        self._lf = self._rf = self._root

    @cython.cfunc
    def _new(self) -> _TNode:
        node: _TNode = _TNodeX() if self._cols & _X else _TNodeA() if self._pairs else _TNode()
        node.agg = self._identity
        return node

    # -- partials and keys in and out -------------------------------------------------------

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _comb(self, a: Part, b: Part) -> Part:
        """The monoid's combine(a, b), as the object FiBA computes it (an identity operand
        computes as the monoid's identity does: ``0 + x``, ``min(inf, x)``)."""
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
        if op == _MEAN:
            if self._float:
                return Part(d=a.d + b.d, i=0, c=a.c + b.c)
            return Part(d=0.0, i=a.i + b.i, c=a.c + b.c)
        return self._comb_wide(a, b)  # out of line: the ops above stay small enough to inline

    @cython.cfunc
    @cython.exceptval(check=False)
    def _comb_wide(self, a: Part, b: Part) -> Part:
        """:meth:`_comb` of MinCount, MaxCount, First, Last, ArgMin, ArgMax and Variance."""
        op: cython.int = self._op
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
        if op == _FIRST:  # _first: the left operand unless it is the identity
            return b if a.c < 0 else a
        if op == _LAST:
            return a if b.c < 0 else b
        if op == _ARGMIN or op == _ARGMAX:  # the identity gives way; ties keep the left operand
            if self._float:
                if a.i < 0 or b.i < 0:
                    return b if a.i < 0 else a
                if op == _ARGMIN:
                    return a if a.d <= b.d else b
                return a if a.d >= b.d else b
            if a.d < 0.0 or b.d < 0.0:
                return b if a.d < 0.0 else a
            if op == _ARGMIN:
                return a if a.i <= b.i else b
            return a if a.i >= b.i else b
        return _chan(a, b)

    @cython.cfunc
    def _decode(self, partial: object) -> Part:
        """``partial`` as a Part, its kind in ``_vkind`` (``_vany``: either kind), its key's
        (ArgMin, ArgMax) in ``_xkind``; Untyped if it does not fit a column."""
        op: cython.int = self._op
        value: object = partial
        c: cython.longlong = 0
        self._vany = False
        if op == _VARIANCE:
            return self._decode_variance(partial)
        if op == _ARGMIN or op == _ARGMAX:
            if type(partial) is not tuple or len(partial) != 2:
                raise Untyped(f"not a (value, key) partial: {partial!r}")
            value = partial[0]
            key: object = partial[1]
            if type(key) is float:
                c = _bits(key)
                self._xkind = True
            elif type(key) is int:
                c = _int64(key)
                self._xkind = False
            else:
                raise Untyped(f"an ArgMin / ArgMax key that is not exactly an int or a float: {key!r}")
        if self._mean:
            if type(partial) is not tuple or len(partial) != 2:
                raise Untyped(f"not a (value, count) partial: {partial!r}")
            value = partial[0]
            count: object = partial[1]
            if type(count) is not int or not 0 <= count < _COUNT_HI:
                raise Untyped(f"a count must be an int in [0, 2**32), got {count!r}")
            c = count
        if type(value) is float:
            x: cython.double = value
            if self._count:
                raise Untyped("Count partials are ints")
            if x != x and op != _FIRST and op != _LAST:  # (First and Last never compare values)
                raise Untyped("NaN")  # Min.fold's min() and the left fold differ on it
            if self._op != _MEAN and self._mean and not -math.inf < x < math.inf:
                raise Untyped("MinCount / MaxCount take finite values (as their lift)")
            self._vkind = True
            return Part(d=x, i=0, c=c)
        if type(value) is not int:
            raise Untyped(f"not an int or a float: {value!r}")
        self._vkind = False
        return Part(d=0.0, i=_int64(value), c=c)

    @cython.cfunc
    def _decode_variance(self, partial: object) -> Part:
        """A Variance partial ``(count, mean, M2)``: count 1 as its lift gives it (``(1, v,
        0)``, M2 the int 0; ``v`` a float, FLOAT kind, or an int of magnitude at most 2**25,
        INT kind), or a count in ``[2, 2**32)`` with a float mean and M2 (either kind)."""
        if type(partial) is not tuple or len(partial) != 3:
            raise Untyped(f"not a (count, mean, M2) partial: {partial!r}")
        count: object = partial[0]
        mean: object = partial[1]
        m2: object = partial[2]
        if type(count) is not int or not 1 <= count < _COUNT_HI:
            raise Untyped(f"a Variance count must be an int in [1, 2**32), got {count!r}")
        if count == 1:
            if type(m2) is not int or m2 != 0:
                raise Untyped(f"a Variance partial of count 1 has M2 the int 0, got {m2!r}")
            if type(mean) is float:
                self._vkind = True
                return Part(d=mean, i=0, c=1)
            if type(mean) is not int or not -_VAR_INT <= mean <= _VAR_INT:
                raise Untyped(f"Variance takes ints of magnitude at most 2**25 typed, got {mean!r}")
            self._vkind = False
            return Part(d=cython.cast(cython.double, cython.cast(cython.longlong, mean)), i=0, c=1)
        if type(mean) is not float or type(m2) is not float:
            raise Untyped(f"a Variance partial of count >= 2 has a float mean and M2, got {partial!r}")
        self._vkind = self._float
        self._vany = True
        return Part(d=mean, i=_bits(m2), c=count)

    @cython.cfunc
    def _enc(self, p: Part) -> object:
        op: cython.int = self._op
        if op >= _FIRST:
            return self._enc_wide(p)
        value: object = p.d if self._float else p.i
        return (value, p.c) if self._mean else value

    @cython.cfunc
    def _enc_wide(self, p: Part) -> object:
        """:meth:`_enc` of First, Last, Variance, ArgMin and ArgMax: the identity as the
        monoid's own object."""
        op: cython.int = self._op
        if op == _VARIANCE:
            if p.c == 0:
                return self.monoid.identity
            if p.c == 1:  # as lift gives it: the mean of the window's kind, M2 the int 0
                return (1, p.d if self._float else cython.cast(cython.longlong, p.d), 0)
            return (p.c, p.d, _double(p.i))
        if op == _FIRST or op == _LAST:
            if p.c < 0:
                return self.monoid.identity
            return p.d if self._float else p.i
        if (p.i < 0) if self._float else (p.d < 0.0):  # ArgMin / ArgMax's identity
            return None
        return (p.d if self._float else p.i, _double(p.c) if self._xfloat else p.c)

    @cython.cfunc
    def _agg_of(self, node: _TNode) -> object:
        """A node's aggregate as FiBA holds it: the monoid's identity when it covers nothing."""
        return self._enc(node.agg) if node.size else self.monoid.identity

    @cython.cfunc
    def _key_in(self, key: object) -> cython.int:
        """Read ``key`` into ``_q`` (a pair's second part into ``_qa``), its kind into
        ``_qkind``; Untyped if no column holds it (not exactly an int or a float, NaN,
        beyond int64; for pair keys: not a pair of such a key and an int64)."""
        x: cython.double
        if self._pairs:
            if type(key) is not tuple or len(key) != 2 or type(key[1]) is not int:
                raise Untyped(f"not a (key, int) pair: {key!r}")
            self._qa = _int64(key[1])
            key = key[0]
        if type(key) is float:
            x = key
            if x != x:
                raise Untyped("a NaN key")
            self._q = _fkey(x)
            self._qkind = True
            return 0
        if type(key) is not int:
            raise Untyped(f"not an int or a float key: {key!r}")
        self._q = _int64(key)
        self._qkind = False
        return 0

    @cython.cfunc
    def _lookup(self, key: object) -> cython.int:
        """:meth:`_key_in` for a key compared with the tree's (not empty): of their kind."""
        self._key_in(key)
        if self._qkind != self._kfloat:
            raise Untyped(f"a key of the other kind: {key!r}")
        return 0

    @cython.cfunc
    def _key(self, node: _TNode, j: cython.Py_ssize_t) -> object:
        key: object = _unfkey(node.k[j]) if self._kfloat else node.k[j]
        if self._pairs:
            return (key, cython.cast(_TNodeA, node).a[j])
        return key

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _ka(self, node: _TNode, j: cython.Py_ssize_t) -> cython.longlong:
        """The second part of key ``j`` (0 when keys are not pairs)."""
        return cython.cast(_TNodeA, node).a[j] if self._pairs else 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _val(self, node: _TNode, j: cython.Py_ssize_t) -> Part:
        # (every op with columns beyond keys and values has _C; Variance's M2 goes in i)
        cols: cython.int = self._cols
        if self._dbl:
            if not cols:
                return Part(d=_double(node.v[j]), i=0, c=0)
            return Part(d=_double(node.v[j]), i=cython.cast(_TNodeX, node).x[j] if cols & _X else 0, c=node.c[j])
        return Part(d=0.0, i=node.v[j], c=node.c[j] if cols else 0)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _setv(self, node: _TNode, j: cython.Py_ssize_t, p: Part) -> cython.int:
        node.v[j] = _bits(p.d) if self._dbl else p.i
        if self._cols:
            node.c[j] = p.c
            if self._cols & _X:
                cython.cast(_TNodeX, node).x[j] = p.i
        return 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _suf(self, r: cython.Py_ssize_t) -> Part:
        cols: cython.int = self._cols
        if self._dbl:
            if not cols:
                return Part(d=_double(self._sv[r]), i=0, c=0)
            return Part(d=_double(self._sv[r]), i=self._sx[r] if cols & _X else 0, c=self._sc[r])
        return Part(d=0.0, i=self._sv[r], c=self._sc[r] if cols else 0)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _setsuf(self, r: cython.Py_ssize_t, p: Part) -> cython.int:
        self._sv[r] = _bits(p.d) if self._dbl else p.i
        if self._cols:
            self._sc[r] = p.c
            if self._cols & _X:
                self._sx[r] = p.i
        return 0

    # key comparisons: entry j of node against the key (q) of the tree's kind

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _klt(self, node: _TNode, j: cython.Py_ssize_t, q: cython.longlong, qa: cython.longlong) -> cython.bint:
        """keys[j] < (q, qa)"""
        return node.k[j] < q or (self._pairs and node.k[j] == q and cython.cast(_TNodeA, node).a[j] < qa)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _kgt(self, node: _TNode, j: cython.Py_ssize_t, q: cython.longlong, qa: cython.longlong) -> cython.bint:
        """keys[j] > (q, qa)"""
        return node.k[j] > q or (self._pairs and node.k[j] == q and cython.cast(_TNodeA, node).a[j] > qa)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _keq(self, node: _TNode, j: cython.Py_ssize_t, q: cython.longlong, qa: cython.longlong) -> cython.bint:
        return node.k[j] == q and (not self._pairs or cython.cast(_TNodeA, node).a[j] == qa)

    @cython.cfunc
    @cython.exceptval(check=False)
    def _bisect_left(self, node: _TNode, q: cython.longlong, qa: cython.longlong) -> cython.Py_ssize_t:
        lo: cython.Py_ssize_t = 0
        hi: cython.Py_ssize_t = node.n
        mid: cython.Py_ssize_t
        while lo < hi:
            mid = (lo + hi) // 2
            if self._klt(node, mid, q, qa):
                lo = mid + 1
            else:
                hi = mid
        return lo

    @cython.cfunc
    @cython.exceptval(check=False)
    def _bisect_right(self, node: _TNode, q: cython.longlong, qa: cython.longlong) -> cython.Py_ssize_t:
        lo: cython.Py_ssize_t = 0
        hi: cython.Py_ssize_t = node.n
        mid: cython.Py_ssize_t
        while lo < hi:
            mid = (lo + hi) // 2
            if self._kgt(node, mid, q, qa):
                hi = mid
            else:
                lo = mid + 1
        return lo

    @cython.cfunc
    @cython.exceptval(check=False)
    def _put_entry(self, node: _TNode, i: cython.Py_ssize_t, p: Part) -> cython.int:
        """Insert the scratch key with value ``p`` at entry ``i`` of ``node``."""
        _shift(node, i, 1, self._ncols)
        node.k[i] = self._q
        if self._pairs:
            cython.cast(_TNodeA, node).a[i] = self._qa
        self._setv(node, i, p)
        return 0

    # -- aggregates (FiBA._recalc and friends) ----------------------------------------------

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def _has_up(self, node: _TNode) -> cython.bint:
        return not (node.parent is None or node.left or node.right)

    @cython.cfunc
    def _recalc(self, node: _TNode) -> cython.int:
        """FiBA._recalc: ``node.agg`` and ``node.size`` from its entries, its children and,
        for a spine node, its parent (up, inner, left and right aggregates)."""
        n: cython.Py_ssize_t = node.n
        size: cython.Py_ssize_t = n
        agg: Part
        j: cython.Py_ssize_t
        r: cython.Py_ssize_t
        child: _TNode
        parent: _TNode = node.parent
        if node.children is None:
            if node is self._lf and n:
                if self._sowner is not None and self._sowner is not node:
                    self._sowner.suffixed = False  # (a former left finger: never one again)
                self._sowner = node
                agg = self._val(node, n - 1)
                self._setsuf(0, agg)
                for r in range(1, n):
                    agg = self._comb(self._val(node, n - 1 - r), agg)
                    self._setsuf(r, agg)
                node.slen = n
                node.suffixed = True
            else:  # monoid.fold(identity, values)
                agg = self._identity
                for j in range(n):
                    agg = self._comb(agg, self._val(node, j))
        else:  # inner: v0 c1 v1 c2 ... c[m-1] v[m-1]
            agg = self._val(node, 0) if n else self._identity
            for j in range(1, n):
                child = _child(node, j)
                agg = self._comb(self._comb(agg, child.agg), self._val(node, j))
                size += child.size
        if not (parent is None or node.left or node.right):  # up
            if node.children is not None:
                first: _TNode = _child(node, 0)
                if len(node.children) == 1:
                    agg = first.agg
                    size = first.size
                else:
                    last: _TNode = _last_child(node)
                    agg = self._comb(self._comb(first.agg, agg), last.agg)
                    size += first.size + last.size
        elif parent is None or (node.left and node.right):
            pass  # inner (a node on both spines only exists while the root has one child)
        elif node.left:
            if node.children is not None:
                child = _last_child(node)
                agg = self._comb(agg, child.agg)
                size += child.size
            if parent.parent is not None:
                agg = self._comb(agg, parent.agg)
                size += parent.size
        else:
            if node.children is not None:
                child = _child(node, 0)
                agg = self._comb(child.agg, agg)
                size += child.size
            if parent.parent is not None:
                agg = self._comb(parent.agg, agg)
                size += parent.size
        node.agg = agg
        node.size = size
        return 0

    @cython.cfunc
    @cython.inline
    def _recalc_if_up(self, node: _TNode) -> cython.int:
        if not (node.parent is None or node.left or node.right):
            self._recalc(node)
        return 0

    @cython.cfunc
    def _repair(self, top: _TNode, hit_left: cython.bint, hit_right: cython.bint) -> cython.int:
        """FiBA._repair (Fig. 7, repairAggs)."""
        node: _TNode
        if self._has_up(top):
            while self._has_up(top):
                top = top.parent
                self._recalc(top)
        else:
            self._recalc(top)
        root: cython.bint = top.parent is None
        if top.left or (hit_left and root):
            node = top
            while node.children is not None:
                node = _child(node, 0)
                self._recalc(node)
        if top.right or (hit_right and root):
            node = top
            while node.children is not None:
                node = _last_child(node)
                self._recalc(node)
        return 0

    # -- structure --------------------------------------------------------------------------

    @cython.cfunc
    def _attach(self, parent: _TNode, children: list) -> cython.int:
        child: _TNode
        for child in children:
            child.parent = parent
        return 0

    @cython.cfunc
    def _search_node(self, q: cython.longlong, qa: cython.longlong) -> _TNode:
        """FiBA._search_node: from the nearer finger, climbing only as far as it must."""
        node: _TNode = self._root
        i: cython.Py_ssize_t
        if node.children is not None:
            if self._kgt(node, 0, q, qa):
                node = self._lf
                while node.parent is not None and self._klt(node, node.n - 1, q, qa):
                    node = node.parent
            elif self._klt(node, node.n - 1, q, qa):
                node = self._rf
                while node.parent is not None and self._kgt(node, 0, q, qa):
                    node = node.parent
        while node.children is not None:
            i = self._bisect_left(node, q, qa)
            if i < node.n and self._keq(node, i, q, qa):
                return node
            node = _child(node, i)
        return node

    @cython.cfunc
    def _height_increase(self) -> cython.int:
        old: _TNode = self._root
        root: _TNode = self._new()
        root.children = [old]
        self._root = old.parent = root
        old.left = old.right = True
        return 0

    @cython.cfunc
    def _height_decrease(self) -> cython.int:
        root: _TNode = _child(self._root, 0)
        root.parent = None
        root.left = root.right = False
        self._root = root
        self._recalc(root)
        return 0

    @cython.cfunc
    def _split(self, left: _TNode) -> cython.int:
        a: cython.Py_ssize_t = self.min_arity
        cols: cython.int = self._ncols
        parent: _TNode = left.parent
        right: _TNode = self._new()
        m: cython.Py_ssize_t = left.n - a - 1
        _copy(left, a + 1, right, 0, m, cols)
        right.n = m
        index: cython.Py_ssize_t = parent.children.index(left)
        _shift(parent, index, 1, cols)
        _copy(left, a, parent, index, 1, cols)
        parent.children.insert(index + 1, right)
        left.n = a
        if left.children is not None:
            right.children = left.children[a + 1:]
            del left.children[a + 1:]
            self._attach(right, right.children)
        right.parent = parent
        right.right = left.right
        left.right = False
        if self._rf is left:
            self._rf = right
        self._recalc_if_up(left)
        self._recalc_if_up(right)
        self._recalc_if_up(parent)
        return 0

    @cython.cfunc
    def _rebalance_after_insert(self, node: _TNode) -> cython.int:
        hit_left: cython.bint = node.left
        hit_right: cython.bint = node.right
        while node.n > self._max_keys:
            if node.parent is None:
                self._height_increase()
                hit_left = hit_right = True
            self._split(node)
            node = node.parent
            hit_left |= node.left
            hit_right |= node.right
        self._top, self._hl, self._hr = node, hit_left, hit_right
        return 0

    @cython.cfunc
    def _merge(self, parent: _TNode, index: cython.Py_ssize_t) -> _TNode:
        """Merge ``parent.children[index + 1]`` into ``children[index]`` with the entry between."""
        cols: cython.int = self._ncols
        left: _TNode = _child(parent, index)
        right: _TNode = _child(parent, index + 1)
        _copy(parent, index, left, left.n, 1, cols)
        left.n += 1
        _shift(parent, index + 1, -1, cols)
        del parent.children[index + 1]
        _copy(right, 0, left, left.n, right.n, cols)
        left.n += right.n
        if left.children is not None:
            left.children += right.children
            self._attach(left, right.children)
        left.right = right.right
        if self._rf is right:
            self._rf = left
        self._recalc_if_up(left)
        self._recalc_if_up(parent)
        return left

    @cython.cfunc
    def _move(self, parent: _TNode, recipient: cython.Py_ssize_t, giver: cython.Py_ssize_t) -> cython.int:
        """Rotate one entry (and child) from sibling ``giver`` through the parent into ``recipient``."""
        cols: cython.int = self._ncols
        to: _TNode = _child(parent, recipient)
        fro: _TNode = _child(parent, giver)
        moved: _TNode
        if recipient < giver:
            _copy(parent, recipient, to, to.n, 1, cols)
            to.n += 1
            _copy(fro, 0, parent, recipient, 1, cols)
            _shift(fro, 1, -1, cols)
            if fro.children is not None:
                moved = fro.children.pop(0)
                to.children.append(moved)
                moved.parent = to
        else:
            _shift(to, 0, 1, cols)
            _copy(parent, giver, to, 0, 1, cols)
            _copy(fro, fro.n - 1, parent, giver, 1, cols)
            fro.n -= 1
            if fro.children is not None:
                moved = fro.children.pop()
                to.children.insert(0, moved)
                moved.parent = to
        self._recalc_if_up(to)
        self._recalc_if_up(fro)
        self._recalc_if_up(parent)
        return 0

    @cython.cfunc
    def _rebalance_after_evict(self, node: _TNode, to_repair: Optional[_TNode]) -> cython.int:
        hit_left: cython.bint = node.left
        hit_right: cython.bint = node.right
        min_keys: cython.Py_ssize_t = self._min_keys
        parent: _TNode
        sibling: _TNode
        index: cython.Py_ssize_t
        other: cython.Py_ssize_t
        if node is to_repair:
            self._recalc_if_up(node)
        while node.parent is not None and node.n < min_keys:
            parent = node.parent
            index = parent.children.index(node)
            other = index - 1 if index == len(parent.children) - 1 else index + 1
            sibling = _child(parent, other)
            hit_left |= sibling.left
            hit_right |= sibling.right
            if sibling.n <= min_keys or (node.left and node.n + sibling.n < self._max_keys):
                node = self._merge(parent, min(index, other))
                if parent.parent is None and not parent.n:
                    self._height_decrease()
                else:
                    node = parent
            else:
                self._move(parent, index, other)
                node = parent
            if node is to_repair:
                self._recalc_if_up(node)
            hit_left |= node.left
            hit_right |= node.right
        self._top, self._hl, self._hr = node, hit_left, hit_right
        return 0

    # -- updates ----------------------------------------------------------------------------

    def insert(self, key: Any, partial: Any) -> bool:
        """Add ``partial`` at ``key`` (combined into an existing entry: existing ⊕ new);
        True if the key is new. Untyped, and no change, if the tree cannot hold them."""
        size: cython.Py_ssize_t = self._len()
        self._key_in(key)
        if self._qkind and self._q == 0 and math.copysign(1.0, key[0] if self._pairs else key) < 0:
            raise Untyped("a -0.0 key (it would read back as 0.0)")
        p: Part = self._decode(partial)
        xkey: cython.bint = self._op == _ARGMIN or self._op == _ARGMAX
        if size:
            if self._qkind != self._kfloat:
                raise Untyped(f"a key of the other kind: {key!r}")
            if self._vkind != self._float:
                raise Untyped("a partial of the other kind")
            if xkey and self._xkind != self._xfloat:
                raise Untyped("an ArgMin / ArgMax partial whose key is of the other kind")
        if (not self._vkind and (self._op == _SUM or self._op == _MEAN)
                and _abs64(p.i) > LIMIT - (self._magnitude if size else 0)):
            raise Untyped("the sum of |v| would exceed 2**63 - 1")
        if not size:  # the kinds of an empty tree follow its first entry
            self._kfloat = self._qkind
            if self._vkind != self._float:
                self._set_kind(self._vkind)
            if xkey:
                self._xfloat = self._xkind
            self._magnitude = 0
            self._root.agg = self._identity
        return self._insert(key, p)

    def accepts(self, partials: Any) -> bool:
        """Whether :meth:`insert` would take these partials one after another (at new keys
        of the tree's kind): one kind, the tree's unless it is empty, within the INT bound."""
        size: cython.Py_ssize_t = self._len()
        kind: cython.bint = self._float
        xkind: cython.bint = self._xfloat
        xkey: cython.bint = self._op == _ARGMIN or self._op == _ARGMAX
        first: cython.bint = size == 0
        track: cython.bint = self._op == _SUM or self._op == _MEAN
        magnitude: cython.ulonglong = self._magnitude if size else 0
        p: Part
        try:
            for partial in partials:
                p = self._decode(partial)
                if first:
                    if not self._vany:  # (a Variance partial of count >= 2 keeps the kind)
                        kind = self._vkind
                    xkind, first = self._xkind, False
                elif (self._vkind != kind and not self._vany) or (xkey and self._xkind != xkind):
                    return False
                if not kind and track:
                    if _abs64(p.i) > LIMIT - magnitude:
                        return False
                    magnitude += _abs64(p.i)
        except Untyped:
            return False
        return True

    def check_arrays(self, timestamps: Any, values: Any, keys: Any = None) -> None:
        """Untyped unless :meth:`insert_arrays` takes these columns (nothing changes here):
        for a Record's trees, each checked before any takes its column."""
        self._arrays_fit(memoryview(timestamps), memoryview(values), None if keys is None else memoryview(keys))

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert_arrays(self, timestamps: Any, values: Any, first: int, keys: Any = None) -> None:
        """Insert the lift of ``values[j]`` at key ``(timestamps[j], first + j)`` for each
        ``j`` in order, as :meth:`insert` one by one would (pair keys; Sum, Min, Max, First,
        Last: the number; Mean, MinCount, MaxCount: with count 1; Count: 1 whatever the value;
        Variance: ``(1, v, 0)``; ArgMin, ArgMax: ``(v, keys[j])``): float64 or int64 buffers,
        in C loops. All or nothing: Untyped, before any change, if a key or value does not
        fit (:meth:`_arrays_fit`)."""
        tview = memoryview(timestamps)
        vview = memoryview(values)
        kview = None if keys is None else memoryview(keys)
        self._arrays_fit(tview, vview, kview)
        op: cython.int = self._op
        n: cython.Py_ssize_t = len(tview)
        kfloat: cython.bint = tview.format == "d"
        vfloat: cython.bint = vview.format == "d" and not self._count
        arg: cython.bint = op == _ARGMIN or op == _ARGMAX
        xfloat: cython.bint = arg and kview.format == "d"
        base: cython.longlong = _int64(first)
        _int64(first + n)
        j: cython.Py_ssize_t
        td: cython.const[cython.double][:] = _NO_DOUBLES
        ti: cython.const[cython.longlong][:] = _NO_INT64S
        vd: cython.const[cython.double][:] = _NO_DOUBLES
        vi: cython.const[cython.longlong][:] = _NO_INT64S
        xd: cython.const[cython.double][:] = _NO_DOUBLES
        xi: cython.const[cython.longlong][:] = _NO_INT64S
        if kfloat:
            td = tview
        else:
            ti = tview
        if vfloat:
            vd = vview
        elif not self._count:
            vi = vview
        if arg:
            if xfloat:
                xd = kview
            else:
                xi = kview
        if not self._len():  # the kinds of an empty tree follow its first entry
            self._kfloat = kfloat
            if vfloat != self._float:
                self._set_kind(vfloat)
            if arg:
                self._xfloat = xfloat
            self._magnitude = 0
            self._root.agg = self._identity
        # the Part of each lift (see the module docstring): Mean, MinCount, MaxCount and
        # Variance count 1, ArgMin and ArgMax the key (a float's bits) in c
        c: cython.longlong = 1 if self._mean or op == _VARIANCE else 0
        variance: cython.bint = op == _VARIANCE
        p: Part
        for j in range(n):
            self._q = _fkey(td[j]) if kfloat else ti[j]
            self._qa = base + j
            if arg:
                c = _bits(xd[j]) if xfloat else xi[j]
            if self._count:
                p = Part(d=0.0, i=1, c=0)
            elif vfloat:
                p = Part(d=vd[j], i=0, c=c)
            elif variance:
                p = Part(d=cython.cast(cython.double, vi[j]), i=0, c=1)
            else:
                p = Part(d=0.0, i=vi[j], c=c)
            self._insert(None if self._journal is None else self._key_pair(), p)

    @cython.cfunc
    @cython.boundscheck(False)
    @cython.wraparound(False)
    def _arrays_fit(self, tview: object, vview: object, kview: object) -> cython.int:
        """Untyped unless the tree takes the columns of :meth:`insert_arrays`: pair keys;
        keys, values (and ArgMin / ArgMax's keys, given for these only) of the tree's kinds
        if it is not empty; no NaN nor -0.0 key; values the monoid lifts
        (:func:`~mta.algorithms.typed.liftable`), Variance's ints of magnitude at most 2**25,
        Sum's and Mean's ints within the INT bound."""
        op: cython.int = self._op
        arg: cython.bint = op == _ARGMIN or op == _ARGMAX
        if not self._pairs:
            raise Untyped("insert_arrays takes pair keys")
        if arg != (kview is not None):
            raise Untyped("ArgMin and ArgMax take a column of keys, and they alone")
        n: cython.Py_ssize_t = len(tview)
        if len(vview) != n or (arg and len(kview) != n):
            raise ValueError(f"{n} timestamps for {len(vview)} values")
        kfloat: cython.bint = tview.format == "d"
        vfloat: cython.bint = vview.format == "d" and not self._count
        if self._len() and (kfloat != self._kfloat or vfloat != self._float
                            or (arg and (kview.format == "d") != self._xfloat)):
            raise Untyped("a column of the other kind")
        j: cython.Py_ssize_t
        x: cython.double
        td: cython.const[cython.double][:]
        vi: cython.const[cython.longlong][:]
        magnitude: cython.ulonglong = self._magnitude if self._len() else 0
        if kfloat:
            td = tview
            for j in range(n):
                x = td[j]
                if x != x or (x == 0.0 and _bits(x) < 0):
                    raise Untyped("a NaN or -0.0 key")
        if self._count:  # every lift is the int 1
            if cython.cast(cython.ulonglong, n) > LIMIT - magnitude:
                raise Untyped("the sum of |v| would exceed 2**63 - 1")
        elif vfloat:
            if not liftable(vview, op):
                raise Untyped("a value the monoid does not lift")
        else:
            vi = vview
            if op == _SUM or op == _MEAN:
                for j in range(n):
                    if _abs64(vi[j]) > LIMIT - magnitude:
                        raise Untyped("the sum of |v| would exceed 2**63 - 1")
                    magnitude += _abs64(vi[j])
            elif op == _VARIANCE:
                for j in range(n):
                    if not -_VAR_INT <= vi[j] <= _VAR_INT:
                        raise Untyped("Variance takes ints of magnitude at most 2**25 typed")
        return 0

    @cython.cfunc
    def _key_pair(self) -> object:
        """The scratch pair key (``_q``, ``_qa``) as :meth:`insert` takes it."""
        return (_unfkey(self._q) if self._kfloat else self._q, self._qa)

    @cython.cfunc
    def _insert(self, key: object, p: Part) -> cython.bint:
        q: cython.longlong = self._q
        qa: cython.longlong = self._qa
        finger: _TNode = self._rf
        n: cython.Py_ssize_t = finger.n
        parent: _TNode = finger.parent
        if self._track:
            self._magnitude += _abs64(p.i)
        if n and self._klt(finger, n - 1, q, qa):  # after every key
            if n < self._max_keys:
                # In order, no split: the right finger's aggregate gains the entry: one combine.
                if self._journal is not None:
                    self._journal.append((key, _NEW))
                self._put_entry(finger, n, p)
                finger.agg = self._comb(finger.agg, p)
                finger.size += 1
                finger.suffixed = False
                return True
            if parent is not None and parent.n and not parent.left and parent.n < self._max_keys:
                self._append_split(finger, key, p)
                return True
        node: _TNode = self._search_node(q, qa)
        i: cython.Py_ssize_t = self._bisect_left(node, q, qa)
        if i < node.n and self._keq(node, i, q, qa):  # combine into the entry
            old: Part = self._val(node, i)
            if self._journal is not None:
                self._journal.append((key, self._enc(old)))
            new: Part = self._comb(old, p)
            if self._track:  # the entry's |v| is now |old + p| (<= |old| + |p|, counted above)
                self._magnitude = self._magnitude - _abs64(p.i) - _abs64(old.i) + _abs64(new.i)
            self._setv(node, i, new)
            self._recalc_if_up(node)
            self._repair(node, node.left, node.right)
            return False
        if self._journal is not None:
            self._journal.append((key, _NEW))
        self._put_entry(node, i, p)
        self._recalc_if_up(node)
        self._rebalance_after_insert(node)
        self._repair(self._top, self._hl, self._hr)
        return True

    @cython.cfunc
    def _append_split(self, finger: _TNode, key: object, p: Part) -> cython.int:
        """FiBA._append_split: in order, the right finger full, its parent not."""
        if self._journal is not None:
            self._journal.append((key, _NEW))
        cols: cython.int = self._ncols
        self._put_entry(finger, finger.n, p)
        a: cython.Py_ssize_t = self.min_arity
        parent: _TNode = finger.parent
        right: _TNode = self._new()
        m: cython.Py_ssize_t = finger.n - a - 1
        _copy(finger, a + 1, right, 0, m, cols)
        right.n = m
        _copy(finger, a, parent, parent.n, 1, cols)
        parent.n += 1
        parent.children.append(right)
        finger.n = a
        right.parent = parent
        right.right = True
        finger.right = False
        finger.suffixed = False
        self._rf = right
        self._recalc(finger)  # now an up aggregate
        parent.agg = self._comb(self._comb(parent.agg, finger.agg), self._val(parent, parent.n - 1))
        parent.size += finger.size + 1
        self._recalc(right)
        return 0

    def evict(self, key: Any) -> bool:
        """Remove the entry at exactly ``key``; False, and no change, if absent."""
        if not self._len():
            return False
        self._lookup(key)
        return self._evict(key)

    @cython.cfunc
    def _evict(self, key: object) -> cython.bint:
        q: cython.longlong = self._q
        qa: cython.longlong = self._qa
        finger: _TNode = self._lf
        parent: _TNode = finger.parent
        agg: Part
        if finger.n and self._keq(finger, 0, q, qa) and (finger.n > self._min_keys or parent is None):
            # The oldest, no underflow: only the left finger's aggregate changes.
            self._untrack(finger, 0)
            if self._journal is not None:
                self._journal.append((key, self._enc(self._val(finger, 0))))
            _shift(finger, 1, -1, self._ncols)
            if not finger.suffixed:
                self._recalc(finger)
                return True
            finger.slen -= 1
            agg = self._suf(finger.slen - 1) if finger.slen else self._identity
            size: cython.Py_ssize_t = finger.n
            if parent is not None and parent.parent is not None:
                agg = self._comb(agg, parent.agg)
                size += parent.size
            finger.agg = agg
            finger.size = size
            return True
        node: _TNode = self._search_node(q, qa)
        i: cython.Py_ssize_t = self._bisect_left(node, q, qa)
        if i == node.n or not self._keq(node, i, q, qa):
            return False
        self._untrack(node, i)
        if self._journal is not None:
            self._journal.append((key, self._enc(self._val(node, i))))
        if node.children is None:
            _shift(node, i + 1, -1, self._ncols)
            self._recalc_if_up(node)
            self._rebalance_after_evict(node, None)
            self._repair(self._top, self._hl, self._hr)
            return True
        # Fig. 8, evictInner: overwrite the entry with its neighbor entry from a leaf.
        leaf: _TNode = _child(node, i + 1)
        if leaf.n > self._min_keys:
            while leaf.children is not None:
                leaf = _child(leaf, 0)
            _copy(leaf, 0, node, i, 1, self._ncols)
            _shift(leaf, 1, -1, self._ncols)
        else:
            leaf = _child(node, i)
            while leaf.children is not None:
                leaf = _last_child(leaf)
            _copy(leaf, leaf.n - 1, node, i, 1, self._ncols)
            leaf.n -= 1
        self._recalc_if_up(leaf)
        self._rebalance_after_evict(leaf, node)
        top: _TNode = self._top
        hit_left: cython.bint = self._hl
        hit_right: cython.bint = self._hr
        if self._below(top, node):
            while top is not node:
                top = top.parent
                hit_left |= top.left
                hit_right |= top.right
                self._recalc_if_up(top)
        self._repair(top, hit_left, hit_right)
        return True

    @cython.cfunc
    @cython.exceptval(check=False)
    def _untrack(self, node: _TNode, j: cython.Py_ssize_t) -> cython.int:
        """Entry ``j`` of ``node`` leaves the tree: out of the INT bound's sum."""
        if self._track:
            self._magnitude -= _abs64(node.v[j])
        return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def _below(self, node: _TNode, ancestor: _TNode) -> cython.bint:
        while node is not None:
            if node is ancestor:
                return True
            node = node.parent
        return False

    def evict_upto(self, key: Any) -> int:
        """Evict every entry with a key ``<= key`` by cutting the tree along the search
        path of ``key`` (FiBA.evict_upto); return how many."""
        before: cython.Py_ssize_t = self._len()
        if not before:
            return 0
        self._lookup(key)
        q: cython.longlong = self._q
        qa: cython.longlong = self._qa
        if self._kgt(self._lf, 0, q, qa):
            return 0  # older than the oldest
        if self._track or self._journal is not None:  # O(evicted): int sums, or a batch may be undone
            self._walk_upto(self._root, q, qa)
        path: list = self._boundary(q, qa)
        skip_to: _TNode = None
        top: _TNode = None
        root: _TNode
        node: _TNode
        neighbor: _TNode
        ancestor: _TNode
        min_keys: cython.Py_ssize_t = self._min_keys
        level: cython.Py_ssize_t
        deficit: cython.Py_ssize_t
        depth: cython.Py_ssize_t = len(path)
        for level in range(depth):
            node, neighbor, ancestor = path[depth - 1 - level]
            if neighbor is not None and level:
                self._recalc_if_up(neighbor)  # it gave entries to the level below
            if skip_to is None or skip_to is node:
                skip_to = None
                self._cut(node, q, qa)
                if neighbor is None:
                    # Nothing right of this level's node: everything above it is evicted
                    # but its own subtree, which becomes the tree.
                    root = _child(node, 0) if node.children is not None and not node.n else node
                    if root.parent is not None:
                        siblings: list = root.parent.children
                        del siblings[siblings.index(root):]
                    root.parent = None
                    root.left = root.right = False
                    self._root = root
                    self._recalc(root)
                    self._mark_left_spine(root, level == 0)
                    top = root
                    break
                if node.parent is None or node.n >= min_keys:
                    top = node
                else:
                    deficit = min_keys - node.n
                    if deficit <= neighbor.n - min_keys:
                        self._move_batch(node, neighbor, ancestor, deficit)
                    elif node.parent is ancestor:
                        self._merge(ancestor, ancestor.children.index(node))
                    else:
                        self._merge_cousin(node, neighbor, ancestor)
                        skip_to = ancestor
                    top = ancestor
            self._mark_left_spine(node if skip_to is None else neighbor, level == 0)
        hit_left: cython.bint
        hit_right: cython.bint
        if top.parent is None:
            hit_left = hit_right = True
            if top.children is not None and not top.n:
                top = _child(top, 0)
                self._height_decrease()
        elif top.n >= min_keys:
            hit_left, hit_right = top.left, top.right
        else:
            self._rebalance_after_evict(top, None)
            top, hit_left, hit_right = self._top, self._hl, self._hr
        self._repair(top, hit_left, hit_right)
        if not self._len():
            self._magnitude = 0
        return before - self._len()

    @cython.cfunc
    def _walk_upto(self, node: _TNode, q: cython.longlong, qa: cython.longlong) -> cython.bint:
        """The entries with keys ``<= q`` in order, out of the INT bound's sum and into the
        journal (if any); False once past ``q``."""
        j: cython.Py_ssize_t
        journal: object = self._journal
        for j in range(node.n + 1):
            if node.children is not None and not self._walk_upto(_child(node, j), q, qa):
                return False
            if j == node.n:
                break
            if self._kgt(node, j, q, qa):
                return False
            self._untrack(node, j)
            if journal is not None:
                journal.append((self._key(node, j), self._enc(self._val(node, j))))
        return True

    @cython.cfunc
    def _boundary(self, q: cython.longlong, qa: cython.longlong) -> list:
        """FiBA._boundary: the search path with each node's neighbor and their common ancestor."""
        node: _TNode = self._root
        ancestor: _TNode
        neighbor: _TNode = None
        index: cython.Py_ssize_t
        i: cython.Py_ssize_t
        if node.children is not None and self._kgt(node, 0, q, qa):
            node = self._lf
            while node.parent is not None and self._klt(node, node.n - 1, q, qa):
                node = node.parent
        ancestor = node.parent
        if ancestor is not None:
            index = ancestor.children.index(node)
            if index < len(ancestor.children) - 1:
                neighbor = _child(ancestor, index + 1)
        path: list = [(node, neighbor, ancestor)]
        while node.children is not None:
            i = self._bisect_left(node, q, qa)
            if i < node.n and self._keq(node, i, q, qa):
                break
            if i == node.n:
                if neighbor is not None:
                    neighbor = _child(neighbor, 0)
            else:
                ancestor = node
                neighbor = _child(node, i + 1)
            node = _child(node, i)
            path.append((node, neighbor, ancestor))
        return path

    @cython.cfunc
    def _cut(self, node: _TNode, q: cython.longlong, qa: cython.longlong) -> cython.int:
        """Remove the entries ``<= q`` of ``node`` and the children left of them."""
        n: cython.Py_ssize_t = self._bisect_right(node, q, qa)
        if n:
            _shift(node, n, -n, self._ncols)
            if node.children is not None:
                del node.children[:n]
        self._recalc_if_up(node)
        return 0

    @cython.cfunc
    def _move_batch(self, node: _TNode, neighbor: _TNode, ancestor: _TNode, count: cython.Py_ssize_t) -> cython.int:
        cols: cython.int = self._ncols
        a: cython.Py_ssize_t = self._bisect_left(ancestor, neighbor.k[0], self._ka(neighbor, 0)) - 1
        _copy(ancestor, a, node, node.n, 1, cols)
        node.n += 1
        _copy(neighbor, 0, node, node.n, count - 1, cols)
        node.n += count - 1
        _copy(neighbor, count - 1, ancestor, a, 1, cols)
        _shift(neighbor, count, -count, cols)
        if node.children is not None:
            moved: list = neighbor.children[:count]
            del neighbor.children[:count]
            node.children += moved
            self._attach(node, moved)
        self._recalc_if_up(node)
        self._recalc_if_up(neighbor)
        return 0

    @cython.cfunc
    def _merge_cousin(self, node: _TNode, neighbor: _TNode, ancestor: _TNode) -> cython.int:
        cols: cython.int = self._ncols
        a: cython.Py_ssize_t = self._bisect_left(ancestor, neighbor.k[0], self._ka(neighbor, 0)) - 1
        m: cython.Py_ssize_t = node.n
        _shift(neighbor, 0, m + 1, cols)
        _copy(node, 0, neighbor, 0, m, cols)
        _copy(ancestor, a, neighbor, m, 1, cols)
        if node.children is not None:
            neighbor.children[:0] = node.children
            self._attach(neighbor, neighbor.children)
        _shift(ancestor, a + 1, -(a + 1), cols)
        del ancestor.children[:a + 1]
        self._recalc_if_up(neighbor)
        return 0

    @cython.cfunc
    def _mark_left_spine(self, node: _TNode, down: cython.bint) -> cython.int:
        if node.parent is not None:
            node.left = True
        if down:
            while node.children is not None:
                node = _child(node, 0)
                node.left = True
            self._lf = node
        return 0

    def clear(self) -> None:
        if self._journal is not None:
            self._journal += list(self)
        self._reset()
        self._magnitude = 0

    # -- undo: FiBA's journal -----------------------------------------------------------------

    def snapshot(self) -> Any:
        """Start an undo journal (O(1)), for :meth:`restore` until :meth:`end_hold`."""
        self._journal = []
        return self._journal

    def restore(self, snapshot: Any) -> None:
        journal = snapshot
        self._journal = None
        for key, value in reversed(journal):
            if value is _NEW:
                self.evict(key)
            else:  # evicted, or combined into: put the entry back as it was
                self.evict(key)
                self.insert(key, value)

    def begin_hold(self) -> None:
        self.hold = True

    def end_hold(self) -> bool:
        self._journal = None
        self.hold = False
        return False

    # -- queries ------------------------------------------------------------------------------

    @cython.cfunc
    @cython.exceptval(check=False)
    def _len(self) -> cython.Py_ssize_t:
        root: _TNode = self._root
        if root.children is None:
            return root.size
        return self._lf.size + root.size + self._rf.size

    def __len__(self) -> int:
        return self._len()

    def query(self) -> Any:
        root: _TNode = self._root
        if root.children is None:
            return self._agg_of(root)
        return self._enc(self._comb(self._comb(self._lf.agg, root.agg), self._rf.agg))

    def result(self) -> Any:
        """``monoid.lower(query())``."""
        return self.monoid.lower(self.query()) if self._lower else self.query()

    def oldest(self) -> tuple | None:
        node: _TNode = self._lf
        return (self._key(node, 0), self._enc(self._val(node, 0))) if node.n else None

    def newest(self) -> tuple | None:
        node: _TNode = self._rf
        return (self._key(node, node.n - 1), self._enc(self._val(node, node.n - 1))) if node.n else None

    def __iter__(self) -> Iterator[tuple]:
        found: list = []
        self._collect(self._root, False, 0, 0, False, 0, 0, found)
        return iter(found)

    def entries(self, low: Any, high: Any) -> list:
        """The entries ``(key, partial)`` with ``low <= key <= high``, in key order."""
        found: list = []
        if not self._len() or high < low:
            return found
        self._lookup(low)
        lq: cython.longlong = self._q
        la: cython.longlong = self._qa
        self._lookup(high)
        self._collect(self._root, True, lq, la, True, self._q, self._qa, found)
        return found

    @cython.cfunc
    def _collect(self, node: _TNode, bounded_low: cython.bint, lq: cython.longlong, la: cython.longlong,
                 bounded_high: cython.bint, hq: cython.longlong, ha: cython.longlong, found: list) -> cython.int:
        start: cython.Py_ssize_t = self._bisect_left(node, lq, la) if bounded_low else 0
        stop: cython.Py_ssize_t = self._bisect_right(node, hq, ha) if bounded_high else node.n
        i: cython.Py_ssize_t
        if node.children is None:
            for i in range(start, stop):
                found.append((self._key(node, i), self._enc(self._val(node, i))))
            return 0
        for i in range(start, stop + 1):
            self._collect(_child(node, i), bounded_low, lq, la, bounded_high, hq, ha, found)
            if i < stop:
                found.append((self._key(node, i), self._enc(self._val(node, i))))
        return 0

    def query_range(self, low: Any, high: Any) -> Any:
        """FiBA.query_range (Fig. 10): from the lowest common ancestor of both ends."""
        if not self._len() or high < low:
            return self.monoid.identity
        self._lookup(low)
        lq: cython.longlong = self._q
        la: cython.longlong = self._qa
        self._lookup(high)
        hq: cython.longlong = self._q
        ha: cython.longlong = self._qa
        a: _TNode = self._search_node(lq, la)
        b: _TNode = self._search_node(hq, ha)
        depth_a: cython.Py_ssize_t = self._depth(a)
        depth_b: cython.Py_ssize_t = self._depth(b)
        while depth_a > depth_b:
            a = a.parent
            depth_a -= 1
        while depth_b > depth_a:
            b = b.parent
            depth_b -= 1
        while a is not b:
            a = a.parent
            b = b.parent
        self._hit = False
        acc: Part = self._range(a, True, lq, la, True, hq, ha)
        return self._enc(acc) if self._hit else self.monoid.identity

    def count_range(self, low: Any, high: Any) -> tuple:
        """``(how many entries have low <= key <= high, the greatest of those keys)`` (``(0,
        None)``: none), in O(log n) node visits: subtree sizes where query_range takes aggregates."""
        if not self._len() or high < low:
            return (0, None)
        self._lookup(low)
        lq: cython.longlong = self._q
        la: cython.longlong = self._qa
        self._lookup(high)
        hq: cython.longlong = self._q
        ha: cython.longlong = self._qa
        count: cython.Py_ssize_t = self._count_in(self._root, True, lq, la, True, hq, ha)
        if not count:
            return (0, None)
        node: _TNode = self._root
        last: _TNode = None
        j: cython.Py_ssize_t = 0
        i: cython.Py_ssize_t
        while True:  # down to the greatest key <= hq
            i = self._bisect_right(node, hq, ha)
            if i:
                last, j = node, i - 1
            if node.children is None:
                break
            node = _child(node, i)
        return (count, self._key(last, j))

    @cython.cfunc
    @cython.exceptval(check=False)
    def _count_in(self, node: _TNode, bounded_low: cython.bint, lq: cython.longlong, la: cython.longlong,
                  bounded_high: cython.bint, hq: cython.longlong, ha: cython.longlong) -> cython.Py_ssize_t:
        """How many entries of ``node``'s subtree lie in the bounds (an unbounded side: as _range)."""
        if not bounded_low and not bounded_high and self._has_up(node):
            return node.size  # an up node's size is its subtree's
        start: cython.Py_ssize_t = self._bisect_left(node, lq, la) if bounded_low else 0
        stop: cython.Py_ssize_t = self._bisect_right(node, hq, ha) if bounded_high else node.n
        count: cython.Py_ssize_t = stop - start
        i: cython.Py_ssize_t
        if node.children is not None:
            for i in range(start, stop + 1):
                count += self._count_in(_child(node, i), bounded_low and i == start, lq, la,
                                        bounded_high and i == stop, hq, ha)
        return count

    def key_at(self, rank: int) -> Any:
        """The key of entry ``rank`` in key order (0 the oldest); IndexError beyond."""
        r: cython.Py_ssize_t = rank
        if r < 0 or r >= self._len():
            raise IndexError(f"no entry {rank} in a tree of {self._len()}")
        node: _TNode = self._root
        child: _TNode
        c: cython.Py_ssize_t
        i: cython.Py_ssize_t
        while node.children is not None:
            for i in range(node.n + 1):
                child = _child(node, i)
                c = child.size if self._has_up(child) else self._count_in(child, False, 0, 0, False, 0, 0)
                if r < c:
                    break
                r -= c
                if i < node.n:
                    if not r:
                        return self._key(node, i)
                    r -= 1
            node = child
        return self._key(node, r)

    @cython.cfunc
    @cython.exceptval(check=False)
    def _depth(self, node: _TNode) -> cython.Py_ssize_t:
        depth: cython.Py_ssize_t = 0
        while node.parent is not None:
            node = node.parent
            depth += 1
        return depth

    @cython.cfunc
    def _range(self, node: _TNode, bounded_low: cython.bint, lq: cython.longlong, la: cython.longlong,
               bounded_high: cython.bint, hq: cython.longlong, ha: cython.longlong) -> Part:
        """FiBA._range: the aggregate of ``node``'s entries in the bounds (an unbounded side:
        the neighboring keys in the parent showed the subtree lies inside); ``_hit`` set
        when it covers an entry."""
        if not bounded_low and not bounded_high and self._has_up(node):
            self._hit = True  # a whole subtree: never empty
            return node.agg
        n: cython.Py_ssize_t = node.n
        start: cython.Py_ssize_t = self._bisect_left(node, lq, la) if bounded_low else 0
        stop: cython.Py_ssize_t = self._bisect_right(node, hq, ha) if bounded_high else n
        acc: Part = self._identity
        i: cython.Py_ssize_t
        if node.children is None:
            for i in range(start, stop):
                acc = self._comb(acc, self._val(node, i))
                self._hit = True
            return acc
        for i in range(start, stop + 1):
            if i == start and bounded_low and i < n and self._keq(node, i, lq, la):
                pass
            elif i == stop and bounded_high and i > 0 and self._keq(node, i - 1, hq, ha):
                pass
            else:
                acc = self._comb(acc, self._range(_child(node, i), bounded_low and i == start, lq, la,
                                                  bounded_high and i == stop, hq, ha))
            if i < stop:
                acc = self._comb(acc, self._val(node, i))
                self._hit = True
        return acc

    def search(self, pred: Callable[[Any], bool]) -> tuple | None:
        """FiBA.search: the longest prefix with ``pred``, from the left finger up the left
        spine, whole subtrees at a time, then down into the first subtree that fails."""
        root: _TNode = self._root
        if root.children is None:
            return self._search_down(root, pred, self._identity, None)
        node: _TNode = self._lf
        child: _TNode
        acc: Part = self._identity
        candidate: Part
        last: object = None
        i: cython.Py_ssize_t
        for i in range(node.n):
            candidate = self._comb(acc, self._val(node, i))
            if not pred(self._enc(candidate)):
                return self._found(last, acc)
            acc = candidate
            last = self._key(node, i)
        while node.parent is not None:
            node = node.parent
            for i in range(node.n):
                candidate = self._comb(acc, self._val(node, i))
                if not pred(self._enc(candidate)):
                    return self._found(last, acc)
                acc = candidate
                last = self._key(node, i)
                child = _child(node, i + 1)
                if not self._has_up(child):  # the root's last child: its subtree is the right finger's
                    candidate = self._comb(acc, self._rf.agg)
                    if pred(self._enc(candidate)):
                        return (self._key(self._rf, self._rf.n - 1), self._enc(candidate))
                    return self._search_down(child, pred, acc, last)
                candidate = self._comb(acc, child.agg)
                if not pred(self._enc(candidate)):
                    return self._search_down(child, pred, acc, last)
                acc = candidate
                last = child
        return self._found(last, acc)

    @cython.cfunc
    def _found(self, last: object, acc: Part) -> object:
        if last is None:
            return None
        node: _TNode
        if isinstance(last, _TNode):
            node = last
            while node.children is not None:
                node = _last_child(node)
            last = self._key(node, node.n - 1)
        return (last, self._enc(acc))

    @cython.cfunc
    def _search_down(self, node: _TNode, pred: object, acc: Part, last: object) -> object:
        candidate: Part
        child: _TNode
        descend: _TNode
        i: cython.Py_ssize_t
        while True:
            if node.children is None:
                for i in range(node.n):
                    candidate = self._comb(acc, self._val(node, i))
                    if not pred(self._enc(candidate)):
                        break
                    acc = candidate
                    last = self._key(node, i)
                return self._found(last, acc)
            descend = _last_child(node)
            for i in range(node.n):
                child = _child(node, i)
                candidate = self._comb(acc, child.agg)
                if not pred(self._enc(candidate)):
                    descend = child
                    break
                acc = candidate
                last = child
                candidate = self._comb(acc, self._val(node, i))
                if not pred(self._enc(candidate)):
                    return self._found(last, acc)
                acc = candidate
                last = self._key(node, i)
            node = descend

    # -- checking -----------------------------------------------------------------------------

    def check(self) -> None:
        """FiBA.check on the object twin (:meth:`to_object` copies aggregates as stored, so
        a stale one shows), and the INT bound's sum against the entries."""
        self.to_object().check()
        if self._track:
            assert self._magnitude == sum(abs(p[0] if self._mean else p) for _, p in self), "sum of |v| is stale"

    # -- state: pickling, copying, demotion ---------------------------------------------------

    def _dump(self, node: _TNode, make: Callable[..., Any]) -> Any:
        """``node``'s subtree through ``make(keys, values, agg, size, left, right, suffix, children)``."""
        children = None if node.children is None else [self._dump(child, make) for child in node.children]
        suffix = [self._enc(self._suf(r)) for r in range(node.slen)] if node.suffixed else None
        return make([self._key(node, j) for j in range(node.n)], [self._enc(self._val(node, j)) for j in range(node.n)],
                    self._agg_of(node), node.size, node.left, node.right, suffix, children)

    def dump(self, make: Callable[..., Any]) -> Any:
        """The whole tree through ``make`` (see :meth:`_dump`): for tests and copies."""
        return self._dump(self._root, make)

    def __reduce__(self) -> tuple:
        # copy.deepcopy and pickle: plain Python numbers and lists, which both paths read
        tree = self.dump(lambda *fields: fields)
        journal = None if self._journal is None else list(self._journal)
        return (_unpickled, (type(self), self.monoid, self.min_arity,
                             (self._kfloat, self._float, self._xfloat, self._magnitude, self.hold, journal, tree),
                             self._pairs))

    def _load(self, state: tuple) -> None:
        kfloat, vfloat, xfloat, magnitude, self.hold, self._journal, tree = state
        self._kfloat = kfloat
        self._xfloat = xfloat
        self._set_kind(vfloat)
        self._magnitude = magnitude
        self._root = self._build(tree, None)
        node: _TNode = self._root
        while node.children is not None:
            node = _child(node, 0)
        self._lf = node
        node = self._root
        while node.children is not None:
            node = _last_child(node)
        self._rf = node

    @cython.cfunc
    def _build(self, fields: tuple, parent: Optional[_TNode]) -> _TNode:
        keys, values, agg, size, left, right, suffix, children = fields
        node: _TNode = self._new()
        j: cython.Py_ssize_t
        for j in range(len(keys)):
            self._key_in(keys[j])
            self._put_entry(node, j, self._decode(values[j]))
        node.agg = self._decode(agg) if size else self._identity
        node.size = size
        node.left, node.right = left, right
        node.parent = parent
        if suffix is not None:
            self._sowner = node
            for j in range(len(suffix)):
                self._setsuf(j, self._decode(suffix[j]))
            node.slen = len(suffix)
            node.suffixed = True
        if children is not None:
            node.children = [self._build(child, node) for child in children]
        return node

    def to_object(self) -> FiBA:
        """The object :class:`FiBA` in this state, node for node (entries, aggregates, sizes,
        spine flags, suffix folds, fingers, journal, hold), so that everything it computes
        from here is what it would have computed all along. It takes over the undo
        journal itself: a :meth:`snapshot` taken before restores it."""
        obj = _object_fiba(self.monoid, self.min_arity, self._dump(self._root, _object_node))
        obj._journal = self._journal  # the same list: a snapshot taken before restores it
        obj.hold = self.hold
        return obj


def _object_fiba(monoid: Monoid, min_arity: int, root: _Node) -> FiBA:
    """The object :class:`FiBA` of ``root`` (a tree of :func:`_object_node`), its fingers
    found (the typed trees' ``to_object``)."""
    obj = FiBA(monoid, min_arity=min_arity)
    obj._root = root
    obj._left_finger = FiBA._leftmost(root)
    obj._right_finger = FiBA._rightmost(root)
    return obj


def _object_node(keys: list, values: list, agg: Any, size: int, left: bool, right: bool, suffix: list | None,
                 children: list | None) -> _Node:
    """A FiBA ``_Node`` with these fields, the parent of its children."""
    node = _Node(keys, values, children, None, agg)
    node.size, node.left, node.right, node.suffix = size, left, right, suffix
    for child in children or ():
        child.parent = node
    return node


def _unpickled(cls: type, monoid: Monoid, min_arity: int, state: tuple, pairs: bool = False) -> Any:
    tree = cls(monoid, min_arity=min_arity, pairs=pairs)
    tree._load(state)
    return tree
