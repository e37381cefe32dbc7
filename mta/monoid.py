"""Monoids: the aggregation functions a window computes (paper section 3.3).

An aggregation is map -> reduce -> map: ``lift`` turns an input value into a
*partial*, ``combine`` reduces partials with an associative operation whose
neutral element is ``identity``, and ``lower`` turns a partial into the result.
Algorithms only ever call ``combine`` and read ``identity``; they never assume
commutativity or an inverse unless the monoid declares it.

A new monoid is a few lines::

    class Concat(Monoid):
        identity = ""
        combine = staticmethod(operator.add)   # a C function keeps the hot path fast

Built-ins set ``combine`` to a C builtin or a plain function (not a bound
method) wherever they can: the algorithms call it millions of times a second.
"""

from __future__ import annotations

import keyword
import math
import numbers
import operator
import sys
import types
from collections import namedtuple
from collections.abc import Mapping as _Mapping
from fractions import Fraction
from functools import reduce
from itertools import repeat
from typing import Any, Callable, ClassVar, Sequence

from kvs import codec

__all__ = [
    "Monoid", "MonoidError",
    "Count", "Sum", "Min", "Max", "Mean", "Variance", "StdDev", "GeometricMean",
    "ArgMin", "ArgMax", "MinCount", "MaxCount", "First", "Last", "Collect", "Record",
]


class MonoidError(ValueError):
    """An input value a monoid cannot lift (wrong type, NaN where not allowed, ...)."""


class Monoid:
    """Base class and protocol of every monoid.

    Subclasses set ``identity`` and ``combine`` (associative, ``identity`` neutral
    on both sides) and may override ``lift`` / ``lower``. Properties:

    - ``commutative``: combine(a, b) == combine(b, a);
    - ``invertible``: ``invert(total, front)`` returns x with combine(front, x) == total;
    - ``selection``: combine(a, b) is always a or b (min, max, first, last);
    - ``ordered_ties``: on equal-comparing values (0.0 and -0.0, 2 and 2.0) combine's
      answer depends on the operands' order (Min keeps the left one), so only operands in
      window order answer the fold bit for bit (Min, Max, MinCount, MaxCount, ArgMin,
      ArgMax, First, Last; a Record with such a field). A commutative monoid without it
      and not a selection combines equal-comparing values to the same bits in either order
      (FlatFAT reads a wrapped window's root only then).

    ``combine`` must not raise on partials that ``lift`` made: ``lift`` runs before a
    window changes, so it is where a value is refused (MonoidError, the window unchanged).
    A combine that raises does so in the middle of an algorithm's update, and leaves the
    window in a state that no longer describes its updates. The built-in monoids lift
    every number to an int, a Fraction or a float, which combine with each other, except
    for one known case: a sum of an int or Fraction beyond the float range (about 1.8e308)
    and a float raises OverflowError, as Python's ``10**400 + 1.0`` does.
    """

    identity: ClassVar[Any] = None
    commutative: ClassVar[bool] = False
    invertible: ClassVar[bool] = False
    selection: ClassVar[bool] = False
    ordered_ties: ClassVar[bool] = False

    combine: Callable[[Any, Any], Any]

    def lift(self, value: Any) -> Any:
        """Input value -> partial. Raises MonoidError on a value it cannot take."""
        return value

    def lift_many(self, values: Sequence[Any]) -> list[Any]:
        """``[lift(v) for v in values]``; built-ins override it with C-speed checks for
        batches of plain numbers (the gRPC server's and Spark's hot path)."""
        return list(map(self.lift, values))

    def lower(self, partial: Any) -> Any:
        """Partial -> result."""
        return partial

    def fold(self, acc: Any, partials: Sequence[Any]) -> Any:
        """``acc`` combined with ``partials`` in order (``functools.reduce``); wrappers of
        monoids may do it with fewer Python calls."""
        return reduce(self.combine, partials, acc)

    def invert(self, total: Any, front: Any) -> Any:
        """The partial x with combine(front, x) == total (invertible monoids only)."""
        raise TypeError(f"{type(self).__name__} is not invertible")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_INF = math.inf
_NEG_INF = -math.inf


