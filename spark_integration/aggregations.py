"""What a window computes: named aggregations of columns, as one Record monoid, with
Spark's semantics (``groupBy(..., window(...)).agg(...)`` is the oracle of the tests).

    {"total": ("bytes", "sum"), "peak": ("bytes", "max"), "n": ("bytes", "count")}
    {"p": ("latency", "percentile_approx", 0.5)}                  # one percentage
    {"ps": ("latency", "percentile_approx", [0.5, 0.99], 1000)}   # several, and the accuracy
    {"host_at_peak": (("host", "cpu"), "max_by")}                 # max_by(host, cpu)
    {"spread": ("value", MyMonoid(), "double")}   # a user monoid and its Spark result type

Built-ins (Spark's function of the same name; result types as Spark's):

- ``sum`` (integers: bigint; float/double: double; decimal(p,s): decimal(min(38,p+10),s)),
  ``avg``/``mean`` (double; decimal(p,s): decimal(min(38,p+4),min(38,s+4)), rounded half
  up), ``stddev``/``stddev_samp``, ``stddev_pop``, ``variance``/``var_samp``, ``var_pop``
  (double; the sample ones are null below two values, ``spark.sql.legacy.statisticalAggregate``
  false): on numbers and decimals.
- ``min``/``max`` (numbers, decimals, strings, dates, timestamps, timestamp_ntz,
  booleans; the column's type), ``count`` (non-null values, bigint), ``count_distinct``.
- ``first``/``last``: the oldest/newest value in event time (ties: arrival order),
  nulls included as Spark's default ``first(col)``; ``first_ignore_nulls``/
  ``last_ignore_nulls`` are ``first(col, ignorenulls=True)``. Spark's own order is
  whatever order rows reach the aggregation; ours is event time, which is defined.
- ``collect_list`` (array; nulls skipped; in event time, ties in arrival order),
  ``min_by``/``max_by`` (the value at the smallest/largest order value; rows with a
  null order skipped; ties: the oldest).
- ``percentile_approx`` (numbers, decimals, dates, timestamps; the column's type, or an
  array of it for a list of percentages; default accuracy 10000): approximate, as
  Spark's is, but from a KLL sketch (Apache DataSketches) where Spark uses
  Greenwald-Khanna: the same definition (the smallest value with at least p of the
  window at or below it), so results agree within the rank error, not row for row.
  The rank error is :func:`spark_monoids.rank_error` of the sketch's k (the smallest k
  whose error is at most 1/accuracy, at most 65535): 1/accuracy up to an accuracy of
  about 21000, 4.8e-5 beyond (k is 269 for accuracy 100, 30565 for 10000). KLL compacts at random: a run can differ from the next within that error.
  Values go through doubles (longs beyond 2**53 and decimals of more than 15
  digits are rounded to the nearest double).

Nulls are skipped (an all-null window gives null; ``count`` 0; ``collect_list`` []),
NaN is a value ordered above every number (``sum``/``avg`` give NaN, ``max`` gives
NaN when there is one, ``min`` only when all are; ``count`` counts it), as in Spark.
``sum`` of bigints beyond 64 bits and decimals beyond their precision fail the task,
as Spark's ANSI mode does. ``avg`` of longs is exact here, where Spark sums them as
doubles (the two differ in the last bits beyond 2**53). Inside arrays (``collect_list``, a list of percentiles),
a float NaN comes out null: pyspark's Arrow conversion of nested values takes NaN
for null.

Everything knowable from the schema is checked here, when ``window_aggregate`` is
called: unknown names, types an aggregation does not take (Spark would cast a string
to a number at run time and fail on the first bad one; ``sum``/``avg`` of a timestamp
would be seconds as doubles: both refused), bad parameters.

Partials are msgpack-able (``kvs.codec``): decimals travel as unscaled ints, dates as
days, timestamps as microseconds (converted by Spark before Python sees them: pandas
would see local wall-clock times, ambiguous at a daylight saving change); lowering
builds Arrow arrays of the exact result type, so NaN stays NaN and null stays null.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from decimal import Context, Decimal
from itertools import repeat
from typing import Any, Callable, Mapping, Sequence

from mta.monoid import Collect, Count, First, Last, Mean, Monoid, Record, StdDev, Variance
from spark_integration.spark_monoids import (BOTTOM, NAN, NULL, TOP, Distinct, Quantiles, SparkMax, SparkMaxBy,
                                             SparkMin, SparkMinBy, SparkSum, kll_k)

_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_FRACTIONAL = ("float", "double")
_TIMES = ("date", "timestamp", "timestamp_ntz")
_ORDERED_OBJECTS = ("string", "boolean")
_EMPTY = First.identity
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DAY = dt.date(1970, 1, 1)
_BIGINT = 2 ** 63
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
#: Room for every digit of a decimal(38, s) (the default context rounds to 28 digits).
_EXACT = Context(prec=40)


def _decimal(kind: str) -> tuple[int, int] | None:
    match = _DECIMAL.fullmatch(kind)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _family(kind: str) -> str | None:
    """``integral``, ``fractional``, ``decimal``, ``time`` or ``object`` (strings,
    booleans); None for a type no built-in takes."""
    if kind in _INTEGRAL:
        return "integral"
    if kind in _FRACTIONAL:
        return "fractional"
    if _decimal(kind):
        return "decimal"
    if kind in _TIMES:
        return "time"
    if kind in _ORDERED_OBJECTS or re.fullmatch(r"(var)?char\(\d+\)", kind):
        return "object"
    return None


# --------------------------------------------------------------------------- input columns

@dataclass(frozen=True)
class _Column:
    """One input column's values as lifted: Python values (None for nulls; decimals as
    unscaled ints, dates as days, timestamps as microseconds), whether there are
    nulls, whether there are NaN."""

    values: list
    nulls: bool
    nans: bool


@dataclass(frozen=True)
class _Reader:
    """How one input column reaches pandas and is read there."""

    column: str
    kind: str

    @property
    def masked(self) -> bool:
        """Numbers and times travel as non-null values plus a null mask: pandas would
        turn an integer column with nulls into floats (losing bits beyond 2**53) and
        a float null into NaN."""
        return _family(self.kind) in ("integral", "fractional", "time")

    @property
    def value(self) -> str:
        return f"mta_in_{self.column}" if self.masked else self.column

    @property
    def mask(self) -> str:
        return f"mta_null_{self.column}"

    def spark_columns(self) -> list[Any]:
        from pyspark.sql import functions as F

        if not self.masked:
            return [F.col(self.column)]
        c = as_integer(F.col(self.column), self.kind) if self.kind in _TIMES else F.col(self.column)
        return [F.coalesce(c, F.lit(0)).alias(self.value), F.col(self.column).isNull().alias(self.mask)]

    def read(self, frame: Any) -> _Column:
        series = frame[self.value]
        values = series.tolist()
        if self.masked:
            mask = frame[self.mask].to_numpy()
            nulls = bool(mask.any())
            if nulls:
                values = [None if m else v for v, m in zip(values, mask.tolist())]
            nans = self.kind in _FRACTIONAL and bool(series.isna().any())  # the values are never null here
            return _Column(values, nulls, nans)
        nulls = bool(series.isna().any())
        scale = _decimal(self.kind)
        if scale is not None:  # unscaled ints: exact, msgpack-able, summed in C
            s = scale[1]
            values = [None if v is None else int(v.scaleb(s, _EXACT)) for v in values]
        return _Column(values, nulls, False)


def as_integer(c: Any, kind: str) -> Any:
    """A date as days, a timestamp as microseconds since the epoch (a TIMESTAMP_NTZ's wall
    clock read as UTC: exact, whatever the session zone)."""
    from pyspark.sql import functions as F

    if kind == "date":
        return F.unix_date(c)
    if kind == "timestamp":
        return F.unix_micros(c)
    return F.unix_micros(F.make_timestamp(F.year(c), F.month(c), F.dayofmonth(c), F.hour(c), F.minute(c),
                                          F.date_part(F.lit("SECOND"), c), F.lit("UTC")))


# --------------------------------------------------------------------------- lifts (columns -> partials)

def _lift_sum(c: _Column) -> list:
    return c.values if not c.nulls else [NULL if v is None else v for v in c.values]


def _lift_count(c: _Column) -> list:
    return [1] * len(c.values) if not c.nulls else [0 if v is None else 1 for v in c.values]


def _lift_extreme(empty: Any) -> Callable[[_Column], list]:
    def lift(c: _Column) -> list:
        if not (c.nulls or c.nans):
            return c.values
        return [empty if v is None else NAN if v != v else v for v in c.values]
    return lift


def _lift_mean(c: _Column) -> list:
    return list(zip(c.values, repeat(1))) if not c.nulls else [(0, 0) if v is None else (v, 1) for v in c.values]


def _lift_moments(scale: int) -> Callable[[_Column], list]:
    div = 10 ** scale

    def lift(c: _Column) -> list:
        out = []
        for v in c.values:
            if v is None:
                out.append((0, 0.0, 0.0))
                continue
            x = v / div if scale else float(v)  # int / int is correctly rounded, as Spark's cast to double
            out.append((1, x, 0.0) if math.isfinite(x) else (1, x, math.nan))  # Spark: M2 of inf/NaN is NaN
        return out
    return lift


def _lift_first(ignore_nulls: bool) -> Callable[[_Column], list]:
    def lift(c: _Column) -> list:
        return [_EMPTY if v is None else v for v in c.values] if ignore_nulls and c.nulls else c.values
    return lift


def _lift_single(c: _Column) -> list:
    """A tuple of the value (NaN as NAN: one distinct value), () for a null."""
    return [() if v is None else (NAN,) if v != v else (v,) for v in c.values]


def _lift_collect(c: _Column) -> list:
    return [() if v is None else (v,) for v in c.values]


def _lift_by(values: _Column, order: _Column) -> list:
    return [None if o is None else (NAN if o != o else o, v) for v, o in zip(values.values, order.values)]


def _lift_float(c: _Column) -> list:
    return [None if v is None else float(v) for v in c.values]


# --------------------------------------------------------------------------- lowering (partials -> Spark values)

def _to_python(kind: str) -> Callable[[Any], Any]:
    """A function from a non-null lifted value to what Arrow takes for Spark type ``kind``."""
    scale = _decimal(kind)
    if scale is not None:
        precision, s = scale

        def to_decimal(u: int) -> Decimal:
            if len(str(abs(u))) > precision:
                raise ArithmeticError(f"{u}e-{s} cannot be represented as decimal({precision},{s}) "
                                      f"(Spark's ANSI mode fails the query too)")
            return Decimal(u).scaleb(-s, _EXACT)
        return to_decimal
    if kind == "bigint":
        def to_bigint(v: int) -> int:
            if not -_BIGINT <= v < _BIGINT:
                raise ArithmeticError(f"{v} overflows bigint (Spark's ANSI mode fails the query too)")
            return v
        return to_bigint
    if kind == "date":
        return lambda days: _EPOCH_DAY + dt.timedelta(days=days)
    if kind == "timestamp":
        return lambda us: _EPOCH_UTC + dt.timedelta(microseconds=us)
    if kind == "timestamp_ntz":
        return lambda us: _EPOCH + dt.timedelta(microseconds=us)
    return lambda v: v


def _rounded(kind: str) -> Callable[[float], Any]:
    """A sketch's double back to a lifted value of ``kind`` (ints for all but floats)."""
    return (lambda x: x) if kind in _FRACTIONAL else (lambda x: round(x))


