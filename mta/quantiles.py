"""Holistic monoids: exact quantiles on sorted run-length-encoded partials, and an
approximate quantile on a mergeable KLL sketch (Apache DataSketches).

Both use the *nearest-rank* (inverted CDF) rule: the q-quantile of n values is the
value at 1-based rank ``max(1, ceil(q * n))`` in sorted order, i.e. the smallest
value with at least a fraction q of the values at or below it. It is always one of
the inputs (no interpolation: :class:`Quantile` returns ints, Fractions and
infinities as they came); it equals ``numpy.quantile(values, q, method="inverted_cdf")``, the median is the
*lower* median (``statistics.median_low``), q = 0 is the minimum and q = 1 the
maximum. ``q * n`` is computed as written: with a float q it is rounded as
DataSketches rounds it (``0.07 * 100 == 7.000000000000001``, so rank 8); pass a
``Fraction`` q for exact rank arithmetic in :class:`Quantile`.

The exact partial is what the slicing paper keeps per slice for holistic
aggregates (general stream slicing, section 5.4.1): the slice's values sorted and
run-length encoded, so that combining two slices is a linear merge and repeated
values cost one pair.
"""

from __future__ import annotations

import math
import numbers
from bisect import bisect_left
from itertools import accumulate, chain
from operator import itemgetter
from typing import Any, Sequence

from mta.monoid import Monoid, MonoidError, _ordered, _plain_ordered

__all__ = ["Quantile", "Median", "ApproxQuantile"]

_VALUE = itemgetter(0)
_COUNT = itemgetter(1)

#: A side with at most this many runs, and at most a quarter of the other's, goes into
#: the other by binary search and list insertion (C memmoves) instead of a linear merge
#: in Python (measured: 5x faster for one run into 1,000, 8x for 32 into 10,000).
_FEW = 32


def _few(small: tuple, big: tuple) -> bool:
    """Whether ``small`` goes into ``big`` faster by binary search than by merging."""
    n = len(small)
    return n <= _FEW and 4 * n <= len(big)


def _check_q(q: Any, who: str) -> Any:
    """Check that ``q`` is a real number in [0, 1] (bool and NaN refused); return it."""
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 <= q <= 1:
        raise ValueError(f"{who} takes a quantile q with 0 <= q <= 1, got {q!r}")
    return q


def _rank(q: Any, n: int) -> int:
    """The nearest-rank rule: the 1-based rank of the q-quantile of ``n`` values."""
    return max(1, math.ceil(q * n))


# --------------------------------------------------------------------------- exact

def _runs(partial: Sequence) -> tuple:
    """``partial`` as a tuple of (value, count) tuples: a codec that decodes arrays as
    lists (JSON, msgpack with ``use_list=True``) gives lists of lists."""
    return partial if partial.__class__ is tuple else tuple(map(tuple, partial))


def _coalesce(pairs: Any) -> tuple:
    """Sorted (value, count) pairs with equal values summed into one pair."""
    out: list[tuple] = []
    append = out.append
    value = count = None
    for v, c in pairs:
        if count is not None and v == value:
            count += c
            continue
        if count is not None:
            append((value, count))
        value, count = v, c
    if count is not None:
        append((value, count))
    return tuple(out)


def _adjust(runs: tuple, changes: tuple, sign: int) -> tuple:
    """``runs`` with each (value, count) of ``changes`` (sorted, few) added (sign 1) or
    removed (sign -1), found by binary search. Removing what is not there raises."""
    out = list(runs)
    lo = 0
    for v, c in changes:
        i = bisect_left(out, v, lo, key=_VALUE)
        lo = i
        if i < len(out) and out[i][0] == v:
            value, count = out[i]
            count += sign * c
            if count > 0:
                out[i] = (value, count)
            elif count == 0:
                del out[i]
            else:
                raise ValueError(f"invert: the front holds {c} of {v!r}, the total only {count + c}")
        elif sign > 0:
            out.insert(i, (v, c))
            lo = i + 1
        else:
            raise ValueError(f"invert: the front holds {v!r}, which the total does not")
    return tuple(out)


