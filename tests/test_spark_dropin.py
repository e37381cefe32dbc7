"""window_aggregate as a drop-in for Spark's ``groupBy(keys, window(...)).agg(...)``:
Spark's own result is the oracle, row for row and schema included, on seeded
generated data with the traps of real data: keys of string, int, bigint and date
columns with nulls, microsecond, duplicate and boundary timestamps, TIMESTAMP and
TIMESTAMP_NTZ under non-UTC session zones, window offsets (startTime), Spark's
interval strings, a time given as a Column; in batch and in streaming (file source,
several micro-batches, availableNow, the input's own withWatermark). Bad calls fail
when window_aggregate is called, naming the argument."""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from spark_integration import micros, window_aggregate

#: 2024-11-03 00:00 UTC: America/New_York leaves daylight saving time six hours later.
BASE = 1_730_592_000_000_000
HOUR = 3_600_000_000
SCHEMA = "s string, i int, b bigint, d date, us bigint, v bigint, x double"
KEYS = ["s", "i", "b", "d"]
AGGS = {"sv": ("v", "sum"), "n": ("v", "count"), "lo": ("x", "min"), "hi": ("x", "max"), "sx": ("x", "sum")}
#: Key values with nulls; ("a", 0, None), ("a", 0, 1) and ("a", 0, 2) are distinct keys.
KEY_VALUES = {"s": ["a", "b", None], "i": [0, 1, None, -2_147_483_648], "b": [None, 1, 2, 2**53 + 1],
              "d": [None, dt.date(2024, 1, 1), dt.date(1969, 12, 31)]}


def generate(n: int, seed: int, span: int = 3 * 24 * HOUR) -> list[tuple]:
    """Rows of SCHEMA: microsecond times around BASE, a quarter of them on or next to an
    hour or half-hour boundary, some duplicated."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        us = BASE + rng.randrange(-span, span)
        if rng.random() < 0.25:  # on a boundary, or a microsecond either side of it
            us = us - us % (HOUR // 2) + rng.choice([-1, 0, 1])
        key = [rng.choice(KEY_VALUES[k]) for k in KEYS]
        rows.append((*key, us, rng.randrange(-50, 100), rng.uniform(-1, 1)))
        if rng.random() < 0.05:
            rows.append(rows[-1])
    return rows


def with_times(df):
    """``ts`` (TIMESTAMP) and ``tn`` (TIMESTAMP_NTZ) of the same microseconds ``us``
    (``tn`` reads them as a wall clock)."""
    from pyspark.sql import functions as F

    epoch = F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'")
    return df.withColumn("ts", F.timestamp_micros("us")).withColumn("tn", F.timestamp_add("MICROSECOND", "us", epoch))


def native(df, time, size, slide=None, start=None):
    from pyspark.sql import functions as F

    window = F.window(time, size, slide, start) if start else F.window(time, size, slide) if slide else \
        F.window(time, size)
    return df.groupBy(*KEYS, window).agg(F.sum("v").alias("sv"), F.count("v").alias("n"), F.min("x").alias("lo"),
                                         F.max("x").alias("hi"), F.sum("x").alias("sx"))


def rows_of(df) -> list[tuple]:
    """The rows, the window struct as (start, end), in one order (nulls first)."""
    rows = [tuple(tuple(v) if k == "window" else v for k, v in r.asDict().items()) for r in df.collect()]
    return sorted(rows, key=lambda r: tuple((v is not None, v if v is not None else 0) for v in r[:5]))


def assert_same(ours, theirs) -> None:
    """Schema (names, types, nullability, the window's metadata) and rows (doubles to 1e-9)."""
    assert ours.schema == theirs.schema
    a, b = rows_of(ours), rows_of(theirs)
    assert len(a) == len(b) and a
    for x, y in zip(a, b):
        assert x[:7] == y[:7], (x, y)
        assert all(math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-12) for p, q in zip(x[7:], y[7:])), (x, y)


@contextmanager
def time_zone(spark, zone: str):
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
@pytest.mark.parametrize("time", ["ts", "tn"])
@pytest.mark.parametrize("size, slide, start", [("1 day", None, "-5 hours"), ("1 hour", "30 minutes", "7 minutes")])
def test_batch_rows_and_schema_equal_spark_window(spark, zone, time, size, slide, start) -> None:
    """TIMESTAMP windows are aligned on the epoch, TIMESTAMP_NTZ ones on the wall clock
    (and stay TIMESTAMP_NTZ), whatever the session zone; keys with nulls stay apart."""
    with time_zone(spark, zone):
        df = with_times(spark.createDataFrame(generate(600, seed=len(zone) + len(time)), SCHEMA))
        ours = window_aggregate(df, KEYS, time, AGGS, size=size, slide=slide, start_time=start)
        assert_same(ours, native(df, time, size, slide, start))