#: Result types whose lifted values Arrow takes as they are (ints: Arrow checks the range).
_ARROW_AS_IS = {"tinyint", "smallint", "int", "bigint", "float", "double", "string", "boolean"}
#: Result types whose lifted values are integers Arrow casts: days, microseconds.
_ARROW_CAST = {"date": "int32", "timestamp": "int64", "timestamp_ntz": "int64"}


#: Result types a numpy column carries exactly when it has no nulls (and no NaN: pyspark
#: sends a float NaN of a numpy column as null).
_NUMPY = {"tinyint": "int8", "smallint": "int16", "int": "int32", "bigint": "int64", "float": "float32",
          "double": "float64"}


def _numpy_column(kind: str, values: list) -> Any:
    """``values`` (no None) as a numpy column of ``kind``, or None when Arrow must carry
    them: a NaN, or an int out of range (the Arrow path reports the overflow)."""
    import numpy as np

    try:
        column = np.asarray(values, dtype=_NUMPY[kind])
    except (OverflowError, TypeError, ValueError):
        return None
    if column.dtype.kind == "f":
        return None if np.isnan(column).any() else column
    return column  # numpy 2 refuses an int out of the type's range (OverflowError above)


def _arrow_array(kind: str, values: list) -> Any:
    """Lifted values (None: null) as an Arrow array of Spark type ``kind``, converted
    column at a time where Arrow can (the lowering's hot path: one per column and key)."""
    import pyarrow as pa

    arrow = _arrow_type(kind)
    try:
        if kind in _ARROW_AS_IS:
            return pa.array(values, type=arrow)
        if kind in _ARROW_CAST:
            return pa.array(values, type=getattr(pa, _ARROW_CAST[kind])()).cast(arrow)
    except (OverflowError, pa.ArrowInvalid) as error:
        raise ArithmeticError(f"a {kind} result overflows: {error} (Spark's ANSI mode fails the query too)") from None
    convert = _to_python(kind)
    return pa.array([None if v is None else convert(v) for v in values], type=arrow)


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    scale = _decimal(kind)
    if scale is not None:
        return pa.decimal128(*scale)
    return {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64(),
            "float": pa.float32(), "double": pa.float64(), "string": pa.string(), "boolean": pa.bool_(),
            "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
            "timestamp_ntz": pa.timestamp("us")}.get(kind)


