"""The operator's fast path, Spark's half: events folded into slices by Spark's own
aggregation, so that no event crosses into Python.

Spark's hash aggregation (with its map-side combine) folds each key's events into
*slices*, ``groupBy(keys, pane)`` with ``pane = floor((time - origin) / P)``: one row
per key and pane holding the partial of every aggregation (the fields of its
:mod:`mta.columnar` kind). ``P`` divides every window edge of every query
(:func:`mta.columnar.grid`), so each window is a run of whole slices; one Python stage
per partition (:mod:`spark_integration.columnar`) turns the slices into every
query's windows with array kernels. A lone tumbling window needs no second stage:
its slices are its windows, and it compiles wholly to Spark's own aggregates
(:func:`final`), which is what Spark's ``window()`` runs too, minus its window struct.

Measured on 2M events, 100 keys (BENCHMARKS.md, issue #19): moving the raw events
into Python at all costs more than Spark's whole tumbling aggregation, and the
slices are few: at most one row per key and pane.

Which aggregations take this path (:func:`columnar`): the built-ins whose partial
Spark can fold: ``count`` (any type), ``sum``/``avg`` and the variances (integral and
floating columns), ``min``/``max`` (those and dates, timestamps), ``first``/``last``
(any type, event-time order, ties in arrival order: the input's row order), and
``min_by``/``max_by`` (any value; orders that sort as numbers, times, strings or
booleans). The others (decimals, ``count_distinct``, ``collect_list``,
``percentile_approx``, user monoids) go through the per-key engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from spark_integration.aggregations import Aggregations, as_integer

#: The built-in's name -> its mta.columnar kind.
KIND = {"count": "count", "sum": "sum", "avg": "mean", "mean": "mean", "min": "min", "max": "max",
        "stddev": "stddev_samp", "stddev_samp": "stddev_samp", "stddev_pop": "stddev_pop",
        "variance": "var_samp", "var_samp": "var_samp", "var_pop": "var_pop",
        "first": "first", "last": "last", "first_ignore_nulls": "first_ignore_nulls",
        "last_ignore_nulls": "last_ignore_nulls", "min_by": "min_by", "max_by": "max_by"}
_INTEGRAL = {"tinyint", "smallint", "int", "bigint"}
_NUMBERS = _INTEGRAL | {"float", "double"}
_TIMES = {"date", "timestamp", "timestamp_ntz"}
#: The input types each built-in takes on this path (None: any).
_TAKES: dict[str, set[str] | None] = {
    "count": None, "sum": _NUMBERS, "mean": _NUMBERS, "min": _NUMBERS | _TIMES, "max": _NUMBERS | _TIMES,
    **{k: _NUMBERS for k in ("stddev_samp", "stddev_pop", "var_samp", "var_pop")},
    **{k: None for k in ("first", "last", "first_ignore_nulls", "last_ignore_nulls", "min_by", "max_by")}}
#: The orders min_by/max_by take here: what numpy sorts as Spark does.
_ORDERS = _NUMBERS | _TIMES | {"string", "boolean"}
#: The kinds that keep one event's value (its order decides which).
PICKS = ("first", "last", "first_ignore_nulls", "last_ignore_nulls", "min_by", "max_by")
#: The input's row number: arrival order, which breaks ties of first/last/min_by/max_by.
SEQ = "mta_seq"
PANE = "mta_pane"
#: first/last fold by a long, so that Spark's hash aggregation takes them (a struct's min is a
#: sort aggregation: 3x slower, BENCHMARKS.md, issue #19). The long is (the event's offset in its
#: slice, low OFFSET_BITS) over (its row in its input partition, ROW_BITS: SEQ's low bits, as
#: monotonically_increasing_id numbers rows), unique within a (keys, pane, PART, HIGH) group:
#: slices are folded per input partition and per 2**OFFSET_BITS microseconds of the slice, and
#: the stage folds those of one pane (:class:`spark_integration.columnar.Stage`), reading each
#: pick's ORDER, value, PART and HIGH as plain columns (:func:`unpacked`).
ORDER, PART, HIGH = "mta_order", "mta_part", "mta_high"
ROW_BITS, OFFSET_BITS = 33, 30
#: The kinds that fold by :data:`ORDER`.
PACKED = ("first", "last", "first_ignore_nulls", "last_ignore_nulls")


@dataclass(frozen=True)
class Sliced:
    """One output column on the fast path."""

    name: str
    kind: str  # its mta.columnar kind
    inputs: tuple[str, ...]
    source: str  # the input column's Spark type
    result: str  # the output's Spark type


def columnar(aggs: Aggregations, types: Mapping[str, str], keys: Sequence[str] = ()) -> list[Sliced] | None:
    """The aggregations as slice partials, or None when one of them, or a key column
    (arrays, maps and structs are not grouped in the stage), has no fast path."""
    if any(not _atomic(types[k]) for k in keys):
        return None
    out = []
    for name, spec in aggs.specs.items():
        kind = KIND.get(spec.how or "")
        if kind is None:
            return None
        source = types[spec.inputs[0]]
        takes = _TAKES[kind]
        if takes is not None and source not in takes:
            return None
        if kind in ("min_by", "max_by") and types[spec.inputs[1]] not in _ORDERS:
            return None
        out.append(Sliced(name, kind, spec.inputs, source, spec.kind))
    return out


def _atomic(kind: str) -> bool:
    """A key type the stage groups by (Arrow dictionary-encodes it)."""
    return not kind.startswith(("array", "map", "struct", "interval", "variant"))


def field(i: int, name: str) -> str:
    """The slice column of field ``name`` of aggregation ``i``."""
    return f"mta_{i}_{name}"


def _number(column: str, source: str) -> Any:
    """The input as Spark folds it here: integers as bigint, floats as double, times as
    integers (:func:`spark_integration.aggregations.as_integer`)."""
    from pyspark.sql import functions as F

    c = F.col(column)
    if source in _INTEGRAL:
        return c.cast("bigint")
    if source in ("float", "double"):
        return c.cast("double")
    return as_integer(c, source).cast("bigint")


def _taken(s: Sliced, time: Any) -> Any:
    """first/last/min_by/max_by: the struct whose min (or max) is the row taken, and
    which rows can be taken (a null order never; a null value for *_ignore_nulls)."""
    from pyspark.sql import functions as F

    value, seq = F.col(s.inputs[0]), F.col(SEQ)
    if s.kind in ("min_by", "max_by"):
        order = F.col(s.inputs[1])
        if s.kind == "max_by":  # ties: the oldest, as for min_by
            return F.when(order.isNotNull(), F.struct(order.alias("o"), (-time).alias("t"), (-seq).alias("seq"),
                                                      value.alias("v")))
        return F.when(order.isNotNull(), F.struct(order.alias("o"), time.alias("t"), seq.alias("seq"),
                                                  value.alias("v")))
    taken = F.struct(time.alias("t"), seq.alias("seq"), value.alias("v"))
    return F.when(value.isNotNull(), taken) if s.kind.endswith("ignore_nulls") else taken


def partials(s: Sliced, i: int, time: Any) -> dict[str, Any]:
    """Spark aggregate columns of aggregation ``i``'s slice partial, by field (each named by
    :func:`field`)."""
    from pyspark.sql import functions as F

    kind = s.kind
    if kind in PACKED:
        value, order = F.col(s.inputs[0]), F.col(ORDER)
        if kind.endswith("ignore_nulls"):
            order = F.when(value.isNotNull(), order)
        pick, by = (F.max, F.max_by) if kind.startswith("last") else (F.min, F.min_by)
        out = {"o": pick(order), "v": by(value, order)}
    elif kind in PICKS:
        pick = F.max if kind.startswith("last") or kind == "max_by" else F.min
        out = {"r": pick(_taken(s, time))}
    elif kind == "count":  # of any type
        out = {"n": F.count(s.inputs[0])}
    else:
        x = _number(s.inputs[0], s.source)
        if kind in ("sum", "mean"):
            out = {"s": F.sum(x), "n": F.count(x)}
        elif kind in ("min", "max"):
            out = {"m": (F.min if kind == "min" else F.max)(x), "n": F.count(x)}
        else:
            out = _moments(x, s.source in _INTEGRAL)
    return {f: c.alias(field(i, f)) for f, c in out.items()}


#: Integral variances: a slice whose values all lie in one bucket of 2**BUCKET_BITS (of one of
#: two grids, the second shifted by half a bucket, so any spread below 2**(BUCKET_BITS - 1)
#: fits) folds exactly: its values less the bucket's base are below 2**BUCKET_BITS, so their
#: sums and sums of squares are exact longs while the slice holds at most 2**EXACT_ROWS.
BUCKET_BITS, EXACT_ROWS = 16, 15


def _moments(x: Any, integral: bool) -> dict[str, Any]:
    """A variance's slice partial: the count ``n``, a value ``ref``, the sum of the values less
    ``ref`` (in the "mean" field: the stage divides it by ``n``,
    :func:`spark_integration.columnar._moments`) and ``m2``, all relative to ``ref`` so that
    the stage's merges see small numbers. Spark's own ``var_pop`` keeps an absolute running
    mean, whose rounding (2.4e-4 near 2**40) goes into its m2 at every row: integral slices
    within one bucket (see :data:`BUCKET_BITS`) are folded exactly instead, ``ref`` the
    bucket's base; the others (and floating ones) take Spark's ``var_pop`` about their least
    value."""
    from pyspark.sql import functions as F

    n, least = F.count(x), F.min(x.cast("double"))
    loose = {"n": n, "ref": least, "mean": F.sum(x.cast("double")) - n * least,
             "m2": F.var_pop(x.cast("double")) * n}
    if not integral:
        return loose
    bits, half = BUCKET_BITS, 1 << (BUCKET_BITS - 1)
    halves = F.shiftright(x, bits - 1)  # x = halves * half + low, 0 <= low < half
    grids = [  # (bucket, x less the bucket's base, the base of the bucket of the slice's first value)
        (F.shiftright(x, bits), x.bitwiseAND(F.lit((1 << bits) - 1)), lambda b: F.shiftleft(b, bits)),
        (F.shiftright(halves + 1, 1), x.bitwiseAND(F.lit(half - 1)) + (halves + 1).bitwiseAND(F.lit(1)) * half,
         lambda b: F.shiftleft(b, bits) - half)]
    ref, total, m2 = loose["ref"], loose["mean"], loose["m2"]
    for bucket, low, base in reversed(grids):  # the first grid wins when both hold the slice
        one = (F.min(bucket) == F.max(bucket)) & (n <= 1 << EXACT_ROWS)
        s1, s2 = F.sum(low), F.sum(low * low)
        ref = F.when(one, base(F.min(bucket)).cast("double")).otherwise(ref)
        total = F.when(one, s1.cast("double")).otherwise(total)
        m2 = F.when(one, (n * s2 - s1 * s1).cast("double") / n).otherwise(m2)  # exact longs: n <= 2**15
    return {"n": n, "ref": ref, "mean": total, "m2": m2}


def shared_columns(sliced: list[Sliced]) -> dict[tuple[int, str], str]:
    """Each partial field ``(aggregation, field)`` of the slices -> its column. Fields equal
    by construction share one, so that slices are as narrow as they can be (batch: Spark's
    slices cross into Python; streaming: :class:`spark_integration.columnar.Fold`'s output,
    whose cost in the stateful operator grows with its width): every kind's ``n`` over a
    column counts its non-null values, sum's and mean's ``s`` are alike, and so are the
    moments of the variance family. first/last/min_by/max_by keep their own."""
    from mta.columnar import KINDS

    out: dict[tuple[int, str], str] = {}
    first: dict[tuple, str] = {}
    for i, s in enumerate(sliced):
        for f in KINDS[s.kind].fields:
            if s.kind in PICKS:
                out[(i, f)] = field(i, f)
                continue
            same = (f, s.inputs[0]) if f in ("n", "s", "ref", "mean", "m2") else (s.kind, f, s.inputs[0])
            out[(i, f)] = first.setdefault(same, field(i, f))
    return out


def ordering(time: Any, P: int, origin: int) -> list[Any]:
    """The columns a packed pick's slices are folded by: :data:`ORDER`, :data:`PART` and, when a
    slice is longer than 2**OFFSET_BITS microseconds, :data:`HIGH`. ``time``: the event time in
    microseconds; the events carry :data:`SEQ`."""
    from pyspark.sql import functions as F

    offset = F.pmod(time - F.lit(origin), F.lit(P))
    low = F.col(SEQ).bitwiseAND(F.lit((1 << ROW_BITS) - 1))
    order = F.shiftleft(offset.bitwiseAND(F.lit((1 << OFFSET_BITS) - 1)), ROW_BITS).bitwiseOR(low)
    columns = [order.alias(ORDER), F.shiftright(F.col(SEQ), ROW_BITS).alias(PART)]
    return columns + ([F.shiftright(offset, OFFSET_BITS).alias(HIGH)] if _split_high(P) else [])


def _split_high(P: int) -> bool:
    """Whether slices of P microseconds fold per :data:`HIGH` too (an offset needs more bits)."""
    return P > 1 << OFFSET_BITS


def unpacked(o: Any, part: Any, high: Any, pane: Any, P: int, origin: int) -> tuple[Any, Any]:
    """A packed pick's (time, SEQ) back from its slice's ORDER ``o``, PART, HIGH (None when
    slices do not split by it) and pane, as numpy int64 arrays: the inverse of :func:`ordering`,
    run in the stage, so that the slices cross into Python as plain longs, not structs."""
    offset = o >> ROW_BITS
    if high is not None:
        offset = offset + (high << OFFSET_BITS)
    return pane * P + origin + offset, (part << ROW_BITS) | (o & ((1 << ROW_BITS) - 1))


def times(time: Any) -> list[Any]:
    """The slice's first and last event times (sessions)."""
    from pyspark.sql import functions as F

    return [F.min(time).alias("mta_t_lo"), F.max(time).alias("mta_t_hi")]


