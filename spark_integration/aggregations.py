"""What a window computes: named aggregations of columns, as one Record monoid.

    {"total": ("bytes", "sum"), "peak": ("bytes", "max"), "n": ("bytes", "count")}
    {"spread": ("value", MyMonoid(), "double")}   # a user monoid and its Spark result type

Built-in names follow Spark's functions of the same name, so that results compare
row for row with ``groupBy(..., window(...)).agg(...)``: ``sum`` and ``min``/``max``
keep the column's type, ``count`` is a long, ``avg``/``mean`` a double, ``stddev`` and
``variance`` are the sample ones (null below two values), ``first``/``last`` in event time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from mta.monoid import Count, First, Last, Max, Mean, Min, Monoid, Record, StdDev, Sum, Variance

#: name -> (monoid factory, result type; None: the column's own type)
BUILTINS: dict[str, tuple[Callable[[], Monoid], str | None]] = {
    "sum": (Sum, None),
    "count": (Count, "bigint"),
    "min": (Min, None),
    "max": (Max, None),
    "avg": (Mean, "double"),
    "mean": (Mean, "double"),
    "stddev": (lambda: StdDev(ddof=1), "double"),
    "variance": (lambda: Variance(ddof=1), "double"),
    "first": (First, None),
    "last": (Last, None),
}
_INTEGRAL = {"tinyint", "smallint", "int", "bigint"}


@dataclass(frozen=True)
class Aggregations:
    """Output column -> (input column, monoid, Spark result type), and their Record monoid."""

    columns: dict[str, tuple[str, Monoid, str]]

    @property
    def monoid(self) -> Record:
        return Record({name: monoid for name, (_, monoid, _) in self.columns.items()})

    @property
    def inputs(self) -> list[str]:
        return sorted({column for column, _, _ in self.columns.values()})

    def lift(self, frame: Any) -> list[tuple]:
        """The rows of the pandas ``frame`` as partials of :attr:`monoid` (a Record's
        partial is the tuple of its fields'), lifted column by column with each field's
        ``lift_many``. ValueError on nulls, which the monoids cannot take."""
        columns = []
        for name, (column, monoid, _) in self.columns.items():
            values = frame[column]
            if values.isna().any():
                raise ValueError(f"column {column!r} has nulls: filter or fill them before aggregating")
            try:
                columns.append(monoid.lift_many(values.tolist()))
            except (TypeError, ValueError) as error:
                raise type(error)(f"aggregations[{name!r}] (column {column!r}): {error}") from None
        return list(zip(*columns))


def parse(spec: Mapping[str, tuple], input_types: Mapping[str, str]) -> Aggregations:
    """Check ``spec`` against the DataFrame's columns (``input_types``: name -> Spark
    simple type string); ValueError naming the bad entry."""
    if not spec:
        raise ValueError("aggregations: give at least one, e.g. {'total': ('value', 'sum')}")
    out: dict[str, tuple[str, Monoid, str]] = {}
    for name, entry in spec.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"aggregations: output name {name!r} must be a Python identifier")
        if not isinstance(entry, tuple) or len(entry) not in (2, 3):
            raise ValueError(f"aggregations[{name!r}]: expected (column, monoid name or Monoid[, result type]), "
                             f"got {entry!r}")
        column, how, *kind = entry
        if column not in input_types:
            raise ValueError(f"aggregations[{name!r}]: no column {column!r} (columns: {', '.join(input_types)})")
        if isinstance(how, Monoid):
            if not kind:
                raise ValueError(f"aggregations[{name!r}]: a user monoid needs its Spark result type, "
                                 f"e.g. ({column!r}, monoid, 'double')")
            out[name] = (column, how, kind[0])
        elif how in BUILTINS:
            factory, result = BUILTINS[how]
            column_type = input_types[column]
            if how == "sum":
                result = "bigint" if column_type in _INTEGRAL else "double"
            out[name] = (column, factory(), kind[0] if kind else result or column_type)
        else:
            raise ValueError(f"aggregations[{name!r}]: unknown aggregation {how!r}; "
                             f"choose one of {', '.join(BUILTINS)} or pass an mta Monoid")
    return Aggregations(out)