@pytest.mark.parametrize("size, slide", [("1 week", None), ("1 hour 30 minutes", "90 seconds"),
                                         ("interval 1 day", "interval 6 hours"),
                                         ("10 seconds 500 milliseconds", "1.5 seconds")])
def test_spark_interval_strings_give_spark_windows(spark, size, slide) -> None:
    rows = generate(150, seed=3, span=(14 * 24 if "week" in size else 1) * HOUR)
    df = with_times(spark.createDataFrame(rows, SCHEMA))
    assert_same(window_aggregate(df, KEYS, "ts", AGGS, size=size, slide=slide), native(df, "ts", size, slide))


def test_time_as_a_column_or_an_expression(spark) -> None:
    from pyspark.sql import functions as F

    df = with_times(spark.createDataFrame(generate(300, seed=5), SCHEMA))
    for column in (F.col("ts"), F.col("tn") + F.expr("INTERVAL 90 MINUTES")):
        assert_same(window_aggregate(df, KEYS, column, AGGS, size="2 hours", slide="1 hour", start_time="-20 minutes"),
                    native(df, column, "2 hours", "1 hour", "-20 minutes"))
    side = window_aggregate(df, KEYS, F.col("ts") - F.expr("INTERVAL 1 SECOND"), AGGS, size="1 hour",
                            late_events=True)
    assert side.schema["late_event"].dataType.fieldNames()[0] == df.select(
        F.col("ts") - F.expr("INTERVAL 1 SECOND")).columns[0]  # named as Spark names the expression


def test_the_extras_come_when_asked_for(spark) -> None:
    from pyspark.sql import functions as F

    df = with_times(spark.createDataFrame(generate(50, seed=9), SCHEMA))
    aggs = {"sv": ("v", "sum")}

    def layout(**options):
        return [f"{f.name}:{f.dataType.simpleString()}"
                for f in window_aggregate(df, ["s"], "tn", aggs, size="1 hour", **options).schema]

    assert layout() == ["s:string", "window:struct<start:timestamp_ntz,end:timestamp_ntz>", "sv:bigint"]
    assert layout(flat=True, late_count=True) == ["s:string", "window_start:timestamp_ntz",
                                                  "window_end:timestamp_ntz", "sv:bigint", "late:bigint"]
    assert layout(emit="event") == ["s:string", "event_time:timestamp_ntz", "sv:bigint"]
    assert layout(late_events=True)[-1] == "late_event:struct<tn:timestamp_ntz,v:bigint>"
    flat = window_aggregate(df, ["s"], "tn", aggs, size="1 hour", flat=True, late_count=True).collect()
    nested = window_aggregate(df, ["s"], "tn", aggs, size="1 hour")
    assert nested.select(F.window_time("window")).schema[0].dataType.simpleString() == "timestamp_ntz"  # Spark's
    nested = nested.collect()
    assert sorted((r.s or "", r.window_start, r.window_end, r.sv, r.late) for r in flat) == sorted(
        (r.s or "", r.window.start, r.window.end, r.sv, 0) for r in nested)


@pytest.mark.parametrize("value, expected", [(2, 2_000_000), (0.5, 500_000),
                                             (dt.timedelta(minutes=1, microseconds=3), 60_000_003)])
def test_durations(value, expected) -> None:
    """Numbers are seconds; interval strings are Spark's (below)."""
    assert micros(value) == expected


@pytest.mark.parametrize("bad", [-2, True, None, math.nan, dt.timedelta(seconds=-1)])
def test_bad_durations_are_refused(bad) -> None:
    with pytest.raises((ValueError, TypeError), match="duration"):
        micros(bad)


def test_durations_are_parsed_by_spark(spark) -> None:
    assert micros("1 week", spark=spark) == 7 * 24 * HOUR
    assert micros("1 hour 30 minutes") == 5_400_000_000  # the active session
    assert micros("interval 1 day") == 24 * HOUR
    assert micros("-5 minutes", "start_time", signed=True) == -300_000_000
    with pytest.raises(ValueError, match="watermark: Intervals greater than a month is not supported"):
        micros("1 month", "watermark")
    with pytest.raises(ValueError, match="size: .*CANNOT_PARSE_INTERVAL.*'1.5 hours'"):
        micros("1.5 hours", "size")
    with pytest.raises(ValueError, match="allowed_lateness must be >= 0"):
        micros("-1 seconds", "allowed_lateness")


