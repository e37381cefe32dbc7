"""``window_aggregate``: keyed event-time windows backed by MTA, on batch and
streaming DataFrames; a drop-in for Spark's ``groupBy(keys, window(...)).agg(...)``.

    from spark_integration import window_aggregate
    per_host = window_aggregate(df, keys=["host"], time="ts",
                                aggregations={"avg": ("cpu", "avg"), "peak": ("cpu", "max")},
                                size="5 minutes", slide="10 seconds")

A batch DataFrame is grouped by key (``applyInPandas``); a streaming one runs
``transformWithStateInPandas`` (Spark 4, RocksDB state store provider) with the
watermark, event-time timers at window ends and the allowed lateness. Both feed the
same per-key window (:func:`mta.watermarked.key_window`), so a stream gives
the rows the batch run gives (for the windows its watermark closed).

Output columns, as Spark's: the keys, a ``window`` struct of ``start`` and ``end`` (typed
like the time column: ``timestamp`` or ``timestamp_ntz``), the aggregations in the order
given. ``flat=True``: ``window_start`` and ``window_end`` columns instead; ``emit="event"``:
one ``event_time`` instead. ``late_count=True`` adds ``late`` (how many of the key's events
had come too late, and were dropped, by that row); ``late_events=True`` the side output
``late_event`` (null on window rows).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from mta.watermarked import Sessions, Windowing, key_window
from spark_integration.aggregations import NEVER_NULL, Aggregations, as_integer, parse
from spark_integration.columnar import END, NAME, ORDER_FREE, START, Fold, Query
from spark_integration.frames import LATE_TIME, TIME, frame, late_column
from spark_integration.session_columns import SESSION_END, SESSION_WATERMARK, dynamic_session_end, session_watermark
from spark_integration.slicing import SEQ, columnar, final, own_streaming
from spark_integration.sliced import plan as sliced_plan
from spark_integration.stored import Output, StoredKeys

# Internal columns (no leading underscore: TWS builds its frames through itertuples).
#: Every internal column starts with it; user columns may not (see :func:`_check_names`).
RESERVED = "mta_"
#: Streaming: the key columns' values as one exact string, what the state is grouped on.
KEY = "mta_key"
#: Streaming on the columnar engine: the bucket of keys that share a state value.
BUCKET = "mta_bucket"
#: A time given as an expression, and a streaming TIMESTAMP_NTZ time's watermark column.
EVENT, WATERMARK = "mta_event", "mta_watermark"
#: An SQL literal: a Python datetime would be a TIMESTAMP, cast in the session's zone.
_DAY = 86_400_000_000  # microseconds


def micros(duration: str | int | float | dt.timedelta, name: str = "duration", spark: Any = None,
           signed: bool = False) -> int:
    """A duration as microseconds: an interval string as Spark's ``window()`` takes it
    (``"10 seconds"``, ``"1 hour 30 minutes"``, ``"interval 1 day"``, ``"1 week"``; parsed
    by Spark itself, through ``spark`` or the active session), a timedelta, or seconds.
    Negative only if ``signed``."""
    if isinstance(duration, dt.timedelta):
        value = duration // dt.timedelta(microseconds=1)
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        if not math.isfinite(duration):
            raise ValueError(f"{name} must be finite, got {duration!r}")
        value = round(duration * 1_000_000)
    elif isinstance(duration, str):
        value = _spark_interval(duration, name, spark)
    else:
        raise TypeError(f"{name}: expected an interval string like '10 seconds', a timedelta or seconds, "
                        f"got {duration!r}")
    if value < 0 and not signed:
        raise ValueError(f"{name} must be >= 0, got {duration!r}")
    return value


def _spark_interval(text: str, name: str, spark: Any) -> int:
    """``text`` in microseconds, by Spark's own parser of ``window()``'s durations
    (``TimeWindow.getIntervalInMicroSeconds``: months and years refused, as there)."""
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    if spark is None or not hasattr(spark, "_jvm"):
        raise ValueError(f"{name}: the interval {text!r} is parsed by Spark: start a (classic) SparkSession "
                         f"first, or give a datetime.timedelta")
    try:
        return int(spark._jvm.org.apache.spark.sql.catalyst.expressions.TimeWindow
                   .getIntervalInMicroSeconds(text))
    except Exception as error:  # a Spark error converted by PySpark: its first line is Spark's message
        raise ValueError(f"{name}: {str(error).strip().splitlines()[0]}") from None


def window_aggregate(df: Any, keys: str | Sequence[str], time: Any, aggregations: Mapping[str, tuple], *,
                     size: Any = None, slide: Any = None, start_time: Any = None,
                     policy: Callable[[Any, Any], bool] | None = None, emit: str = "window",
                     watermark: Any = None, allowed_lateness: Any = "0 seconds", late_count: bool = False,
                     late_events: bool = False, flat: bool = False, store: str | None = None,
                     name: str | None = None, session_gap: Any = None, windows: Mapping[str, Any] | None = None,
                     split: bool = False) -> Any:
    """Aggregate ``df`` per key over event-time windows; returns a DataFrame of results.

    ``time``: the event time, a column name or a ``Column`` (an expression too), of type
    ``timestamp`` or ``timestamp_ntz``. ``size``/``slide``/``start_time``: time windows as
    Spark's ``window(time, size, slide, startTime)`` (tumbling when ``slide`` is omitted;
    windows start at ``start_time + k * slide``). ``policy``: a slide policy (a callable
    ``(total, old) -> bool`` over :class:`mta.Agg` with microsecond times) instead,
    reporting once per ``slide``. ``emit="event"``: one row per event (the aggregate
    right after it). ``session_gap``: session windows as Spark's ``session_window(time,
    gap)`` instead (a duration, or a ``Column`` giving each event's gap, on batch
    DataFrames); the window column is then ``session_window``.

    Streaming only: ``watermark`` is the delay of ``withWatermark(time, ...)``; without it,
    the input's own ``withWatermark`` (if it has one), else none (0 seconds). As in Spark,
    a micro-batch reports the windows that end by its watermark, and an event counts in
    each of its windows that ends after the previous micro-batch's watermark (both minus
    ``allowed_lateness``); an event whose windows had all ended is late: counted
    (``late_count=True`` shows the count in ``late``) and dropped. With ``late_events`` each late event also comes out as a row of its own (the
    side output): a ``late_event`` struct of its time and input columns, null otherwise,
    with null windows and aggregations.

    ``store`` (a ``redis://`` URL) and ``name`` (unique per query): keep each key's
    window levels in Redis, as ``<name>:<hash of the key>``, instead of in Spark's
    state, for windows larger than an executor's memory. A micro-batch that Spark
    replays after a failure is never counted twice (see :mod:`spark_integration.stored`).

    ``windows``: many windows in one call, ``{name: spec}``, each spec a duration string
    (tumbling), a tuple ``(size, slide[, start_time])``, :func:`session` ``(gap)``, or an
    :mod:`mta.windows` ``Tumbling``/``Sliding``/``Session`` (seconds). One DataFrame comes
    back, with a ``window_name`` column after the keys and a ``window`` struct (or
    ``window_start``/``window_end`` with ``flat``); ``split=True`` gives ``{name: DataFrame}``
    instead, each with the schema Spark's own query of that window has. On a batch
    DataFrame with built-in aggregations every window comes from one pass over shared
    slices (see below); each DataFrame of ``split`` runs that pass again when written,
    unless the combined one is persisted.

    How it runs: on a batch DataFrame, without ``store``, ``late_events`` or a policy,
    built-in aggregations of numbers and times (see :mod:`spark_integration.slicing`) are
    folded into slices by Spark's own aggregation and the windows made from the slices
    by array kernels (:mod:`spark_integration.columnar`); a lone tumbling window is
    Spark's own aggregation. Everything else runs per key on the window engine.

    Everything knowable from the schema is checked here, before the job runs: a
    ValueError names the argument or column at fault.
    """
    from pyspark.sql import functions as F

    spark = df.sparkSession
    keys = [keys] if isinstance(keys, str) else list(keys)
    columns = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    for key in keys:
        if not isinstance(key, str) or key not in columns:
            raise ValueError(f"keys: no column {key!r} (columns: {', '.join(columns)})")
    df, time, time_name, kind = _time_column(df, time, columns)
    if windows is not None:
        return _many(df, keys, time, time_name, kind, columns, aggregations, windows, split, flat, late_count,
                     watermark, allowed_lateness, dict(size=size, slide=slide, start_time=start_time, policy=policy, session_gap=session_gap,
                          store=store, name=name, late_events=late_events or None,
                          emit=None if emit == "window" else emit))
    if split:
        raise ValueError("split: it splits the result of many windows (windows={...}); one window is one DataFrame")
    lateness = micros(allowed_lateness, "allowed_lateness", spark)
    if session_gap is not None:
        windowing: Windowing | Sessions = _sessions(
            session_gap, df.isStreaming, lateness, late_events, size=size, slide=slide, start_time=start_time,
            policy=policy, emit=emit, store=store)
    else:
        windowing = _windowing(spark, size, slide, start_time, policy, emit)
    if (store is None) != (name is None):
        raise ValueError("store and name go together: name the query's windows in the store, "
                         "e.g. store='redis://host:6379/0', name='cpu_5min'")
    aggs = parse(aggregations, columns)
    _check_names(spark, keys, time_name, aggs, emit, flat, late_count, late_events,
                 "session_window" if session_gap is not None else "window")
    query = _query("window", windowing)
    sliced = columnar(aggs, columns, keys) if query is not None else None
    fast = sliced is not None and store is None and not late_events
    if fast and not df.isStreaming:
        out = sliced_plan(df, keys, _to_micros(F.col(time), kind), sliced, [query], False, late_count)
        return out.select(*keys, *_time_outputs(kind, windowing, flat, False, None), *aggs.columns,
                          *(["late"] if late_count else []))
    if fast and df.isStreaming and own_streaming(sliced, query, kind, lateness, late_count):
        # Spark's own streaming aggregation is faster here (BENCHMARKS.md, issue #19): it is the plan
        df, delay = _watermarked(df, time, kind, watermark, spark)
        window = F.window(time, f"{query.size} microseconds", f"{query.slide} microseconds",
                          f"{query.offset} microseconds")
        out = df.groupBy(*keys, window.alias("window")).agg(*[final(s, F.col(time)) for s in sliced])
        times = [F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end")] if flat \
            else ["window"]
        return out.select(*keys, *times, *aggs.columns)
    stored = StoredKeys(store, name, aggs.monoid, windowing) if store is not None else None
    extra_inputs = []
    df = df.where(F.col(time).isNotNull())  # as window() and session_window: a row without a time has no window
    if isinstance(windowing, Sessions):
        if windowing.gap is None:
            gap_column = session_gap if hasattr(session_gap, "_jc") else F.lit(session_gap)
            df, extra_inputs = dynamic_session_end(df, time, gap_column, kind, _to_micros), [SESSION_END]
    if df.isStreaming:
        if isinstance(windowing, Sessions):
            delay = micros(watermark if watermark is not None else 0, "watermark", spark)
            df = session_watermark(df, _to_micros(F.col(time), kind), windowing.gap, delay)
            extra_inputs = [SESSION_WATERMARK]
        else:
            df, delay = _watermarked(df, time, kind, watermark, spark)
    else:
        delay = None
        extra_inputs = [*extra_inputs, F.monotonically_increasing_id().alias(SEQ)]  # ties: the input's row order
    grouping, group_keys = _grouping(df, keys)
    side = aggs.inputs if late_events else None
    inputs = aggs.input_columns(raw=late_events, skip=group_keys)
    prepared = df.select(*grouping, _to_micros(F.col(time), kind).alias(TIME), *inputs, *extra_inputs)
    schema = _schema(prepared, group_keys, aggs, side)
    if df.isStreaming:
        from spark_integration.streaming import _Columns, _Rows

        engine = _Columns(sliced, [query], group_keys, False) if fast and not query.session else \
            _Rows(aggs, windowing, group_keys, side)
        out, key_columns = _stateful(df, prepared, keys, group_keys, schema, engine, lateness, stored)
    else:
        out = prepared.groupBy(*group_keys).applyInPandas(_batch(aggs, windowing, group_keys, side, stored), schema)
        key_columns = _keys_from_string(df, keys) if group_keys == [KEY] else [F.col(k) for k in keys]
    return out.select(*key_columns, *_time_outputs(kind, windowing, flat, side is not None, delay), *aggs.columns,
                      *(["late"] if late_count else []), *_side_output(kind, time_name, side))


def _grouping(df: Any, keys: list[str]) -> tuple[list[Any], list[str]]:
    """The per-key path's grouping columns and their names: string keys as they are (they
    and their nulls cross pandas unchanged), else one exact string of the key columns
    (pandas makes a null and NaN one float, -0.0 stays itself, and an integer column with a
    null turns into floats). In batch, keys the string cannot carry (arrays, maps,
    structs) group as they are; a stream refuses them (:func:`_key_string`)."""
    if keys and all(df.schema[k].dataType.simpleString() == "string" for k in keys):
        return keys, keys
    if not df.isStreaming and any(_key_codec(df.schema[k].dataType) is None for k in keys):
        return keys, keys
    return [_key_string(df, keys).alias(KEY)], [KEY]


def _stateful(df: Any, prepared: Any, keys: list[str], group_keys: list[str], schema: Any, engine: Any,
              lateness: int, stored: StoredKeys | None) -> tuple[Any, list[Any]]:
    """The stream through ``transformWithStateInPandas`` (one state per key), and the key
    columns of its output (read back from the key string when there is one)."""
    from pyspark.sql import functions as F

    from spark_integration.streaming import MTAProcessor

    from spark_integration.streaming import _Columns

    grouping = group_keys
    if isinstance(engine, _Columns):  # keys share state by bucket: a call per bucket, not per key
        if all(s.kind in ORDER_FREE for s in engine.sliced):  # the state takes slices, not events
            from mta.columnar import grid

            fold = Fold(group_keys, TIME, engine.sliced, *grid([q.spec() for q in engine.queries]))
            prepared = prepared.mapInArrow(fold, fold.schema(prepared))
        engine.buckets = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        prepared = prepared.withColumn(BUCKET, F.pmod(F.xxhash64(*group_keys), F.lit(engine.buckets)))
        grouping = [BUCKET]
    out = prepared.groupBy(*grouping).transformWithStateInPandas(
        statefulProcessor=MTAProcessor(engine, lateness, stored), outputStructType=schema, outputMode="Append",
        timeMode="EventTime")
    return out, _keys_from_string(df, keys) if group_keys == [KEY] else [F.col(k) for k in keys]


def _windowing(spark: Any, size: Any, slide: Any, start_time: Any, policy: Any, emit: str) -> Windowing:
    """The window's shape in microseconds, refused as Spark's ``window()`` refuses it:
    size and slide > 0, slide <= size, abs(start_time) < slide."""
    size_us = micros(size, "size", spark, signed=True) if size is not None else None
    slide_us = micros(slide, "slide", spark, signed=True) if slide is not None else None
    offset = micros(start_time, "start_time", spark, signed=True) if start_time is not None else 0
    for label, value, given in (("size", size_us, size), ("slide", slide_us, slide)):
        if value is not None and value <= 0:
            raise ValueError(f"{label} must be > 0 (Spark's {'window' if label == 'size' else 'slide'}_duration), "
                             f"got {given!r}")
    if policy is None and emit == "window" and size_us is not None and slide_us is not None and slide_us > size_us:
        raise ValueError(f"slide ({slide!r}) must be <= size ({size!r}): Spark's window() refuses a "
                         f"slide_duration greater than the window_duration")
    if start_time is not None:
        if policy is not None or emit != "window" or size_us is None:
            raise ValueError("start_time offsets time windows (size=..., emit='window'); "
                             "it does not apply to a policy or to emit='event'")
        step = slide_us or size_us
        if abs(offset) >= step:
            raise ValueError(f"start_time ({start_time!r}): abs(start_time) must be < slide "
                             f"({slide if slide is not None else size!r}), as for Spark's window()")
    return Windowing(size=size_us, slide=slide_us, policy=policy, emit=emit, offset=offset)


def _sessions(gap: Any, streaming: bool, allowed_lateness: int, late_events: bool, **others: Any) -> Sessions:
    """The session windows of ``session_gap``, checked against the other arguments."""
    clash = [name for name, value in others.items() if value is not None and (name, value) != ("emit", "window")]
    if clash:
        raise ValueError(f"session_gap: session windows take no {' or '.join(clash)} "
                         f"(give either session_gap or size/slide/policy)")
    if hasattr(gap, "_jc"):  # a pyspark Column: each event's gap
        if streaming:
            raise ValueError("session_gap: a Column (a dynamic gap) works on batch DataFrames; "
                             "on a stream give a fixed duration such as '30 seconds'")
        return Sessions(None)
    value = micros(gap, "session_gap", signed=True)
    if value <= 0:
        raise ValueError(f"session_gap must be a positive duration, got {gap!r}")
    # On a stream Spark drops the late events itself (see session_columns.session_watermark).
    if streaming and allowed_lateness:
        raise ValueError("allowed_lateness: session windows on a stream follow Spark's watermark only (give 0)")
    if streaming and late_events:
        raise ValueError("late_events: session windows on a stream drop late events as Spark does, "
                         "before the operator sees them (Spark counts them in numRowsDroppedByWatermark)")
    if not streaming and isinstance(gap, str) and "day" in gap.lower():
        return Sessions(None)  # Spark adds calendar days in the session time zone: let it give each end
    return Sessions(value)


@dataclass(frozen=True)
class SessionGap:
    """A session window of ``windows={...}``: made by :func:`session`."""

    gap: Any


def session(gap: Any) -> SessionGap:
    """Session windows with a fixed ``gap`` (a duration, as ``session_gap``) for ``windows={...}``."""
    return SessionGap(gap)


def _query(name: str, windowing: Windowing | Sessions) -> Query | None:
    """The window as a fast-path query, or None (policies, a row per event, dynamic gaps)."""
    if isinstance(windowing, Sessions):
        return Query(name, gap=windowing.gap) if windowing.gap is not None else None
    if windowing.policy is not None or windowing.emit != "window":
        return None
    return Query(name, windowing.size, windowing.step, windowing.offset)


def _window_spec(spark: Any, name: str, spec: Any) -> Windowing | Sessions:
    """One entry of ``windows={...}`` in microseconds."""
    from mta.windows import Session, Sliding

    where = f"windows[{name!r}]"
    try:
        if isinstance(spec, SessionGap):
            return _sessions(spec.gap, False, 0, False)
        if isinstance(spec, Session):
            return _sessions(spec.gap, False, 0, False)
        if isinstance(spec, Sliding):
            return _windowing(spark, spec.size, spec.slide, spec.offset or None, None, "window")
        if isinstance(spec, str):
            return _windowing(spark, spec, None, None, None, "window")
        if isinstance(spec, tuple) and 2 <= len(spec) <= 3:
            return _windowing(spark, *spec, *([None] * (3 - len(spec))), None, "window")
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None
    raise ValueError(f"{where}: expected a duration (tumbling), (size, slide[, start_time]), session(gap), or an "
                     f"mta.windows Tumbling, Sliding or Session; got {spec!r}")


def _many(df: Any, keys: list[str], time: str, time_name: str, kind: str, columns: dict[str, str],
          aggregations: Mapping[str, tuple], windows: Mapping[str, Any], split: bool, flat: bool, late_count: bool,
          watermark: Any, allowed_lateness: Any, others: dict[str, Any]) -> Any:
    """``window_aggregate(..., windows={...})`` (see there)."""
    from pyspark.sql import functions as F

    clash = [k for k, v in others.items() if v is not None]
    if clash:
        raise ValueError(f"windows: give the windows there only, not also {', '.join(clash)}")
    if not isinstance(windows, Mapping) or not windows:
        raise ValueError(f"windows: expected a non-empty dict of name -> window, got {windows!r}")
    for name in windows:
        if not isinstance(name, str) or not name:
            raise ValueError(f"windows: names must be non-empty strings, got {name!r}")
    spark = df.sparkSession
    shapes = {name: _window_spec(spark, name, spec) for name, spec in windows.items()}
    aggs = parse(aggregations, columns)
    _check_names(spark, keys, time_name, aggs, "window", flat, late_count, False)
    if NAME in {k.lower() for k in [*keys, *aggs.columns]}:
        raise ValueError(f"output column {NAME!r}: it names the window; rename the key or aggregation")
    late = ["late"] if late_count else []
    queries = [_query(name, shape) for name, shape in shapes.items()]
    sliced = columnar(aggs, columns, keys) if all(queries) else None
    if sliced is not None and df.isStreaming and not any(q.session for q in queries):
        from spark_integration.streaming import _Columns

        lateness = micros(allowed_lateness, "allowed_lateness", spark)
        df, delay = _watermarked(df, time, kind, watermark, spark)
        grouping, group_keys = _grouping(df, keys)
        prepared = df.select(*grouping, _to_micros(F.col(time), kind).alias(TIME),
                             *aggs.input_columns(skip=group_keys))
        schema = _schema(prepared, group_keys, aggs, None, named=True)
        engine = _Columns(sliced, queries, group_keys, True)
        stream, key_columns = _stateful(df, prepared, keys, group_keys, schema, engine, lateness, None)
        out = stream.select(*key_columns, NAME, START, END, *aggs.columns, "late")
        if split:
            return {name: out.where(F.col(NAME) == name).select(
                *keys, *_time_outputs(kind, shape, flat, False, delay), *aggs.columns, *late)
                for name, shape in shapes.items()}
        start, end = _from_micros(F.col(START), kind), _from_micros(F.col(END), kind)
    elif sliced is None or df.isStreaming:  # one pass per window, each as one window_aggregate call
        def single(name: str, flat: bool) -> Any:
            spec, shape = windows[name], shapes[name]
            if isinstance(spec, (SessionGap, str, tuple)):  # as given: Spark parses calendar intervals itself
                given = dict(session_gap=spec.gap) if isinstance(spec, SessionGap) else \
                    dict(zip(("size", "slide", "start_time"), (spec,) if isinstance(spec, str) else spec))
            else:
                given = dict(session_gap=shape.gap) if isinstance(shape, Sessions) else \
                    dict(size=shape.size, slide=shape.slide, start_time=shape.offset or None)
            return window_aggregate(df, keys, time, aggregations, flat=flat, late_count=late_count,
                                    watermark=watermark, allowed_lateness=allowed_lateness, **given)

        if split:
            return {name: single(name, flat) for name in shapes}
        parts = [single(name, True).select(*keys, F.lit(name).alias(NAME), F.col("window_start").alias(START),
                                           F.col("window_end").alias(END), *aggs.columns, *late) for name in shapes]
        out, start, end = functools.reduce(lambda a, b: a.unionByName(b), parts), F.col(START), F.col(END)
    else:
        out = sliced_plan(df, keys, _to_micros(F.col(time), kind), sliced, queries, True, late_count)
        if split:
            return {name: out.where(F.col(NAME) == name).select(
                *keys, *_time_outputs(kind, shape, flat, False, None), *aggs.columns, *late)
                for name, shape in shapes.items()}
        start, end = _from_micros(F.col(START), kind), _from_micros(F.col(END), kind)
    window = [start.alias("window_start"), end.alias("window_end")] if flat else \
        [F.struct(start.alias("start"), end.alias("end")).alias("window", metadata={"spark.timeWindow": True})]
    return out.select(*keys, NAME, *window, *aggs.columns, *late)


def _time_column(df: Any, time: Any, columns: dict[str, str]) -> tuple[Any, str, str, str]:
    """``df`` with the event time as a column: (df, its column, its name in the output,
    its type). An expression becomes a column of its own, named in the output as Spark
    names it (``df.select(expr).columns``)."""
    from pyspark.sql import Column

    if isinstance(time, str):
        if time not in columns:
            raise ValueError(f"time: no column {time!r} (columns: {', '.join(columns)})")
        column, shown, kind = time, time, columns[time]
    elif isinstance(time, Column):
        selected = df.select(time)
        shown, kind = selected.columns[0], selected.schema.fields[0].dataType.simpleString()
        df, column = df.withColumn(EVENT, time), EVENT
    else:
        raise TypeError(f"time: expected a column name or a Column, got {time!r}")
    if kind not in ("timestamp", "timestamp_ntz"):
        raise ValueError(f"time column {shown!r} must be a timestamp or timestamp_ntz (as for Spark's window()), "
                         f"not {kind}")
    return df, column, shown, kind


def _to_micros(column: Any, kind: str) -> Any:
    """Microseconds since the epoch: of UTC for a TIMESTAMP, of the wall clock for a
    TIMESTAMP_NTZ (what Spark's window() aligns either on, whatever the session zone).
    Not ``timestamp_diff`` from an NTZ epoch: it goes through the session zone, and a wall
    clock in a daylight-saving gap or overlap came out an hour off."""
    from pyspark.sql import functions as F

    if kind == "timestamp":
        return F.unix_micros(column)
    return as_integer(column, kind)


def _from_micros(column: Any, kind: str) -> Any:
    """The inverse of :func:`_to_micros`: a ``kind`` time (an NTZ built from its fields:
    interval arithmetic on NTZ goes through the session zone too)."""
    from pyspark.sql import functions as F

    if kind == "timestamp":
        return F.timestamp_micros(column)
    of_day = F.pmod(column, F.lit(_DAY))
    day = F.date_from_unix_date(((column - of_day).cast("decimal(20,0)") / F.lit(_DAY)).cast("int"))  # exact
    second = (F.pmod(column, F.lit(60_000_000)).cast("decimal(16,6)") / F.lit(1_000_000)).cast("decimal(8,6)")
    return F.make_timestamp_ntz(F.year(day), F.month(day), F.dayofmonth(day), (of_day / 3_600_000_000).cast("int"),
                                ((of_day / 60_000_000).cast("int") % 60), second)


def _watermarked(df: Any, time: str, kind: str, watermark: Any, spark: Any) -> tuple[Any, int | None]:
    """The stream with the watermark on ``time``: ``watermark``'s, or the input's own
    ``withWatermark`` when ``watermark`` is None (a drop-in job's), or a 0 s one; and the
    delay (microseconds) of the watermark on ``time``, if there is one. Spark refuses a
    watermark on a TIMESTAMP_NTZ column: then it goes on a TIMESTAMP of the same
    microseconds (the wall clock read as UTC), so it moves with the column."""
    from pyspark.sql import functions as F

    own = _input_watermarks(df)
    if own and watermark is not None:
        raise ValueError(f"watermark={watermark!r}, but the input has its own withWatermark "
                         f"({', '.join(f'{c}: {d}' for c, d in own)}): give one of the two")
    if own:
        return df, next((micros(d, "the input's watermark", spark) for c, d in own if c == time), None)
    delay = micros(watermark if watermark is not None else 0, "watermark", spark)
    if kind == "timestamp_ntz":
        df, column = df.withColumn(WATERMARK, F.timestamp_micros(_to_micros(F.col(time), kind))), WATERMARK
    else:
        column = time
    return df.withWatermark(column, f"{delay} microseconds"), delay


def _input_watermarks(df: Any) -> list[tuple[str, str]]:
    """The ``withWatermark`` calls in ``df``'s plan: (column, delay) pairs."""
    plan = df._jdf.queryExecution().analyzed().toString()
    return re.findall(r"EventTimeWatermark [0-9a-f-]+, (.+?)#\d+: \w+, (.+)", plan)


def _key_codec(kind: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
    """How a key column of Spark type ``kind`` goes into the streaming key string and back:
    (column -> exact string, string -> column of ``kind``); None for a type that cannot."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(kind, T.StringType):
        return (lambda c: c), (lambda s: s)
    if isinstance(kind, (T.FloatType, T.DoubleType)):  # -0.0 groups with 0.0, NaN with NaN (as in Spark)
        return (lambda c: F.when(c == 0, F.lit(0).cast(kind)).otherwise(c).cast("string")), \
            (lambda s: s.cast(kind))
    if isinstance(kind, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.BooleanType,
                         T.DateType)):
        return (lambda c: c.cast("string")), (lambda s: s.cast(kind))
    if isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
        simple = kind.simpleString()
        return (lambda c: _to_micros(c, simple).cast("string")), (lambda s: _from_micros(s.cast("bigint"), simple))
    if isinstance(kind, T.BinaryType):
        return (lambda c: F.hex(c)), (lambda s: F.unhex(s))
    return None


def _key_string(df: Any, keys: list[str]) -> Any:
    """The streaming stand-in of the key columns: a JSON array of their values as exact
    strings (null a JSON null). transformWithStateInPandas hands keys through pandas,
    where a null turns an integer column into floats and distinct keys can meet; a
    string stays itself."""
    from pyspark.sql import functions as F

    encoded = []
    for key in keys:
        codec = _key_codec(df.schema[key].dataType)
        if codec is None:
            raise ValueError(f"keys: column {key!r} is a {df.schema[key].dataType.simpleString()}; a streaming key "
                             f"column must be of an atomic type (string, number, boolean, date, timestamp, binary)")
        encoded.append(codec[0](F.col(key)))
    return F.to_json(F.array(*encoded)) if encoded else F.lit("[]")


def _keys_from_string(df: Any, keys: list[str]) -> list[Any]:
    """The key columns back from :data:`KEY`, with their own types, values and nullability
    (a key column that cannot be null comes back coalesced with a zero of its type, which
    no row takes, so that the schema says so as Spark's groupBy does)."""
    from pyspark.sql import functions as F

    values = F.from_json(F.col(KEY), "array<string>")
    out = []
    for i, k in enumerate(keys):
        field = df.schema[k]
        column = _key_codec(field.dataType)[1](values[i])
        if not field.nullable:
            column = F.coalesce(column, _zero(field.dataType))
        out.append(column.alias(k))
    return out


def _zero(kind: Any) -> Any:
    """A literal of Spark type ``kind`` that is never null (a key type of :func:`_key_codec`)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(kind, T.BinaryType):
        return F.lit(bytearray())
    if isinstance(kind, T.StringType):
        return F.lit("")
    if isinstance(kind, T.BooleanType):
        return F.lit(False)
    if isinstance(kind, T.DateType):
        return F.lit(dt.date(1970, 1, 1))
    if isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
        return F.lit(dt.datetime(1970, 1, 1)).cast(kind)
    return F.lit(0).cast(kind)


def _time_outputs(kind: str, windowing: Windowing | Sessions, flat: bool, side: bool, delay: int | None
                  ) -> list[Any]:
    """The window's columns: the ``window`` struct (null on side-output rows), or flat ones.
    As in Spark, the struct is nullable on a stream (``delay`` given: Spark's streaming
    aggregation makes every window struct nullable) and in batch for sliding windows only
    (or with the side output), and its metadata marks it a time window (for ``window_time``) and, on a stream whose
    watermark is on the time column, carries the watermark's delay (so that a later
    stateful operator can take the window as its event time)."""
    from pyspark.sql import functions as F

    start, end = _from_micros(F.col(START), kind), _from_micros(F.col(END), kind)
    if isinstance(windowing, Sessions):
        if flat:
            return [start.alias("window_start"), end.alias("window_end")]
        window = F.struct(start.alias("start"), end.alias("end"))
        metadata: dict[str, Any] = {"spark.sessionWindow": True}
        if delay is not None:
            window = F.when(F.col(START).isNotNull(), window)
            metadata["spark.watermarkDelayMs"] = delay // 1000
        return [window.alias("session_window", metadata=metadata)]
    if windowing.emit == "event":
        return [start.alias("event_time")]
    if flat:
        return [start.alias("window_start"), end.alias("window_end")]
    window = F.struct(start.alias("start"), end.alias("end"))
    if side:
        window = F.when(F.col(LATE_TIME).isNull(), window)
    elif delay is not None or windowing.policy is None and windowing.size != windowing.step:
        window = F.when(F.col(START).isNotNull(), window)
    metadata: dict[str, Any] = {"spark.timeWindow": True}
    if delay is not None:
        metadata["spark.watermarkDelayMs"] = delay // 1000
    return [window.alias("window", metadata=metadata)]


def _side_output(kind: str, time_name: str, side: list[str] | None) -> list[Any]:
    from pyspark.sql import functions as F

    if side is None:
        return []
    event = F.struct(_from_micros(F.col(LATE_TIME), kind).alias(time_name), *(F.col(late_column(c)).alias(c) for c in side))
    return [F.when(F.col(LATE_TIME).isNotNull(), event).alias("late_event")]


def _check_names(spark: Any, keys: list[str], time_name: str, aggs: Aggregations, emit: str, flat: bool,
                 late_count: bool, late_events: bool, window: str = "window") -> None:
    """Refuse, naming it, an output column that two things would take (as Spark compares
    names: case-insensitively unless spark.sql.caseSensitive), and a user column with the
    internal columns' prefix."""
    times = ["event_time"] if emit == "event" else ["window_start", "window_end"] if flat else [window]
    outputs = [(k, f"key {k!r}") for k in keys] + [(t, f"the {t!r} column") for t in times]
    outputs += [(a, f"aggregations[{a!r}]") for a in aggs.columns]
    outputs += [("late", "the 'late' column (late_count=True)")] if late_count else []
    outputs += [("late_event", "the 'late_event' column (late_events=True)")] if late_events else []
    case_sensitive = str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
    seen: dict[str, str] = {}
    for column, role in outputs:
        folded = column if case_sensitive else column.lower()
        if folded in seen:
            raise ValueError(f"output column {column!r}: {seen[folded]} and {role} would share it; rename one")
        seen[folded] = role
    for column, role in [*outputs, (time_name, "time"), *((c, "an aggregation's input") for c in aggs.inputs)]:
        if column.lower().startswith(RESERVED):
            raise ValueError(f"{role}: column {column!r} starts with {RESERVED!r}, the prefix of the operator's "
                             f"internal columns; rename it")


def _schema(df: Any, keys: list[str], aggs: Aggregations, side: list[str] | None, named: bool = False) -> Any:
    """What each key's frame holds: the grouping columns of ``df`` (the prepared input),
    [the window's name], window bounds in microseconds, the aggregations, the late count,
    the side output."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType, _parse_datatype_string

    fields = [df.schema[k] for k in keys] + ([StructField(NAME, StringType())] if named else [])
    fields += [StructField(START, LongType()), StructField(END, LongType())]
    fields += [StructField(name, _parse_datatype_string(kind), aggs.specs[name].how not in NEVER_NULL)
               for name, (_, _, kind) in aggs.columns.items()]
    fields.append(StructField("late", LongType()))
    if side is not None:
        fields.append(StructField(LATE_TIME, LongType()))
        fields += [StructField(late_column(c), df.schema[c].dataType) for c in side]
    return StructType(fields)


def _batch(aggs: Aggregations, windowing: Windowing | Sessions, keys: list[str], side: list[str] | None,
           stored: StoredKeys | None) -> Callable[[Any], Any]:
    monoid = aggs.monoid

    def per_key(pdf: Any) -> Any:
        key = tuple(pdf[k].iloc[0] for k in keys)
        window = stored.scratch(key) if stored is not None else key_window(monoid, windowing)
        pdf = pdf.sort_values([TIME, SEQ])  # event time, ties in the input's row order (SEQ is unique)
        window.add(pdf[TIME].tolist(), aggs.lift(pdf), *([pdf[SESSION_END].tolist()] if SESSION_END in pdf else []))
        out = Output(window.advance(math.inf), 0, [])
        if stored is not None:
            stored.drop(window)
        return frame(key, keys, aggs, out, side)

    return per_key