def _avg_decimal(scale: int, result_scale: int) -> Callable[[tuple], Any]:
    """Spark's decimal average: sum / count rounded half up to the result scale."""
    shift = 10 ** (result_scale - scale)

    def lower(partial: tuple) -> Any:
        total, n = partial
        if not n:
            return None
        q, r = divmod(abs(total) * shift, n)
        q += 2 * r >= n
        return q if total >= 0 else -q
    return lower


def _mean(partial: tuple) -> Any:
    total, n = partial
    return total / n if n else None


def _extreme(partial: Any) -> Any:
    if partial is TOP or partial is BOTTOM:
        return None
    return math.nan if partial is NAN else partial


# --------------------------------------------------------------------------- the specification

@dataclass(frozen=True)
class _Spec:
    """One output column: its inputs, monoid, Spark result type, and how its partials
    are made from input columns and turned into Spark values (None: a user monoid)."""

    inputs: tuple[str, ...]
    monoid: Monoid
    kind: str
    lift: Callable[..., list] | None = None
    lower: Callable[[Any], Any] | None = None  # partial -> lifted value (None for null)
    element: str | None = None  # arrays: the element type
    how: str | None = None  # the built-in's name (None: a user monoid)


@dataclass(frozen=True)
class Aggregations:
    """Output column -> (input column, monoid, Spark result type), and their Record monoid."""

    columns: dict[str, tuple[str, Monoid, str]]
    specs: dict[str, _Spec] = field(default_factory=dict)
    readers: dict[str, _Reader] = field(default_factory=dict)

    @property
    def monoid(self) -> Record:
        return Record({name: monoid for name, (_, monoid, _) in self.columns.items()})

    @property
    def inputs(self) -> list[str]:
        return sorted({c for spec in self.specs.values() for c in spec.inputs})

    def input_columns(self, raw: bool = False, skip: Sequence[str] = ()) -> list[Any]:
        """The Spark columns :meth:`lift` reads (numbers and times as values and null
        masks, times converted to integers by Spark); with ``raw`` the input columns
        as they are too (the late-event side output); none of those in ``skip`` (the
        key columns, which the frame has already)."""
        from pyspark.sql import functions as F

        out: dict[str, Any] = {}
        for reader in self.readers.values():
            for column, name in zip(reader.spark_columns(), (reader.value, reader.mask)):
                if name not in skip:  # a key column read as it is: the frame has it once
                    out[name] = column
        if raw:
            for column in self.inputs:
                if column not in skip:
                    out.setdefault(column, F.col(column))
        return list(out.values())

    def lift(self, frame: Any) -> list[tuple]:
        """The rows of the pandas ``frame`` (of :meth:`input_columns`) as partials of
        :attr:`monoid` (a Record's partial is the tuple of its fields'), column by column."""
        read = {name: reader.read(frame) for name, reader in self.readers.items()}
        columns = []
        for name, spec in self.specs.items():
            if spec.lift is not None:
                columns.append(spec.lift(*(read[c] for c in spec.inputs)))
                continue
            column = read[spec.inputs[0]]
            if column.nulls:
                raise ValueError(f"aggregations[{name!r}] (column {spec.inputs[0]!r}) has nulls: a user monoid "
                                 f"takes no nulls; filter or fill them before aggregating")
            values = frame[self.readers[spec.inputs[0]].value].tolist()
            try:
                columns.append(spec.monoid.lift_many(values))
            except (TypeError, ValueError) as error:
                raise type(error)(f"aggregations[{name!r}] (column {spec.inputs[0]!r}): {error}") from None
        return list(zip(*columns))

    def lower(self, name: str, partials: Sequence[Any], pad: int = 0) -> Any:
        """The Spark values of output column ``name`` for ``partials``, then ``pad`` nulls:
        a pandas Series of the exact result type, over numpy when that is exact (numbers
        without nulls or NaN) and over Arrow otherwise (so that NaN stays NaN and null
        stays null); a list for arrays and user monoids."""
        spec = self.specs[name]
        if spec.lower is None:
            monoid = spec.monoid
            values = list(partials) if type(monoid).lower is Monoid.lower else [monoid.lower(p) for p in partials]
            if pad:  # an object column: ints and nulls stay ints and nulls
                import pandas as pd

                return pd.Series(values + [None] * pad, dtype=object)
            return values
        lowered = map(spec.lower, partials)
        if spec.element is not None:
            convert = _to_python(spec.element)
            return [None if v is None else [convert(x) for x in v] for v in lowered] + [None] * pad
        import pandas as pd

        values = list(lowered)
        if not pad and spec.kind in _NUMPY and None not in values:
            column = _numpy_column(spec.kind, values)
            if column is not None:
                return pd.Series(column, copy=False)
        return pd.Series(_arrow_array(spec.kind, values + [None] * pad), dtype=pd.ArrowDtype(_arrow_type(spec.kind)))