def _number(value: Any, who: str, *, finite: bool = True) -> Any:
    """Check that ``value`` is a real number (bool excluded); NaN/inf refused when ``finite``.

    Accepts int, float and any ``numbers.Real``, and returns one of three kinds, which
    combine with each other without error: an ``int`` (any integer: numpy's fixed-width
    arithmetic would wrap around, or overflow when combined with a large int), a
    ``Fraction`` (exact) or a ``float``. Any other real (numpy's float32, float16 and
    longdouble, a float subclass) becomes a ``float``: mixed with a Fraction, numpy's
    longdouble raised from the combine after the update was stored; float32 was summed in
    float32 or float64 depending on the order of the operands.
    """
    cls = value.__class__
    if cls is int or (cls is float and _NEG_INF < value < _INF):
        return value
    if cls is not float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise MonoidError(f"{who} takes a real number, got {cls.__name__} {value!r}")
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Rational):
            if cls is not Fraction:
                value = Fraction(value.numerator, value.denominator)
        else:
            try:
                number = float(value)
            except OverflowError:
                number = None
            if number is None or (number in (_INF, _NEG_INF) and value != number):  # numpy's longdouble: inf
                raise MonoidError(f"{who} takes a number within the float range, got {value!r}")
            value = number
        if not finite:
            return value
    if finite:
        try:
            ok = math.isfinite(value)
        except OverflowError:  # a huge Fraction is still finite
            ok = True
        if not ok:
            raise MonoidError(f"{who} takes a finite number, got {value!r}")
    return value


_PLAIN = frozenset((int, float))


def _plain(values: Sequence[Any], floats_ok: Callable[[Sequence[Any]], bool]) -> bool:
    """Whether every value is an int or a float, and ``floats_ok(values)`` when there
    are floats; checked in C loops. False may also mean "check them one by one"
    (``floats_ok`` may overflow on huge ints)."""
    kinds = set(map(type, values))
    if not kinds <= _PLAIN:
        return False
    if float not in kinds:
        return True
    try:
        return floats_ok(values)
    except OverflowError:
        return False


def plain_finite(values: Sequence[Any]) -> bool:
    """Whether every value is a finite int or float (False: check them one by one;
    a sum of finite values can overflow)."""
    return _plain(values, lambda vs: math.isfinite(sum(vs)))


#: The largest int a float holds (about 1.8e308).
_FLOAT_MAX = int(sys.float_info.max)


def _bounded(value: Any, who: str, bound: int, why: str) -> Any:
    """``value``, an int of magnitude at most ``bound`` or any other number: the monoids whose
    results are floats refuse an int their arithmetic would overflow on (``OverflowError``
    from ``int / int``), before the window changes."""
    if value.__class__ is int and not -bound <= value <= bound:
        raise MonoidError(f"{who} takes integers {why}, got {value!r}")
    return value


def _plain_ordered(values: Sequence[Any]) -> bool:
    """Whether every value is an int or a float other than NaN (False: check them one by one)."""
    return _plain(values, lambda vs: not any(map(math.isnan, vs)))


def _ordered(value: Any, who: str) -> Any:
    """A real number that can be ordered: +-inf allowed, NaN (unordered) refused."""
    value = _number(value, who, finite=False)
    if value != value:
        raise MonoidError(f"{who} cannot take NaN (it has no order), got {value!r}")
    return value


class Count(Monoid):
    """Number of updates (the value itself is ignored)."""

    identity = 0
    commutative = True
    invertible = True
    combine = staticmethod(operator.add)

    def lift(self, value: Any) -> int:
        return 1

    def lift_many(self, values: Sequence[Any]) -> list[int]:
        return [1] * len(values)

    def fold(self, acc: int, partials: Sequence[int]) -> int:
        return acc + sum(partials)  # ints: exact in any order

    def invert(self, total: int, front: int) -> int:
        return total - front


class Sum(Monoid):
    """Sum of numbers. Floating point sums are only approximately associative."""

    identity = 0
    commutative = True
    invertible = True
    combine = staticmethod(operator.add)

    def lift(self, value: Any) -> Any:
        return _number(value, "Sum")

    def lift_many(self, values: Sequence[Any]) -> list[Any]:
        return list(values) if plain_finite(values) else list(map(self.lift, values))

    def invert(self, total: Any, front: Any) -> Any:
        return total - front


# --------------------------------------------------------------------------- selection

def _min(a: Any, b: Any) -> Any:
    # Faster than builtin min(a, b) (no argument parsing); ties keep the left operand.
    return a if a <= b else b


def _max(a: Any, b: Any) -> Any:
    return a if a >= b else b