def final(s: Sliced, time: Any) -> Any:
    """The output of a lone tumbling window: Spark's own aggregate of the column."""
    from pyspark.sql import functions as F

    kind, column = s.kind, F.col(s.inputs[0])
    if kind in PICKS:
        pick = F.max if kind.startswith("last") or kind == "max_by" else F.min
        return pick(_taken(s, time))["v"].alias(s.name)
    own = {"count": F.count, "sum": F.sum, "mean": F.avg, "min": F.min, "max": F.max, "stddev_samp": F.stddev_samp,
           "stddev_pop": F.stddev_pop, "var_samp": F.var_samp, "var_pop": F.var_pop}[kind]
    return own(column).alias(s.name)


def own_streaming(sliced: list[Sliced], query: Any, time_kind: str, lateness: int, late_count: bool) -> bool:
    """Whether a stream's lone window compiles to Spark's own streaming aggregation: a
    tumbling window of a TIMESTAMP time (Spark puts no watermark on TIMESTAMP_NTZ), no
    ``allowed_lateness`` or ``late`` column (Spark has neither), no first/last/min_by/max_by
    (their tie order needs a row number, which a stream has not). Measured faster than the
    stateful operator for tumbling windows (BENCHMARKS.md, issue #19); the rows are Spark's
    by construction."""
    return (not query.session and query.size == query.slide and time_kind == "timestamp" and not lateness
            and not late_count and not any(s.kind in PICKS for s in sliced))