#: The built-ins whose result Spark declares non-nullable (a group always has a count).
NEVER_NULL = frozenset({"count", "count_distinct"})

#: name -> (families it takes, result type from the input type)
_NUMERIC = ("integral", "fractional", "decimal")
_ANY = ("integral", "fractional", "decimal", "time", "object")


def _sum_type(kind: str) -> str:
    scale = _decimal(kind)
    if scale:
        return f"decimal({min(38, scale[0] + 10)},{scale[1]})"
    return "bigint" if kind in _INTEGRAL else "double"


def _avg_type(kind: str) -> str:
    scale = _decimal(kind)
    return f"decimal({min(38, scale[0] + 4)},{min(38, scale[1] + 4)})" if scale else "double"


_MOMENTS = {"stddev": (StdDev, 1), "stddev_samp": (StdDev, 1), "stddev_pop": (StdDev, 0),
            "variance": (Variance, 1), "var_samp": (Variance, 1), "var_pop": (Variance, 0)}
_FAMILIES = {"sum": _NUMERIC, "avg": _NUMERIC, "mean": _NUMERIC, **{m: _NUMERIC for m in _MOMENTS},
             "count": _ANY, "min": _ANY, "max": _ANY, "first": _ANY, "last": _ANY, "first_ignore_nulls": _ANY,
             "last_ignore_nulls": _ANY, "count_distinct": _ANY, "collect_list": _ANY, "min_by": _ANY,
             "max_by": _ANY, "percentile_approx": ("integral", "fractional", "decimal", "time")}