BAD_CALLS = [
    ({"size": "10 minutes", "slide": "20 minutes"}, r"slide \('20 minutes'\) must be <= size \('10 minutes'\)"),
    ({"size": "0 seconds"}, r"size must be > 0"),
    ({"size": "-1 minutes"}, r"size must be > 0"),
    ({"size": "10 minutes", "slide": "0 seconds"}, r"slide must be > 0"),
    ({"size": "10 minutes", "slide": "5 minutes", "start_time": "5 minutes"}, r"start_time \('5 minutes'\)"),
    ({"size": "10 minutes", "start_time": "-10 minutes"}, r"start_time .* must be < slide"),
    ({"size": "1 month"}, r"size: Intervals greater than a month"),
    ({"size": "1 year"}, r"size: Intervals greater than a month"),
    ({"size": "1.5 hours"}, r"size: .*CANNOT_PARSE_INTERVAL"),
    ({"size": "1 hour", "slide": "10 fortnights"}, r"slide: .*CANNOT_PARSE_INTERVAL"),
    ({"size": "1 hour", "emit": "event", "start_time": "1 minute"}, r"start_time offsets time windows"),
    ({"time": "nope"}, r"time: no column 'nope'"),
    ({"time": "us"}, r"time column 'us' must be a timestamp or timestamp_ntz.*not bigint"),
    ({"keys": ["s", "nope"]}, r"keys: no column 'nope'"),
    ({"aggregations": {"window": ("v", "sum")}}, r"output column 'window': the 'window' column and "
                                                  r"aggregations\['window'\]"),
    ({"aggregations": {"Window": ("v", "sum")}}, r"output column 'Window'"),
    ({"aggregations": {"s": ("v", "sum")}}, r"output column 's': key 's' and aggregations\['s'\]"),
    ({"aggregations": {"window_start": ("v", "sum")}, "flat": True}, r"output column 'window_start'"),
    ({"aggregations": {"late": ("v", "sum")}, "late_count": True}, r"output column 'late'"),
    ({"aggregations": {"event_time": ("v", "max")}, "emit": "event"}, r"output column 'event_time'"),
    ({"aggregations": {"mta_start": ("v", "max")}}, r"aggregations\['mta_start'\]: column 'mta_start' starts with"),
    ({"keys": ["s", "s"]}, r"output column 's': key 's' and key 's'"),
]


@pytest.mark.parametrize("call, message", BAD_CALLS, ids=[m[:30] for _, m in BAD_CALLS])
def test_a_bad_call_fails_at_call_time_naming_the_argument(spark, call, message) -> None:
    df = with_times(spark.createDataFrame(generate(5, seed=1), SCHEMA))
    args = {"keys": ["s"], "time": "ts", "aggregations": {"sv": ("v", "sum")}, "size": "1 hour", **call}
    with pytest.raises(ValueError, match=message):
        window_aggregate(df, args.pop("keys"), args.pop("time"), args.pop("aggregations"), **args)


def test_a_key_or_input_column_with_the_internal_prefix_or_named_like_an_output_is_refused(spark) -> None:
    df = with_times(spark.createDataFrame(generate(5, seed=1), SCHEMA))
    with pytest.raises(ValueError, match="key 'mta_key': column 'mta_key' starts with 'mta_'"):
        window_aggregate(df.withColumnRenamed("s", "mta_key"), ["mta_key"], "ts", {"n": ("v", "count")},
                         size="1 hour")
    with pytest.raises(ValueError, match="output column 'window': key 'window' and the 'window' column"):
        window_aggregate(df.withColumnRenamed("s", "window"), ["window"], "ts", {"n": ("v", "count")}, size="1 hour")


# --------------------------------------------------------------------------- streaming