def _merge(a: Sequence, b: Sequence) -> tuple:
    """The multiset union of two sorted RLE runs (counts of equal values added)."""
    if not a:
        return _runs(b)
    if not b:
        return _runs(a)
    a = _runs(a)
    b = _runs(b)
    if a[-1][0] < b[0][0]:  # disjoint ranges: slices of ordered data
        return a + b
    if b[-1][0] < a[0][0]:
        return b + a
    if _few(b, a):
        return _adjust(a, b, 1)
    if _few(a, b):
        return _adjust(b, a, 1)
    out: list[tuple] = []
    append = out.append
    i = j = 0
    na, nb = len(a), len(b)
    va, ca = a[0]
    vb, cb = b[0]
    while True:  # invariant: (va, ca) = a[i], (vb, cb) = b[j]
        if va < vb:
            append((va, ca))
            i += 1
            if i == na:
                break
            va, ca = a[i]
        elif vb < va:
            append((vb, cb))
            j += 1
            if j == nb:
                break
            vb, cb = b[j]
        else:
            append((va, ca + cb))
            i += 1
            j += 1
            if i == na or j == nb:
                break
            va, ca = a[i]
            vb, cb = b[j]
    out += a[i:]
    out += b[j:]
    return tuple(out)


class Quantile(Monoid):
    """Exact q-quantile of the window's numbers (nearest rank, see the module docstring).

    Partial: a tuple of ``(value, count)`` pairs sorted by value, one pair per distinct
    value (equal values such as 1 and 1.0 share a pair; which of them represents it is
    unspecified); identity ``()``. ``combine`` merges two such runs in linear time
    (a handful of runs go in by binary search); ``invert`` is the multiset difference.
    Memory grows with the number of *distinct* values in the window: holistic.
    Partials survive :mod:`kvs.codec` unchanged (tuples), and lists of lists are
    taken too. ``lower(())`` (an empty window) is ``None``.

    Inputs: real numbers, ints, floats and ``Fraction`` kept exactly; +-inf are ordinary
    values; NaN, bool and non-numbers raise :class:`MonoidError`.
    """

    identity = ()
    commutative = True
    invertible = True
    combine = staticmethod(_merge)

    def __init__(self, q: float) -> None:
        self.q = _check_q(q, type(self).__name__)

    def lift(self, value: Any) -> tuple:
        return ((_ordered(value, type(self).__name__), 1),)

    def lift_many(self, values: Sequence[Any]) -> list[tuple]:
        if _plain_ordered(values):
            return [((v, 1),) for v in values]
        return list(map(self.lift, values))

    def fold(self, acc: Sequence, partials: Sequence[Sequence]) -> tuple:
        """All the runs sorted at once (timsort merges the sorted runs in C)."""
        if len(partials) < 2:
            return _merge(acc, partials[0]) if partials else _runs(acc)
        return _coalesce(sorted(chain(_runs(acc), *map(_runs, partials)), key=_VALUE))

    def invert(self, total: Sequence, front: Sequence) -> tuple:
        """``total`` without ``front``'s values (ValueError if ``front`` is not part of it)."""
        total = _runs(total)
        if not front:
            return total
        front = _runs(front)
        if _few(front, total):
            return _adjust(total, front, -1)
        left = dict(front)
        out: list[tuple] = []
        for v, c in total:
            r = c - left.pop(v, 0)
            if r > 0:
                out.append((v, r))
            elif r < 0:
                raise ValueError(f"invert: the front holds {c - r} of {v!r}, the total only {c}")
        if left:
            raise ValueError(f"invert: the front holds {next(iter(left))!r}, which the total does not")
        return tuple(out)

    def lower(self, partial: Sequence) -> Any:
        if not partial:
            return None
        cumulative = list(accumulate(map(_COUNT, partial)))
        return partial[bisect_left(cumulative, _rank(self.q, cumulative[-1]))][0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.q!r})"


class Median(Quantile):
    """Exact median: :class:`Quantile` at q = 0.5, the *lower* median for an even count
    (``statistics.median_low``), always one of the inputs. ``None`` when empty."""

    def __init__(self) -> None:
        super().__init__(0.5)

    def __repr__(self) -> str:
        return "Median()"


# --------------------------------------------------------------------------- approximate