BUILTINS = tuple(_FAMILIES)


def _builtin(how: str, kind: str, params: tuple, where: str) -> _Spec:
    """The spec of built-in ``how`` over a column of type ``kind``."""
    if how in ("sum", "avg", "mean"):
        result = _sum_type(kind) if how == "sum" else _avg_type(kind)
        if how == "sum":
            return _Spec((), SparkSum(), result, _lift_sum, lambda p: None if p is NULL else p)
        scale, result_scale = (_decimal(kind) or (0, 0))[1], (_decimal(result) or (0, 0))[1]
        return _Spec((), Mean(), result, _lift_mean, _avg_decimal(scale, result_scale) if _decimal(kind) else _mean)
    if how in _MOMENTS:
        cls, ddof = _MOMENTS[how]
        monoid = cls(ddof=ddof)
        return _Spec((), monoid, "double", _lift_moments((_decimal(kind) or (0, 0))[1]), monoid.lower)
    if how == "count":
        return _Spec((), Count(), "bigint", _lift_count, lambda p: p)
    if how in ("min", "max"):
        monoid = SparkMin() if how == "min" else SparkMax()
        return _Spec((), monoid, kind, _lift_extreme(monoid.identity), _extreme)
    if how in ("first", "last", "first_ignore_nulls", "last_ignore_nulls"):
        monoid = First() if how.startswith("first") else Last()
        return _Spec((), monoid, kind, _lift_first(how.endswith("ignore_nulls")),
                     lambda p: None if p is _EMPTY else p)
    if how == "count_distinct":
        return _Spec((), Distinct(), "bigint", _lift_single, len)
    if how == "collect_list":
        return _Spec((), Collect(), f"array<{kind}>", _lift_collect, lambda p: p, element=kind)
    if how in ("min_by", "max_by"):
        monoid = SparkMinBy() if how == "min_by" else SparkMaxBy()
        return _Spec((), monoid, kind, _lift_by, lambda p: None if p is None else p[1])
    return _percentile(kind, params, where)


