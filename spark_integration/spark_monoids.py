"""Monoids with Spark's semantics for nulls and NaN, on msgpack-able partials.

Spark skips nulls in every aggregation but ``count(*)``/``first``/``last`` and orders
NaN above every number. The built-in :mod:`mta.monoid` monoids keep their C-speed
combines (``operator.add``, ``_min``, ``_max``); what differs is the partials of
nulls and NaN, which are three singletons:

- :data:`NULL` is neutral for ``+`` (``NULL + x == x + NULL == x``): a sum's
  identity and the partial of a null, so that an all-null window sums to NULL
  (lowered to null) while plain numbers still add in C.
- :data:`BOTTOM` < every value < :data:`NAN` < :data:`TOP` (strings, numbers,
  booleans alike): the identities of max and min (and the partials of nulls), and
  NaN as Spark orders it. The comparisons only run when a singleton is involved.

Each is stored as a msgpack ext type of its own (``kvs.codec``), so partials live
in Spark's state store and in Redis like plain values.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

from kvs import codec
from mta.monoid import ArgMax, ArgMin, Max, Min, Monoid


class _Null:
    """Nothing to add: the partial of a null in a sum (see the module docstring)."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        return other

    __radd__ = __add__

    def __repr__(self) -> str:
        return "NULL"

    def __reduce__(self) -> str:
        return "NULL"


NULL = _Null()


class _Rank:
    """A point of Spark's order outside the values: BOTTOM, NAN or TOP."""

    __slots__ = ("rank", "name")

    def __init__(self, rank: int, name: str) -> None:
        self.rank, self.name = rank, name

    def _key(self, other: Any) -> int:
        return other.rank if type(other) is _Rank else 0  # every value ranks 0

    def __lt__(self, other: Any) -> bool:
        return self.rank < self._key(other)

    def __le__(self, other: Any) -> bool:
        return self.rank <= self._key(other)

    def __gt__(self, other: Any) -> bool:
        return self.rank > self._key(other)

    def __ge__(self, other: Any) -> bool:
        return self.rank >= self._key(other)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


BOTTOM, NAN, TOP = _Rank(-1, "BOTTOM"), _Rank(1, "NAN"), _Rank(2, "TOP")
_RANKS = {r.name: r for r in (BOTTOM, NAN, TOP)}

# Codes below 32 are the library's own (mta.monoid's empty First/Last is 16).
codec.register(_Null, 17, lambda null: b"", lambda data: NULL)
codec.register(_Rank, 18, lambda rank: rank.name.encode(), lambda data: _RANKS[data.decode()])


class SparkSum(Monoid):
    """``sum``: NULL when every value is null (or the window is empty)."""

    identity = NULL
    commutative = True
    combine = staticmethod(operator.add)  # C speed; NULL only costs where there are nulls


class SparkMin(Min):
    """``min``: nulls (TOP) skipped, NaN (NAN) above every number."""

    identity = TOP


class SparkMax(Max):
    """``max``: nulls (BOTTOM) skipped, NaN (NAN) above every number."""

    identity = BOTTOM


class SparkMinBy(ArgMin):
    """``min_by(value, order)``: partial ``(order, value)``, None when empty; ties keep
    the oldest (event time, then arrival)."""


class SparkMaxBy(ArgMax):
    """``max_by(value, order)``; see :class:`SparkMinBy`."""


def _union(a: tuple, b: tuple) -> tuple:
    if not b:
        return a
    if not a:
        return b
    return tuple(set(a).union(b))


class Distinct(Monoid):
    """``count_distinct``: the distinct values as a tuple (NaN is NAN: all NaN are one
    value; 0.0 and -0.0 are one, as in Spark). State grows with the distinct count."""

    identity = ()
    commutative = True
    combine = staticmethod(_union)

    def lower(self, partial: tuple) -> int:
        return len(partial)


# --------------------------------------------------------------------------- quantiles

#: Largest k of a KLL sketch (datasketches takes k < 2**16).
MAX_K = 65_535


def kll_k(accuracy: int) -> int:
    """The smallest KLL ``k`` whose normalized rank error (99% confidence, one
    quantile) is at most ``1 / accuracy`` (Spark's meaning of accuracy), capped at
    :data:`MAX_K`."""
    from datasketches import kll_doubles_sketch

    target = 1.0 / accuracy
    lo, hi = 8, MAX_K
    if kll_doubles_sketch.get_normalized_rank_error(hi, False) > target:
        return hi
    while lo < hi:
        mid = (lo + hi) // 2
        if kll_doubles_sketch.get_normalized_rank_error(mid, False) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def rank_error(k: int) -> float:
    """The documented normalized rank error of one quantile of a sketch of this ``k``
    (99% confidence)."""
    from datasketches import kll_doubles_sketch

    return kll_doubles_sketch.get_normalized_rank_error(k, False)


class Quantiles(Monoid):
    """``percentile_approx``: a KLL sketch (Apache DataSketches) of the non-NaN values
    and a count of NaN (Spark orders NaN last). Partial: None (empty), a float (one
    value: most panes hold few), or ``(sketch bytes, NaN count)``. Mergeable, so a
    window's quantiles come from its O(log n) partials, never from its raw values."""

    identity = None
    commutative = True

    def __init__(self, k: int) -> None:
        self.k = k
        self.combine = self._combine

    def _sketch(self, partial: Any, into: Any) -> int:
        """Add ``partial`` to sketch ``into``; return its NaN count."""
        from datasketches import kll_doubles_sketch

        if type(partial) is float:
            if partial != partial:
                return 1
            into.update(partial)
            return 0
        data, nans = partial
        if data:
            into.merge(kll_doubles_sketch.deserialize(data))
        return nans

    def _pack(self, sketch: Any, nans: int) -> tuple:
        return (sketch.serialize() if not sketch.is_empty() else b"", nans)

    def _combine(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return self.fold(a, [b])

    def fold(self, acc: Any, partials: Sequence[Any]) -> Any:
        """One sketch for the whole run (a pane's values go in as floats)."""
        from datasketches import kll_doubles_sketch

        parts = [p for p in (acc, *partials) if p is not None]
        if len(parts) < 2:
            return parts[0] if parts else None
        sketch, nans = kll_doubles_sketch(self.k), 0
        for p in parts:
            nans += self._sketch(p, sketch)
        return self._pack(sketch, nans)

    def quantiles(self, partial: Any, percentages: Sequence[float]) -> list[float] | None:
        """The values at ``percentages`` (inclusive ranks; NaN when the rank falls
        among the NaN), None when empty."""
        from datasketches import kll_doubles_sketch

        if partial is None:
            return None
        sketch = kll_doubles_sketch(self.k)
        nans = self._sketch(partial, sketch)
        n, total = sketch.n, sketch.n + nans
        out = []
        for p in percentages:
            rank = max(1, math.ceil(p * total))  # Spark: the smallest value with at least p of them <= it
            # (rank - 1/2) / n: rank / n can round up past rank in the sketch's float arithmetic
            out.append(math.nan if rank > n else sketch.get_quantile((rank - 0.5) / n, True))
        return out

    def __repr__(self) -> str:
        return f"Quantiles(k={self.k})"