class ApproxQuantile(Monoid):
    """Approximate q-quantile from a KLL sketch (Apache DataSketches ``kll_doubles_sketch``).

    A partial holds O(k) values however many it summarizes (4.7 KB for 100,000 values
    at k = 200), and sketches merge, so a window's size barely changes its cost. The error is on the *rank*: the result's
    normalized rank is within ``rank_error`` of q with 99% confidence, where
    ``rank_error = kll_doubles_sketch.get_normalized_rank_error(k, False)`` (the
    library's "single-sided" epsilon, about 1.33% at the default k = 200; the
    "double-sided" one for PMF/CDF queries is 1.65%: DataSketches' KllSketch docs,
    https://apache.github.io/datasketches-java/6.1.1/org/apache/datasketches/kll/KllSketch.html,
    and https://apache.github.io/datasketches-python/5.2.0/quantiles/kll.html).
    The sketch is exact (the nearest-rank :class:`Quantile`) until it first compacts,
    i.e. for windows of at most k values, and q = 0 and 1 are always the exact minimum
    and maximum. Compaction is randomized, with random bits the library draws itself
    (Python cannot seed them): two runs, two combine orders, even two queries of an
    unchanged window that recombine its partials may give slightly different results,
    each within the bound.

    Partials are immutable and need no codec: ``None`` (empty, the identity), a
    ``float`` (one value: most per-tuple partials), or the sketch serialized as
    ``bytes``. ``combine`` builds a new sketch and never touches its arguments.
    Values are kept as 64-bit floats (ints beyond 2**53 are rounded); +-inf are
    values, NaN, bool and non-numbers raise :class:`MonoidError`. ``lower`` is the
    quantile (a float) or ``None`` when empty.
    """

    identity = None
    commutative = True

    def __init__(self, q: float, k: int = 200) -> None:
        from datasketches import kll_doubles_sketch  # imported here: 70 ms that `import mta` need not pay

        who = type(self).__name__
        self.q = float(_check_q(q, who))
        if isinstance(k, bool) or not isinstance(k, int) or not 8 <= k <= 65_535:
            raise ValueError(f"{who} takes a sketch size k with 8 <= k <= 65535, got {k!r}")
        self.k = k
        self._kll = kll_doubles_sketch
        self.rank_error = kll_doubles_sketch.get_normalized_rank_error(k, False)

    def lift(self, value: Any) -> float:
        value = _ordered(value, type(self).__name__)
        try:
            return float(value)
        except OverflowError:
            raise MonoidError(f"{type(self).__name__} takes numbers within the float range, got {value!r}") from None

    def lift_many(self, values: Sequence[Any]) -> list[float]:
        if _plain_ordered(values):
            try:
                return list(map(float, values))
            except OverflowError:
                pass  # a huge int: lift names it
        return list(map(self.lift, values))

    def sketch(self, partial: Any) -> Any:
        """A new ``kll_doubles_sketch`` holding ``partial``'s values (for other quantiles,
        ranks or a CDF of the same window); changing it does not change the partial."""
        if partial.__class__ is bytes:
            return self._kll.deserialize(partial)
        sketch = self._kll(self.k)
        if partial is not None:
            sketch.update(partial)
        return sketch

    def combine(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return self.fold(a, (b,))

    def fold(self, acc: Any, partials: Sequence[Any]) -> Any:
        """One sketch for the whole run, serialized once."""
        parts = [p for p in chain((acc,), partials) if p is not None]
        if len(parts) < 2:
            return parts[0] if parts else None
        sketches = [p for p in parts if p.__class__ is bytes]
        sketch = self.sketch(sketches[0] if sketches else None)  # a copy: partials are shared
        for p in sketches[1:]:
            sketch.merge(self._kll.deserialize(p))
        for p in parts:
            if p.__class__ is not bytes:
                sketch.update(p)
        return sketch.serialize()

    def lower(self, partial: Any) -> float | None:
        if partial is None or partial.__class__ is not bytes:
            return partial
        sketch = self.sketch(partial)
        # the library answers q = 0 and 1 from the values it retained; it also keeps
        # the exact minimum and maximum
        if self.q == 0:
            return sketch.get_min_value()
        if self.q == 1:
            return sketch.get_max_value()
        return sketch.get_quantile(self.q, True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.q!r}, k={self.k})"