def _percentile(kind: str, params: tuple, where: str) -> _Spec:
    if not 1 <= len(params) <= 2:
        raise ValueError(f"{where}: percentile_approx takes a percentage (or a list of them) and optionally "
                         f"an accuracy, e.g. (column, 'percentile_approx', 0.5) or "
                         f"(column, 'percentile_approx', [0.5, 0.9], 10000)")
    percentage, accuracy = params[0], params[1] if len(params) == 2 else 10_000
    many = isinstance(percentage, (list, tuple))
    percentages = list(percentage) if many else [percentage]
    if not percentages or not all(isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1
                                  for p in percentages):
        raise ValueError(f"{where}: percentages must be numbers in [0, 1], got {percentage!r}")
    if not isinstance(accuracy, int) or isinstance(accuracy, bool) or not 0 < accuracy < 2 ** 31:
        raise ValueError(f"{where}: accuracy must be a positive int (at most 2**31 - 1), got {accuracy!r}")
    monoid = Quantiles(kll_k(accuracy))
    back = _rounded(kind)

    def lower(partial: Any) -> Any:
        qs = monoid.quantiles(partial, percentages)
        if qs is None:
            return None
        out = [q if q != q else back(q) for q in qs]
        return out if many else out[0]
    return _Spec((), monoid, f"array<{kind}>" if many else kind, _lift_float, lower,
                 element=kind if many else None)