def merged_inputs(s: Sliced, i: int, columns: Mapping[tuple[int, str], str]) -> list[Any]:
    """The slice columns :data:`merged` reads for aggregation ``i``, named by :func:`field`;
    ``columns``: where each field is (:func:`shared_columns`)."""
    from pyspark.sql import functions as F

    names = {"count": ("n",), "sum": ("s",), "mean": ("s", "n"), "min": ("m",), "max": ("m",)}[s.kind]
    return [F.col(columns[(i, n)]).alias(field(i, n)) for n in names]


def _merge_sum(s: Sliced, i: int) -> Any:
    from pyspark.sql import functions as F

    return F.sum(field(i, "s")).alias(s.name)  # null when every slice's is (all values null)


def _merge_mean(s: Sliced, i: int) -> Any:
    from pyspark.sql import functions as F

    return (F.sum(field(i, "s")).cast("double") / F.sum(field(i, "n"))).alias(s.name)


def _merge_count(s: Sliced, i: int) -> Any:
    from pyspark.sql import functions as F

    return F.coalesce(F.sum(field(i, "n")), F.lit(0)).alias(s.name)  # never null (a window has a slice), as count()


def _merge_extreme(s: Sliced, i: int) -> Any:
    from pyspark.sql import functions as F

    return (F.min if s.kind == "min" else F.max)(field(i, "m")).cast(s.result).alias(s.name)


def remergeable(s: Sliced) -> bool:
    """Whether Spark aggregates the slice partials of ``s`` again itself (:data:`merged`):
    sums, counts, means and extremes of numbers."""
    return s.kind in merged and (s.kind == "count" or s.source in _NUMBERS)


#: Spark's aggregate of slice partials into a window's result, for the kinds whose partials
#: Spark merges itself (sums, counts, extremes): a window's slices aggregated again.
merged = {"count": _merge_count, "sum": _merge_sum, "mean": _merge_mean, "min": _merge_extreme,
          "max": _merge_extreme}