class Min(Monoid):
    """Smallest number (+inf when empty). NaN is refused: it breaks the ordering."""

    identity = math.inf
    commutative = True
    selection = True
    ordered_ties = True
    combine = staticmethod(_min)

    def lift(self, value: Any) -> Any:
        return _ordered(value, "Min")

    def fold(self, acc: Any, partials: Sequence[Any]) -> Any:
        # the builtin keeps the first of equal values, as the left fold does
        return _min(acc, min(partials)) if partials else acc

    def lift_many(self, values: Sequence[Any]) -> list[Any]:
        return list(values) if _plain_ordered(values) else list(map(self.lift, values))


class Max(Monoid):
    """Largest number (-inf when empty). NaN is refused: it breaks the ordering."""

    identity = -math.inf
    commutative = True
    selection = True
    ordered_ties = True
    combine = staticmethod(_max)

    def lift(self, value: Any) -> Any:
        return _ordered(value, "Max")

    def fold(self, acc: Any, partials: Sequence[Any]) -> Any:
        # the builtin keeps the first of equal values, as the left fold does
        return _max(acc, max(partials)) if partials else acc

    def lift_many(self, values: Sequence[Any]) -> list[Any]:
        return list(values) if _plain_ordered(values) else list(map(self.lift, values))


# --------------------------------------------------------------------------- moments

def _add2(a: tuple, b: tuple) -> tuple:
    """Element-wise sum of two pairs."""
    return (a[0] + b[0], a[1] + b[1])


class Mean(Monoid):
    """Arithmetic mean. Partial ``(sum, count)``; lower is ``None`` for an empty window."""

    identity = (0, 0)
    commutative = True
    invertible = True
    combine = staticmethod(_add2)

    def lift(self, value: Any) -> tuple:
        return (_bounded(_number(value, "Mean"), "Mean", _FLOAT_MAX, "within the float range (the mean is one)"), 1)

    def lift_many(self, values: Sequence[Any]) -> list[tuple]:
        if plain_finite(values) and (not values or -_FLOAT_MAX <= min(values) and max(values) <= _FLOAT_MAX):
            return list(zip(values, repeat(1)))
        return list(map(self.lift, values))

    def lower(self, partial: tuple) -> Any:
        s, c = partial
        return s / c if c else None

    def fold(self, acc: tuple, partials: Sequence[tuple]) -> tuple:
        if not partials:
            return acc
        sums, counts = zip(*partials)
        return (reduce(operator.add, sums, acc[0]), reduce(operator.add, counts, acc[1]))  # the left fold's order

    def invert(self, total: tuple, front: tuple) -> tuple:
        return (total[0] - front[0], total[1] - front[1])


def _chan(a: tuple, b: tuple) -> tuple:
    """Merge two ``(count, mean, M2)`` partials (Chan, Golub & LeVeque's parallel formula)."""
    na = a[0]
    if not na:
        return b
    nb = b[0]
    if not nb:
        return a
    n = na + nb
    ma = a[1]
    delta = b[1] - ma
    return (n, ma + delta * nb / n, a[2] + b[2] + delta * delta * na * nb / n)


#: Ints up to this magnitude keep Chan's merge within floats: a deviation squared, times
#: the counts, stays below 2**1024 for windows of up to 2**120 updates.
_VARIANCE_MAX = 2 ** 450


class Variance(Monoid):
    """Variance, population (``ddof=0``, default) or sample (``ddof=1``).

    Partial ``(count, mean, M2)`` (M2 = sum of squared deviations from the mean),
    merged with Chan et al.'s formula, which stays accurate where the naive
    sum-of-squares formula cancels catastrophically. The identity
    ``(0, 0.0, 0.0)`` is exactly neutral (an empty side is returned unchanged).
    Fraction inputs give exact results. ``lower`` is ``None`` when count <= ddof.

    ``invert`` runs the formula backwards. With floats it loses precision when
    the remaining part is small relative to the total, so a window that only ever
    subtracts can drift; prefer a non-inverting algorithm when that matters.
    """

    identity = (0, 0.0, 0.0)
    commutative = True
    invertible = True
    combine = staticmethod(_chan)

    def __init__(self, ddof: int = 0) -> None:
        if ddof.__class__ is not int or ddof not in (0, 1):
            raise ValueError(f"{type(self).__name__} ddof must be 0 or 1, got {ddof!r}")
        self.ddof = ddof

    def lift(self, value: Any) -> tuple:
        # M2 is the int 0 so that Fraction inputs stay exact.
        who = type(self).__name__
        return (1, _bounded(_number(value, who), who, _VARIANCE_MAX, "below 2**450 in magnitude (squared "
                            "deviations must fit a float)"), 0)

    def lower(self, partial: tuple) -> Any:
        n, _, m2 = partial
        if n <= self.ddof:
            return None
        return m2 / (n - self.ddof)

    def invert(self, total: tuple, front: tuple) -> tuple:
        n, m, m2 = total
        na, ma, m2a = front
        nb = n - na
        if nb <= 0:
            if nb < 0:
                raise ValueError(f"{type(self).__name__}.invert: front has more elements than total")
            return self.identity
        if not na:
            return total
        mb = ma + (m - ma) * n / nb
        delta = mb - ma
        if nb == 1:
            m2b = 0  # exact: one value has no spread
        else:
            m2b = m2 - m2a - delta * delta * na * nb / n
            if m2b < 0:  # float rounding
                m2b = 0
        return (nb, mb, m2b)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ddof={self.ddof})"