def parse(spec: Mapping[str, tuple], input_types: Mapping[str, str]) -> Aggregations:
    """Check ``spec`` against the DataFrame's columns (``input_types``: name -> Spark
    simple type string); ValueError naming the bad entry."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"aggregations: expected a dict of output name -> (column, aggregation), e.g. "
                         f"{{'total': ('value', 'sum')}}, got {type(spec).__name__} {spec!r}")
    if not spec:
        raise ValueError("aggregations: give at least one, e.g. {'total': ('value', 'sum')}")
    columns: dict[str, tuple[str, Monoid, str]] = {}
    specs: dict[str, _Spec] = {}
    for name, entry in spec.items():
        where = f"aggregations[{name!r}]"
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"aggregations: output name {name!r} must be a Python identifier")
        if not isinstance(entry, tuple) or len(entry) < 2:
            raise ValueError(f"{where}: expected (column, aggregation name[, parameters]) or "
                             f"(column, Monoid, result type), got {entry!r}")
        column, how, *params = entry
        inputs = tuple(column) if isinstance(column, tuple) else (column,)
        for c in inputs:
            if not isinstance(c, str) or c not in input_types:
                raise ValueError(f"{where}: no column {c!r} (columns: {', '.join(input_types)})")
        if isinstance(how, Monoid):
            if len(params) != 1 or len(inputs) != 1:
                raise ValueError(f"{where}: a user monoid takes one column and its Spark result type, "
                                 f"e.g. ({inputs[0]!r}, monoid, 'double')")
            specs[name] = _Spec(inputs, how, params[0])
        else:
            specs[name] = _parse_builtin(where, how, inputs, tuple(params), input_types)
        columns[name] = (inputs[0], specs[name].monoid, specs[name].kind)
    readers = {c: _Reader(c, input_types[c]) for s in specs.values() for c in s.inputs}
    return Aggregations(columns, specs, readers)


def _parse_builtin(where: str, how: Any, inputs: tuple, params: tuple, types: Mapping[str, str]) -> _Spec:
    if how not in _FAMILIES:
        raise ValueError(f"{where}: unknown aggregation {how!r}; choose one of {', '.join(BUILTINS)} "
                         f"or pass an mta Monoid")
    paired = how in ("min_by", "max_by")
    if paired and len(inputs) != 2:
        raise ValueError(f"{where}: {how} takes two columns, the value and the order: "
                         f"(('value', 'order'), {how!r})")
    if not paired and len(inputs) != 1:
        raise ValueError(f"{where}: {how} takes one column, got {inputs!r}")
    if params and how != "percentile_approx":
        raise ValueError(f"{where}: {how} takes no parameters, got {params!r}")
    kind = types[inputs[0]]
    if _family(kind) not in _FAMILIES[how]:
        hint = " (cast it to a number first, as Spark would at run time)" if _family(kind) == "object" else ""
        raise ValueError(f"{where}: {how} does not take column {inputs[0]!r} of type {kind}{hint}")
    if paired and _family(types[inputs[1]]) is None:
        raise ValueError(f"{where}: {how} cannot order by column {inputs[1]!r} of type {types[inputs[1]]}")
    built = _builtin(how, kind, params, where)
    return _Spec(inputs, built.monoid, built.kind, built.lift, built.lower, built.element, how)