def write_pieces(spark, directory: Path, rows: list[tuple], pieces: int, seed: int) -> None:
    """Parquet files in time order, one per micro-batch (the source reads by mtime),
    each shuffled: out of order within a batch, never behind the previous batch."""
    rng = random.Random(seed)
    ordered = sorted(rows, key=lambda r: r[4])
    step = -(-len(ordered) // pieces)
    stamp = time.time() - 10_000
    for i in range(pieces):
        piece = ordered[i * step:(i + 1) * step]
        rng.shuffle(piece)
        before = set(directory.glob("*.parquet")) if directory.exists() else set()
        with_times(spark.createDataFrame(piece, SCHEMA)).coalesce(1).write.mode("append").parquet(str(directory))
        for new in set(directory.glob("*.parquet")) - before:
            os.utime(new, (stamp + i, stamp + i))


def run(df, name: str, checkpoint: Path) -> None:
    query = (df.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None


def stream(spark, directory: Path):
    schema = with_times(spark.createDataFrame([], SCHEMA)).schema
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(directory))


def test_stream_schemas_are_sparks_streaming_schemas_on_every_path(spark, tmp_path) -> None:
    """Spark's streaming aggregation makes its window struct (and count) nullable, tumbling
    and session windows too: a lone window (Spark's own plan or the operator's), every part
    of a split windows={...} call, and sessions, against Spark's own streaming query."""
    from pyspark.sql import functions as F

    from spark_integration import session

    def theirs(window):
        return events.withWatermark("ts", "10 seconds").groupBy(*KEYS, window).agg(
            F.sum("v").alias("sv"), F.count("v").alias("n"))

    events = stream(spark, tmp_path)
    aggs = {"sv": ("v", "sum"), "n": ("v", "count")}
    shapes = {"tumbling": ("1 hour", "1 hour"), "sliding": ("1 hour", "20 minutes")}
    for size, slide in shapes.values():
        for options in ({}, {"allowed_lateness": "1 second"}):  # Spark's own plan, then the operator's
            ours = window_aggregate(events, KEYS, "ts", aggs, size=size, slide=slide, watermark="10 seconds",
                                    **options)
            assert ours.schema == theirs(F.window("ts", size, slide)).schema, (size, slide, options)
    parts = window_aggregate(events, KEYS, "ts", aggs, windows=shapes, watermark="10 seconds", split=True)
    for name, (size, slide) in shapes.items():
        assert [(f.name, f.dataType, f.nullable) for f in parts[name].schema] == \
            [(f.name, f.dataType, f.nullable) for f in theirs(F.window("ts", size, slide)).schema], name
    ours = window_aggregate(events, KEYS, "ts", aggs, session_gap="10 minutes", watermark="10 seconds")
    assert ours.schema == theirs(F.session_window("ts", "10 minutes")).schema
    assert callable(session) and session("1 minute").gap == "1 minute"


def test_streaming_keeps_keys_with_nulls_apart_and_honours_the_inputs_watermark(spark, tmp_path) -> None:
    """Spark's streaming window() on the same files, a drop-in job's input (its own
    withWatermark, no watermark= argument), under a non-UTC zone, with an offset."""
    write_pieces(spark, tmp_path / "in", generate(500, seed=11, span=12 * HOUR), pieces=3, seed=11)
    with time_zone(spark, "America/New_York"):
        source = stream(spark, tmp_path / "in").withWatermark("ts", "20 minutes")
        run(window_aggregate(source, KEYS, "ts", AGGS, size="1 hour", slide="20 minutes", start_time="-7 minutes"),
            "dropin_ours", tmp_path / "ck1")
        run(native(source, "ts", "1 hour", "20 minutes", "-7 minutes"), "dropin_native", tmp_path / "ck2")
        ours, theirs = spark.table("dropin_ours"), spark.table("dropin_native")
        assert_same(ours, theirs)
        keys = {r[:4] for r in rows_of(ours)}
        assert {("a", 0, None), ("a", 0, 1), ("a", 0, 2)} <= {k[:3] for k in keys}
        assert any(k[2] == 2**53 + 1 for k in keys) and any(k[3] is None for k in keys)


def test_streaming_timestamp_ntz_windows_are_wall_clock_windows(spark, tmp_path) -> None:
    """Spark refuses a watermark on a TIMESTAMP_NTZ column: the oracle is Spark's streaming
    window() on the TIMESTAMP of the same microseconds (the wall clock read as UTC), its
    bounds read back as TIMESTAMP_NTZ."""
    from pyspark.sql import functions as F

    write_pieces(spark, tmp_path / "in", generate(800, seed=12, span=12 * HOUR), pieces=3, seed=12)
    with time_zone(spark, "Asia/Kolkata"):
        run(window_aggregate(stream(spark, tmp_path / "in"), KEYS, "tn", AGGS, size="1 day", start_time="-5 hours",
                             watermark="30 minutes"), "ntz_ours", tmp_path / "ck1")
        wall = stream(spark, tmp_path / "in").withColumn("wall", F.timestamp_micros("us")).withWatermark(
            "wall", "30 minutes")
        run(native(wall, "wall", "1 day", None, "-5 hours"), "ntz_native", tmp_path / "ck2")
        epoch = F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'")
        bound = {b: F.timestamp_add("MICROSECOND", F.unix_micros(f"window.{b}"), epoch).alias(b)
                 for b in ("start", "end")}
        marks = spark.table("ntz_native").schema["window"].metadata  # a time window, the watermark's delay
        window = F.when(F.col("window").isNotNull(), F.struct(bound["start"], bound["end"]))  # nullable as Spark's
        theirs = spark.table("ntz_native").select(*KEYS, window.alias("window", metadata=marks), *AGGS)
        ours = spark.table("ntz_ours")
        assert ours.schema["window"].dataType.simpleString() == "struct<start:timestamp_ntz,end:timestamp_ntz>"
        assert_same(ours, theirs)


def test_a_watermark_twice_is_refused(spark, tmp_path) -> None:
    source = stream(spark, tmp_path).withWatermark("ts", "1 minute")
    with pytest.raises(ValueError, match=r"watermark='1 minute', but the input has its own withWatermark \(ts: 1 min"):
        window_aggregate(source, ["s"], "ts", {"n": ("v", "count")}, size="1 hour", watermark="1 minute")
