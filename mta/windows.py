"""Window types for :class:`mta.Stream`: what a query asks for, not how it is computed.

Every time window is half-open, ``[start, end)``, in event time. The classification of
the slicing paper (section 4.4) decides how the engine serves each type:

- context free (``Tumbling``, ``Sliding``): every edge is known in advance;
- forward context free (``Punctuation``): edges come with the tuples (a late punctuation
  splits a slice);
- context aware (``Session``): edges move as tuples arrive, but never need a split
  that recomputes a slice (paper section 5.1, condition 2);
- count measure (``Count``): positions in event-time order, shifted by late tuples;
- forward context aware (``Count(size, every=...)``, ``Policy``): where a window starts
  depends on the tuples before its end, so the engine keeps their tuples.

The specs are plain immutable records: a stream's snapshot checks them by ``repr``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

__all__ = ["WindowType", "Tumbling", "Sliding", "Session", "Count", "Punctuation", "Policy"]


def _positive(value: Any, what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}")
    return value


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be an int > 0, got {value!r}")
    return value


class WindowType:
    """Base of the window specs."""

    #: "time" or "count": the measure the window's bounds are in
    measure = "time"


@dataclass(frozen=True)
class Sliding(WindowType):
    """Windows ``[k*slide + offset, k*slide + offset + size)`` for every integer k.

    Reported when the watermark reaches the end. ``slide > size`` leaves gaps that
    belong to no window.
    """

    size: float
    slide: float
    offset: float = 0

    def __post_init__(self) -> None:
        _positive(self.size, "size")
        _positive(self.slide, "slide")
        if isinstance(self.offset, bool) or not isinstance(self.offset, (int, float)) or not math.isfinite(self.offset):
            raise ValueError(f"offset must be a finite number, got {self.offset!r}")
        # Edges are exact: with a float among the three, each is n * unit (unit = p / q, the
        # values read as the decimals or simple fractions that print them) and an edge is the
        # float nearest n * p / q, so that a window's end and a later window's start (or a
        # sum of slides) are the same float: Sliding(1, 0.1) starts a window at 0.3, not at
        # 0.30000000000000004, and ends one there too.
        values = (self.size, self.slide, self.offset)
        if all(type(v) is int for v in values):
            exact = None
        else:
            fractions = [as_fraction(v) for v in values]
            q = math.lcm(*(f.denominator for f in fractions))
            p = math.gcd(*(int(f * q) for f in fractions if f))
            exact = (p, q) + tuple(int(f * q) // p for f in fractions)
        object.__setattr__(self, "_exact", exact)

    # Window k is [start(k), end(k)). first_above corrects the float rounding of k's estimate.
    def start(self, k: int) -> Any:
        exact = self._exact
        if exact is None:
            return self.offset + k * self.slide
        p, q, _, slide, offset = exact
        return (offset + k * slide) * p / q

    def end(self, k: int) -> Any:
        exact = self._exact
        if exact is None:
            return self.offset + k * self.slide + self.size
        p, q, size, slide, offset = exact
        return (offset + k * slide + size) * p / q

    def first_starting_after(self, t: Any) -> int:
        """The smallest k with start(k) > t."""
        k = floor_quotient(t - self.offset, self.slide) + 1
        if type(t) is int and self._exact is None:  # integers: the floor division is exact
            return k
        if self.start(k - 1) > t or self.start(k) <= t:
            k = first_above(self.start, t, k)
        return k

    def first_ending_after(self, t: Any) -> int:
        """The smallest k with end(k) > t."""
        k = floor_quotient(t - self.size - self.offset, self.slide) + 1
        if type(t) is int and self._exact is None:  # integers: the floor division is exact
            return k
        if self.end(k - 1) > t or self.end(k) <= t:
            k = first_above(self.end, t, k)
        return k

    def next_edge(self, t: Any) -> Any:
        """The smallest window start or end > t (the Stream Slicer's ``getNextEdge``)."""
        return min(self.start(self.first_starting_after(t)), self.end(self.first_ending_after(t)))

    def floor_edge(self, t: Any) -> Any:
        """The largest window start or end <= t."""
        return max(self.start(self.first_starting_after(t) - 1), self.end(self.first_ending_after(t) - 1))


def floor_quotient(x: Any, d: Any) -> int:
    """``x // d`` as an int, exact for ints; for floats whose quotient overflows (1e308 // 0.5),
    the exact quotient of their values (an estimate for :func:`first_above` either way)."""
    q = x // d
    if type(q) is float and not math.isfinite(q):
        return int(Fraction(x) // Fraction(d))
    return int(q)


def first_above(bound: Callable[[int], Any], t: Any, k: int) -> int:
    """The smallest integer j with ``bound(j) > t``, for a non-decreasing ``bound`` (a spec's
    ``start`` or ``end``: rounding keeps them monotone) and ``k`` an estimate of j.

    A float's estimate may be off by ulp(t) / slide windows (about 1e290 at t = 1e307), so
    the search gallops from ``k`` (steps doubling) and then bisects: O(log error) calls."""
    if bound(k) <= t:  # j > k
        lo, step = k, 1
        hi = k + 1
        while bound(hi) <= t:
            lo, step = hi, step * 2
            hi = lo + step
    else:  # j <= k
        hi, step = k, 1
        lo = k - 1
        while bound(lo) > t:
            hi, step = lo, step * 2
            lo = hi - step
    while hi - lo > 1:  # bound(lo) <= t < bound(hi)
        mid = (lo + hi) // 2
        if bound(mid) <= t:
            lo = mid
        else:
            hi = mid
    return hi


def as_fraction(v: int | float) -> Fraction:
    """``v`` as the fraction a user meant: a float as the decimal that prints it (0.1 -> 1/10),
    or a simple fraction whose float it is (1/3 -> 1/3)."""
    if isinstance(v, int):
        return Fraction(v)
    decimal = Fraction(repr(float(v)))
    simple = decimal.limit_denominator(1_000_000)
    return simple if float(simple) == v else decimal


class Tumbling(Sliding):
    """``Sliding(size, size, offset)``: windows that tile time."""

    def __init__(self, size: float, offset: float = 0) -> None:
        super().__init__(size, size, offset)

    def __repr__(self) -> str:
        return f"Tumbling(size={self.size!r}, offset={self.offset!r})"


@dataclass(frozen=True)
class Session(WindowType):
    """Runs of tuples less than ``gap`` apart; a session is ``[first, last + gap)``.

    Reported when the watermark reaches ``last + gap``. A late tuple may extend a
    session or merge two: the result then names the windows it replaces.
    """

    gap: float

    def __post_init__(self) -> None:
        _positive(self.gap, "gap")


@dataclass(frozen=True)
class Count(WindowType):
    """Count windows: positions in event-time order.

    ``Count(size, slide)``: windows end at positions ``k*slide`` (k >= 1) and cover
    ``[max(0, end - size), end)``; reported when ``end`` tuples are behind the
    watermark. ``Count(size, every=T)`` (multi-measure): at every ``k*T`` the
    watermark reaches, the last ``size`` tuples before it.
    """

    size: int
    slide: int | None = None
    every: float | None = None

    def __post_init__(self) -> None:
        _count(self.size, "size")
        if self.every is not None:
            if self.slide is not None:
                raise ValueError("Count takes a slide in tuples or every= in time, not both")
            _positive(self.every, "every")
        else:
            object.__setattr__(self, "slide", _count(self.slide if self.slide is not None else self.size, "slide"))

    @property
    def measure(self) -> str:  # type: ignore[override]
        return "time" if self.every is not None else "count"


@dataclass(frozen=True)
class Punctuation(WindowType):
    """A tuple whose value satisfies ``predicate`` starts a window ``[its ts, next punctuation)``.

    Tuples before the first punctuation belong to no window. ``predicate`` is called
    once per tuple when it is inserted (an exception there refuses the tuple).
    """

    predicate: Callable[[Any], bool]

    def __post_init__(self) -> None:
        if not callable(self.predicate):
            raise TypeError(f"Punctuation takes a callable predicate(value) -> bool, got {self.predicate!r}")

    def __repr__(self) -> str:
        return f"Punctuation({getattr(self.predicate, '__qualname__', repr(self.predicate))})"


@dataclass(frozen=True)
class Policy(WindowType):
    """Any MTA window slide policy, reported every ``every`` time units.

    At each ``k*every`` the watermark reaches, the aggregate of an ``mta.Window`` with
    this policy fed in event-time order with every tuple before that time.
    """

    policy: Callable[[Any, Any], bool]
    every: float

    def __post_init__(self) -> None:
        if not callable(self.policy):
            raise TypeError(f"Policy takes a callable wsp(total, old) -> bool, got {self.policy!r}")
        _positive(self.every, "every")

    def __repr__(self) -> str:
        return f"Policy({getattr(self.policy, '__qualname__', repr(self.policy))}, every={self.every!r})"