class StdDev(Variance):
    """Standard deviation: the square root of :class:`Variance` (same partial and ``ddof``)."""

    def lower(self, partial: tuple) -> Any:
        var = Variance.lower(self, partial)
        return None if var is None else math.sqrt(var)


class GeometricMean(Monoid):
    """Geometric mean of positive numbers. Partial ``(sum of logs, count)``.

    Summing logs cannot overflow the way a running product does. Invertible by
    subtraction (floats: the log-sum may drift slightly after many inversions).
    """

    identity = (0.0, 0)
    commutative = True
    invertible = True
    combine = staticmethod(_add2)

    def lift(self, value: Any) -> tuple:
        value = _bounded(_number(value, "GeometricMean"), "GeometricMean", _FLOAT_MAX,
                         "within the float range (the geometric mean is one)")
        if value <= 0:
            raise MonoidError(f"GeometricMean takes positive numbers, got {value!r}")
        try:
            return (math.log(value), 1)
        except (ValueError, OverflowError) as e:  # e.g. a Fraction that rounds to 0.0
            raise MonoidError(f"GeometricMean cannot take the log of {value!r}: {e}") from None

    def lower(self, partial: tuple) -> Any:
        s, c = partial
        return math.exp(s / c) if c else None

    def invert(self, total: tuple, front: tuple) -> tuple:
        return (total[0] - front[0], total[1] - front[1])


# --------------------------------------------------------------------------- arg / count

