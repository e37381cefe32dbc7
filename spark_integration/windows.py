"""``window_aggregate``: keyed event-time windows backed by MTA, on batch and
streaming DataFrames.

    from spark_integration import window_aggregate
    per_host = window_aggregate(df, keys=["host"], time="ts",
                                aggregations={"avg": ("cpu", "avg"), "peak": ("cpu", "max")},
                                size="5 minutes", slide="10 seconds")

A batch DataFrame is grouped by key (``applyInPandas``); a streaming one runs
``transformWithStateInPandas`` (Spark 4, RocksDB state store provider) with the
watermark, event-time timers at window ends and the allowed lateness. Both feed
:class:`spark_integration.engine.KeyWindow`, so a stream gives the rows the batch
run gives (for the windows its watermark closed).

Output columns: the keys, ``window_start`` and ``window_end`` (timestamps; with
``emit="event"`` one ``event_time`` instead), the aggregations, ``late``: how
many of the key's events had come too late (and were dropped) by that row, and
with ``late_events=True`` the side output ``late_event`` (null on window rows).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, Callable, Mapping, Sequence

from spark_integration.aggregations import Aggregations, parse
from spark_integration.engine import KeyWindow, Windowing
from spark_integration.stored import Output, StoredKeys

TIME = "mta_time"  # no leading underscore: TWS builds its frames through itertuples
START, END, LATE_TIME = "mta_start", "mta_end", "mta_late_time"
_UNITS = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000,
          "hour": 3_600_000_000, "day": 86_400_000_000}


def micros(duration: str | int | float | dt.timedelta, name: str = "duration") -> int:
    """A duration as microseconds: ``"10 seconds"``, ``"5 minutes"``, a timedelta, or seconds."""
    if isinstance(duration, dt.timedelta):
        value = duration // dt.timedelta(microseconds=1)
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        value = round(duration * 1_000_000) if math.isfinite(duration) else -1
    elif isinstance(duration, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*", duration.lower())
        if not match or match.group(2) not in _UNITS:
            raise ValueError(f"{name}: expected e.g. '10 seconds' or '5 minutes' (units: {', '.join(_UNITS)}), "
                             f"got {duration!r}")
        value = round(float(match.group(1)) * _UNITS[match.group(2)])
    else:
        raise TypeError(f"{name}: expected a string like '10 seconds', a timedelta or seconds, got {duration!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {duration!r}")
    return value


def window_aggregate(df: Any, keys: str | Sequence[str], time: str, aggregations: Mapping[str, tuple], *,
                     size: Any = None, slide: Any = None, policy: Callable[[Any, Any], bool] | None = None,
                     emit: str = "window", watermark: Any = "0 seconds", allowed_lateness: Any = "0 seconds",
                     late_events: bool = False, store: str | None = None, name: str | None = None) -> Any:
    """Aggregate ``df`` per key over event-time windows; returns a DataFrame of results.

    ``size``/``slide``: time windows as Spark's ``window(time, size, slide)`` (tumbling
    when ``slide`` is omitted). ``policy``: a slide policy (a callable ``(total, old)
    -> bool`` over :class:`mta.Agg` with microsecond times) instead, reporting once per
    ``slide``. ``emit="event"``: one row per event (the aggregate right after it).

    Streaming only: ``watermark`` is the delay of ``withWatermark(time, ...)``; an
    event is final once the watermark minus ``allowed_lateness`` passes it, and one
    older than that on arrival is late: counted in ``late`` and dropped. With
    ``late_events`` each late event also comes out as a row of its own (the side
    output): a ``late_event`` struct of its time and input columns, null otherwise,
    with null windows and aggregations.

    ``store`` (a ``redis://`` URL) and ``name`` (unique per query): keep each key's
    window levels in Redis, as ``<name>:<hash of the key>``, instead of in Spark's
    state, for windows larger than an executor's memory. A micro-batch that Spark
    replays after a failure is never counted twice (see :mod:`spark_integration.stored`).
    """
    from pyspark.sql import functions as F

    keys = [keys] if isinstance(keys, str) else list(keys)
    windowing = Windowing(size=micros(size, "size") if size is not None else None,
                          slide=micros(slide, "slide") if slide is not None else None, policy=policy, emit=emit)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    for column in [*keys, time]:
        if column not in types:
            raise ValueError(f"no column {column!r} (columns: {', '.join(types)})")
    if {TIME, START, END, LATE_TIME} & set(keys):
        raise ValueError(f"key columns may not be named {TIME}, {START}, {END} or {LATE_TIME}")
    if types[time] not in ("timestamp", "timestamp_ntz"):
        raise ValueError(f"time column {time!r} must be a timestamp, not {types[time]}")
    if (store is None) != (name is None):
        raise ValueError("store and name go together: name the query's windows in the store, "
                         "e.g. store='redis://host:6379/0', name='cpu_5min'")
    aggs = parse(aggregations, types)
    stored = StoredKeys(store, name, aggs.monoid, windowing) if store is not None else None
    if df.isStreaming:
        df = df.withWatermark(time, f"{micros(watermark, 'watermark')} microseconds")
    prepared = df.select(*keys, F.unix_micros(F.col(time)).alias(TIME), *aggs.input_columns(raw=late_events))
    side = aggs.inputs if late_events else None
    schema = _schema(df, keys, aggs, side)
    if df.isStreaming:
        from spark_integration.streaming import MTAProcessor

        processor = MTAProcessor(aggs, windowing, keys, micros(allowed_lateness, "allowed_lateness"), side, stored)
        out = prepared.groupBy(*keys).transformWithStateInPandas(
            statefulProcessor=processor, outputStructType=schema, outputMode="Append", timeMode="EventTime")
    else:
        out = prepared.groupBy(*keys).applyInPandas(_batch(aggs, windowing, keys, side, stored), schema)
    if emit == "event":
        times = [F.timestamp_micros(F.col(START)).alias("event_time")]
    else:
        times = [F.timestamp_micros(F.col(START)).alias("window_start"),
                 F.timestamp_micros(F.col(END)).alias("window_end")]
    extra = []
    if side is not None:
        event = F.struct(F.timestamp_micros(F.col(LATE_TIME)).alias(time),
                         *(F.col(_late(c)).alias(c) for c in side))
        extra = [F.when(F.col(LATE_TIME).isNotNull(), event).alias("late_event")]
    return out.select(*keys, *times, *aggs.columns, "late", *extra)


def _late(column: str) -> str:
    return f"mta_late_{column}"


def _schema(df: Any, keys: list[str], aggs: Aggregations, side: list[str] | None) -> Any:
    from pyspark.sql.types import LongType, StructField, StructType, _parse_datatype_string

    fields = [df.schema[k] for k in keys] + [StructField(START, LongType()), StructField(END, LongType())]
    fields += [StructField(name, _parse_datatype_string(kind)) for name, (_, _, kind) in aggs.columns.items()]
    fields.append(StructField("late", LongType()))
    if side is not None:
        fields.append(StructField(LATE_TIME, LongType()))
        fields += [StructField(_late(c), df.schema[c].dataType) for c in side]
    return StructType(fields)


def frame(key: tuple, keys: list[str], aggs: Aggregations, out: Output, side: list[str] | None) -> Any:
    """The output rows of one key as a pandas DataFrame (each field lowered column by
    column); with ``side`` (the input columns), the late events after them."""
    import pandas as pd

    rows, extra = out.rows, len(out.late_events or ()) if side is not None else 0
    n = len(rows) + extra
    data: dict[str, Any] = {k: [v] * n for k, v in zip(keys, key)}
    data[START] = [r[0] for r in rows]
    data[END] = [r[1] for r in rows]
    for i, name in enumerate(aggs.columns):  # the Record's fields, in order
        data[name] = aggs.lower(name, [r[2][i] for r in rows], extra)
    data["late"] = [out.late] * n
    columns = [*keys, START, END, *aggs.columns, "late"]
    if side is not None:
        columns += [LATE_TIME, *map(_late, side)]
        events = list(zip(*out.late_events)) if extra else [()] * (1 + len(side))
        for column, values in zip([LATE_TIME, *map(_late, side)], events):
            data[column] = [None] * len(rows) + list(values)
        if extra:  # object columns: ints and nulls stay ints and nulls
            for column in (START, END):
                data[column] = pd.Series(data[column] + [None] * extra, dtype=object)
    return pd.DataFrame(data, columns=columns)


def late_rows(frame: Any, indices: list[int], side: list[str]) -> list[tuple]:
    """The late events ``indices`` of a pandas ``frame``: (time, *side columns) as plain values."""
    picked = frame.iloc[indices]
    return list(zip(*(picked[c].tolist() for c in [TIME, *side])))


def _batch(aggs: Aggregations, windowing: Windowing, keys: list[str], side: list[str] | None,
           stored: StoredKeys | None) -> Callable[[Any], Any]:
    monoid = aggs.monoid

    def per_key(pdf: Any) -> Any:
        key = tuple(pdf[k].iloc[0] for k in keys)
        window = stored.scratch(key) if stored is not None else KeyWindow(monoid, windowing)
        pdf = pdf.sort_values(TIME, kind="stable")
        window.add(pdf[TIME].tolist(), aggs.lift(pdf))
        out = Output(window.advance(math.inf), 0, [])
        if stored is not None:
            stored.drop(window)
        return frame(key, keys, aggs, out, side)

    return per_key