def _argmin(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a if a[0] <= b[0] else b


def _argmax(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a if a[0] >= b[0] else b


class _Arg(Monoid):
    identity = None
    selection = True
    ordered_ties = True
    commutative = False  # ties keep the left (oldest) operand

    def lift(self, value: Any) -> tuple:
        who = type(self).__name__
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise MonoidError(f"{who} takes a (key, value) pair, got {type(value).__name__} {value!r}")
        key, v = value
        return (_ordered(v, who), key)

    def lower(self, partial: Any) -> Any:
        return None if partial is None else (partial[1], partial[0])


class ArgMin(_Arg):
    """The ``(key, value)`` input with the smallest value, e.g. ``(timestamp, reading)``.

    Partial ``(value, key)`` or ``None`` (empty). Only values are compared, so keys
    need no ordering. Ties keep the OLDEST input, hence not commutative.
    """

    combine = staticmethod(_argmin)


class ArgMax(_Arg):
    """The ``(key, value)`` input with the largest value; ties keep the OLDEST. See ArgMin."""

    combine = staticmethod(_argmax)


def _mincount(a: tuple, b: tuple) -> tuple:
    av = a[0]
    bv = b[0]
    if av < bv:
        return a
    if bv < av:
        return b
    return (av, a[1] + b[1])


def _maxcount(a: tuple, b: tuple) -> tuple:
    av = a[0]
    bv = b[0]
    if av > bv:
        return a
    if bv > av:
        return b
    return (av, a[1] + b[1])


class _ExtremeCount(Monoid):
    commutative = True
    ordered_ties = True  # a tie adds the counts and keeps the left operand's value

    def lift(self, value: Any) -> tuple:
        return (_number(value, type(self).__name__), 1)

    def lower(self, partial: tuple) -> Any:
        return partial if partial[1] else None


class MinCount(_ExtremeCount):
    """Smallest value and how many times it occurs: partial and result ``(value, count)``.

    Identity ``(inf, 0)``; ``lower`` is ``None`` when empty. Only finite numbers
    are taken (an infinite input would share the identity's value).
    """

    identity = (math.inf, 0)
    combine = staticmethod(_mincount)


class MaxCount(_ExtremeCount):
    """Largest value and how many times it occurs (identity ``(-inf, 0)``). See MinCount."""

    identity = (-math.inf, 0)
    combine = staticmethod(_maxcount)


# --------------------------------------------------------------------------- order

class _Empty:
    """The identity of First / Last: a private singleton, so ``None`` can be a value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<empty>"

    def __reduce__(self) -> str:  # pickle / copy keep the singleton
        return "_EMPTY"


_EMPTY = _Empty()


def _first(a: Any, b: Any) -> Any:
    return b if a is _EMPTY else a


def _last(a: Any, b: Any) -> Any:
    return a if b is _EMPTY else b


class _Order(Monoid):
    identity = _EMPTY
    selection = True
    ordered_ties = True

    def lift(self, value: Any) -> Any:
        if value is _EMPTY:
            raise MonoidError(f"{type(self).__name__} cannot take its own identity {value!r}")
        cls = value.__class__
        if cls is not int and cls is not float and cls.__module__ == "numpy" and isinstance(value, numbers.Real):
            # a numpy number as the Python number it is, as the other monoids and numpy columns give it
            return _number(value, type(self).__name__, finite=False)
        return value

    def lower(self, partial: Any) -> Any:
        return None if partial is _EMPTY else partial


class First(_Order):
    """The oldest value of the window (any value, ``None`` included); ``None`` when empty."""

    combine = staticmethod(_first)


class Last(_Order):
    """The newest value of the window (any value, ``None`` included); ``None`` when empty."""

    combine = staticmethod(_last)


class Collect(Monoid):
    """All values, oldest first: partial is a tuple, combine is concatenation, lower a list.

    Associative but not commutative: the property tests use it to catch algorithms
    that swap operands. O(n) per combine, so meant for tests and small windows.
    ``invert`` drops the front's elements from the total.
    """

    identity = ()
    invertible = True
    combine = staticmethod(operator.add)

    def lift(self, value: Any) -> tuple:
        return (value,)

    def lower(self, partial: tuple) -> list:
        return list(partial)

    def invert(self, total: tuple, front: tuple) -> tuple:
        return total[len(front):]


# --------------------------------------------------------------------------- product

def _product_combine(combines: tuple) -> Callable[[tuple, tuple], tuple]:
    """A combine for tuples of partials, specialised to ``len(combines)`` fields.

    The source is generated from field indices only (no user text). It is about
    twice as fast as ``tuple(map(operator.call, combines, a, b))`` for 2-10 fields.
    """
    n = len(combines)
    aa = ", ".join(f"a{i}" for i in range(n))
    bb = ", ".join(f"b{i}" for i in range(n))
    body = ", ".join(f"c{i}(a{i}, b{i})" for i in range(n))
    src = (
        "def combine(a, b):\n"
        f"    {aa}, = a\n"
        f"    {bb}, = b\n"
        f"    return ({body},)\n"
    )
    namespace: dict[str, Any] = {f"c{i}": c for i, c in enumerate(combines)}
    exec(src, namespace)  # noqa: S102 - generated from integers only
    fn = namespace["combine"]
    fn.__qualname__ = "Record.combine"
    return fn


class Record(Monoid):
    """Product monoid: one named monoid per field, aggregated together (paper section 5.8).

    ``Record(total=Sum(), peak=Max())`` or ``Record({"total": Sum(), ...})``;
    fields keep the given order. The partial is the tuple of the field partials,
    the identity the tuple of their identities.

    ``lift`` takes a mapping with exactly one value per field, or any non-mapping
    value, which is fed to every field (``Record(n=Count(), avg=Mean()).lift(3.0)``).
    ``lower`` returns ``{field: lowered}``; ``view(partial)`` gives the field
    *partials* as attributes, for slide policies (``view(old).total``).
    Commutative / invertible when every field is; ties ordered when a field's are; never a selection.
    """

    selection = False

    def __init__(self, fields: Any = None, /, **more: Any) -> None:
        spec: dict[str, Any] = {}
        if fields is not None:
            if not isinstance(fields, dict):
                fields = dict(fields)
            spec.update(fields)
        for name, m in more.items():
            if name in spec:
                raise ValueError(f"Record field {name!r} given twice")
            spec[name] = m
        if not spec:
            raise ValueError("Record needs at least one field")
        checked: dict[str, Monoid] = {}
        for name, m in spec.items():
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) \
                    or name.startswith("_"):
                raise ValueError(
                    f"Record field name must be an identifier not starting with '_', got {name!r}")
            if isinstance(m, type) and issubclass(m, Monoid):
                m = m()
            if not isinstance(m, Monoid):
                raise TypeError(f"Record field {name!r} must be a Monoid, got {type(m).__name__}")
            checked[name] = m
        self._fields = types.MappingProxyType(checked)
        self._names = tuple(checked)
        self._monoids = tuple(checked.values())
        self._lifts = tuple((name, m.lift) for name, m in checked.items())
        self.identity = tuple(m.identity for m in self._monoids)
        self.commutative = all(m.commutative for m in self._monoids)
        self.invertible = all(m.invertible for m in self._monoids)
        self.ordered_ties = any(m.ordered_ties for m in self._monoids)
        self.combine = _product_combine(tuple(m.combine for m in self._monoids))
        self._view = namedtuple("RecordView", self._names)

    @property
    def fields(self) -> types.MappingProxyType:
        """Read-only ``{name: monoid}`` in field order."""
        return self._fields

    def lift(self, value: Any) -> tuple:
        if type(value) is dict and len(value) == len(self._names):
            try:  # the common case; anything wrong is reported by the checked path below
                return tuple([lift(value[name]) for name, lift in self._lifts])
            except (KeyError, MonoidError):
                pass
        names = self._names
        if isinstance(value, _Mapping):
            extra = [k for k in value if k not in self._fields]
            if extra:
                raise MonoidError(f"Record has no field {extra[0]!r} (fields: {', '.join(names)})")
            out = []
            for name, m in zip(names, self._monoids):
                try:
                    v = value[name]
                except KeyError:
                    raise MonoidError(f"Record input is missing field {name!r}") from None
                out.append(self._lift_field(name, m, v))
            return tuple(out)
        try:  # the common case; a refusal is named by the path below
            return tuple([lift(value) for _, lift in self._lifts])
        except MonoidError:
            return tuple(self._lift_field(name, m, value) for name, m in zip(names, self._monoids))

    def lift_many(self, values: Sequence[Any]) -> list[tuple]:
        """Field by field (each field's own ``lift_many``) when every value is a dict of
        exactly the fields; anything else one by one, for the errors of :meth:`lift`."""
        names = self._names
        if all(type(v) is dict and len(v) == len(names) for v in values):
            try:
                columns = [m.lift_many([v[name] for v in values]) for name, m in zip(names, self._monoids)]
            except (KeyError, MonoidError):
                pass
            else:
                return list(zip(*columns)) if values else []
        return list(map(self.lift, values))

    def fold(self, acc: tuple, partials: Sequence[tuple]) -> tuple:
        """Field by field (each field's own ``fold``) for long runs."""
        if len(partials) < 4:
            return reduce(self.combine, partials, acc)
        return tuple([m.fold(a, column) for m, a, column in zip(self._monoids, acc, zip(*partials))])

    @staticmethod
    def _lift_field(name: str, m: Monoid, value: Any) -> Any:
        try:
            return m.lift(value)
        except MonoidError as e:
            raise MonoidError(f"Record field {name!r}: {e}") from e

    def lower(self, partial: tuple) -> dict:
        return {name: m.lower(p) for name, m, p in zip(self._names, self._monoids, partial)}

    def invert(self, total: tuple, front: tuple) -> tuple:
        if not self.invertible:
            bad = [n for n, m in self._fields.items() if not m.invertible]
            raise TypeError(f"Record is not invertible (fields {', '.join(bad)} are not)")
        return tuple(m.invert(t, f) for m, t, f in zip(self._monoids, total, front))

    def view(self, partial: tuple) -> Any:
        """The partial as a namedtuple: one attribute per field, holding that field's partial."""
        return self._view._make(partial)

    def __reduce__(self) -> Any:  # the generated combine is not picklable; rebuild it
        return (Record, (dict(self._fields),))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={m!r}" for n, m in self._fields.items())
        return f"Record({inner})"


# First / Last keep their identity through a durable store.
codec.register(_Empty, 16, lambda empty: b"", lambda data: _EMPTY)
