"""Many windows in one call (``window_aggregate(..., windows={...})``) and the fast
batch path (Spark folds slices, array kernels make the windows): Spark's own
queries are the oracle, one per window, rows and schema."""

from __future__ import annotations

import math
import random

import pytest

from spark_integration import session, window_aggregate
from test_spark_aggregations import assert_rows_equal, frame, native, rows, specs
from test_spark_dropin import KEYS, generate, time_zone, with_times

AGGS = {"sv": ("v", "sum"), "n": ("v", "count"), "lo": ("x", "min"), "hi": ("x", "max"), "sx": ("x", "sum"),
        "ax": ("x", "avg"), "sd": ("x", "stddev"), "f": ("v", "first"), "l": ("x", "last_ignore_nulls")}
WINDOWS = {"hour": ("1 hour", "30 minutes"), "odd": ("2 hours", "20 minutes", "5 minutes"), "day": "1 day",
           "s": session("45 minutes")}


def spark_query(df, time, name):
    """Spark's own query of window ``name`` of WINDOWS (first/last in event time: min_by/max_by)."""
    from pyspark.sql import functions as F

    spec = WINDOWS[name]
    if isinstance(spec, str):
        window = F.window(time, spec)
    elif isinstance(spec, tuple):
        window = F.window(time, *spec)
    else:
        window = F.session_window(time, spec.gap)
    order = F.struct(time, "seq")
    exprs = [F.sum("v").alias("sv"), F.count("v").alias("n"), F.min("x").alias("lo"), F.max("x").alias("hi"),
             F.sum("x").alias("sx"), F.avg("x").alias("ax"), F.stddev("x").alias("sd"),
             F.min_by("v", order).alias("f"), F.max_by("x", F.when(F.col("x").isNotNull(), order)).alias("l")]
    return df.groupBy(*KEYS, window).agg(*exprs)


def comparable(df) -> list[tuple]:
    out = []
    for r in df.collect():
        d = r.asDict()
        w = d.pop("window", None) or d.pop("session_window")
        out.append((tuple(d[k] for k in KEYS), (w.start, w.end), tuple(d[a] for a in AGGS)))
    return sorted(out, key=repr)


def close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def assert_same_rows(ours, theirs) -> None:
    a, b = comparable(ours), comparable(theirs)
    assert [r[:2] for r in a] == [r[:2] for r in b] and a
    bad = [(x, y) for x, y in zip(a, b) if not all(map(close, x[2], y[2]))]
    assert not bad, bad[:3]


@pytest.fixture(scope="module")
def events(spark):
    from pyspark.sql import functions as F

    data = generate(1500, seed=19)
    df = with_times(spark.createDataFrame(data, "s string, i int, b bigint, d date, us bigint, v bigint, x double"))
    # nulls in a value column, and a sequence that orders ties (first/last) as the input does
    df = df.withColumn("x", F.when(F.col("v") % 7 == 0, None).otherwise(F.col("x")))
    return df.withColumn("seq", F.monotonically_increasing_id()).cache()


@pytest.mark.parametrize("time", ["ts", "tn"])
def test_every_window_of_one_call_equals_sparks_own_query_of_it(spark, events, time) -> None:
    """Tumbling, sliding with an offset, and sessions from one pass, in a non-UTC zone;
    TIMESTAMP_NTZ windows are wall-clock windows."""
    with time_zone(spark, "America/New_York"):
        parts = window_aggregate(events, KEYS, time, AGGS, windows=WINDOWS, split=True)
        assert set(parts) == set(WINDOWS)
        for name, ours in parts.items():
            theirs = spark_query(events, time, name)
            window = "session_window" if name == "s" else "window"
            assert [(f.name, f.dataType) for f in ours.schema] == [(f.name, f.dataType) for f in theirs.schema]
            assert ours.schema[window] == theirs.schema[window], name
            assert_same_rows(ours, theirs)


def test_the_combined_result_names_each_window_and_holds_every_windows_rows(spark, events) -> None:
    combined = window_aggregate(events, KEYS, "ts", AGGS, windows=WINDOWS, late_count=True)
    assert combined.columns == [*KEYS, "window_name", "window", *AGGS, "late"]
    parts = window_aggregate(events, KEYS, "ts", AGGS, windows=WINDOWS, split=True)
    by_name = {name: comparable(part) for name, part in parts.items()}
    rows_ = combined.collect()
    assert {r.late for r in rows_} == {0}
    for name in WINDOWS:
        mine = [r.asDict() for r in rows_ if r.window_name == name]
        got = sorted([(tuple(d[k] for k in KEYS), (d["window"].start, d["window"].end), tuple(d[a] for a in AGGS))
                      for d in mine], key=repr)
        assert len(got) == len(by_name[name]) and [g[:2] for g in got] == [g[:2] for g in by_name[name]]


def test_the_flat_form_and_mta_window_types(spark, events) -> None:
    from mta.windows import Session, Sliding, Tumbling

    flat = window_aggregate(events, KEYS, "ts", {"n": ("v", "count")}, flat=True,
                            windows={"t": Tumbling(3600), "w": Sliding(7200, 1200, 300), "s": Session(2700)})
    assert flat.columns == [*KEYS, "window_name", "window_start", "window_end", "n"]
    counts = {r.window_name: r.c for r in flat.groupBy("window_name").count().withColumnRenamed("count", "c")
              .collect()}
    given = window_aggregate(events, KEYS, "ts", {"n": ("v", "count")}, windows={
        "t": "1 hour", "w": ("2 hours", "20 minutes", "5 minutes"), "s": session("45 minutes")}, flat=True)
    assert counts == {r.window_name: r.c for r in given.groupBy("window_name").count()
                      .withColumnRenamed("count", "c").collect()}
    assert min(counts.values()) > 0


def test_every_fast_aggregation_and_type_equals_spark_on_a_sliding_window(spark) -> None:
    """Each built-in of the fast path over each type it takes (nulls, NaN, -0.0, longs
    near 2**60, dates, both timestamps, strings as min_by values), a 30 s window sliding by 10 s."""
    from spark_integration.aggregations import parse
    from spark_integration.slicing import columnar

    df = frame(spark, rows(400, seed=5))
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    fast = {}
    for name, spec in specs().items():
        one = {name: spec}
        if columnar(parse(one, types), types) is not None:
            fast[name] = spec
    assert len(fast) >= 60  # most built-ins over most types take the fast path
    ours = window_aggregate(df, "k", "ts", fast, size="30 seconds", slide="10 seconds", flat=True)
    assert_rows_equal(ours.collect(), native(df, fast, "30 seconds", "10 seconds").collect(), list(fast))


def test_a_window_sum_beyond_bigint_fails_the_job_as_sparks_ansi_sum_does(spark) -> None:
    import datetime as dt

    big = 2**62
    data = [("a", dt.datetime(2024, 1, 1, 0, 0, s, tzinfo=dt.timezone.utc), big) for s in (1, 12, 25)]
    df = spark.createDataFrame(data, "k string, ts timestamp, v long")
    ok = window_aggregate(df, "k", "ts", {"s": ("v", "sum")}, size="10 seconds", slide="5 seconds").collect()
    assert sorted(r.s for r in ok) == [big] * 6  # each 10 s window holds one of them
    with pytest.raises(Exception, match="overflow"):
        window_aggregate(df, "k", "ts", {"s": ("v", "sum")}, size="30 seconds", slide="10 seconds").collect()


def test_aggregations_without_a_fast_path_still_give_every_window(spark, events) -> None:
    """A decimal sum and a percentile run per key, one pass per window: same rows as Spark."""
    from pyspark.sql import functions as F

    df = events.withColumn("dec", (F.col("v") / 7).cast("decimal(10,3)"))
    parts = window_aggregate(df, KEYS, "ts", {"total": ("dec", "sum")}, windows={"h": ("1 hour", "30 minutes"),
                                                                            "s": session("45 minutes")}, split=True)
    for name, window in (("h", F.window("ts", "1 hour", "30 minutes")), ("s", F.session_window("ts", "45 minutes"))):
        theirs = df.groupBy(*KEYS, window).agg(F.sum("dec").alias("total"))
        assert sorted(map(repr, parts[name].collect())) == sorted(map(repr, theirs.collect()))


@pytest.mark.parametrize("kwargs, message", [
    (dict(windows={"a": "1 hour"}, size="1 hour"), "not also size"),
    (dict(windows={}), "non-empty"),
    (dict(windows={"a": ("1 hour", "2 hours")}), r"windows\['a'\]: slide"),
    (dict(windows={"a": 3}), r"windows\['a'\]: expected"),
    (dict(windows={"a": session("-1 second")}), r"windows\['a'\]: session_gap"),
    (dict(size="1 hour", split=True), "split"),
])
def test_a_bad_many_window_call_fails_at_call_time_naming_the_argument(spark, events, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        window_aggregate(events, KEYS, "ts", {"n": ("v", "count")}, **kwargs)


def test_random_shapes_equal_spark_on_data_the_tests_did_not_shape(spark) -> None:
    """Sparse and dense keys, size/slide ratios up to 60, random offsets: every row as Spark's."""
    from pyspark.sql import functions as F

    rng = random.Random(1919)
    n = 3000
    df = spark.range(n).select((F.col("id") % 13).alias("k"),
                               F.timestamp_micros((F.rand(3) * 4e9 * (1 + F.col("id") % 3)).cast("long")).alias("ts"),
                               (F.rand(4) * 100).cast("long").alias("v")).cache()
    for _ in range(4):
        slide = rng.choice([1, 2, 5, 7, 30])
        size = slide * rng.choice([1, 2, 3, 10, 60])
        offset = rng.randrange(slide)
        ours = window_aggregate(df, "k", "ts", {"s": ("v", "sum"), "m": ("v", "max")}, size=f"{size} seconds",
                                slide=f"{slide} seconds", start_time=f"{offset} seconds")
        theirs = df.groupBy("k", F.window("ts", f"{size} seconds", f"{slide} seconds", f"{offset} seconds")).agg(
            F.sum("v").alias("s"), F.max("v").alias("m"))
        assert sorted(map(repr, ours.collect())) == sorted(map(repr, theirs.collect())), (size, slide, offset)


@pytest.mark.parametrize("size, slide, reaggregated", [("20 seconds", "10 seconds", True),
                                                      ("30 seconds", "10 seconds", False)])
def test_a_lone_sliding_window_takes_its_path_by_size_over_slide_and_gives_sparks_rows(
        spark, events, size, slide, reaggregated) -> None:
    """At most RESLICE windows per slice: Spark aggregates the slices again (no Python stage);
    more: the Python stage. Sums, counts, means and extremes (nulls included) as Spark's, schema too."""
    import contextlib
    import io

    from pyspark.sql import functions as F

    from spark_integration.sliced import RESLICE

    assert RESLICE == 2  # the shapes straddle it
    aggs = {"sv": ("v", "sum"), "n": ("x", "count"), "ax": ("x", "avg"), "lo": ("x", "min"), "hi": ("v", "max")}
    ours = window_aggregate(events, KEYS, "ts", aggs, size=size, slide=slide, start_time="3 seconds")
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        ours.explain()
    assert ("MapInArrow" not in plan.getvalue()) == reaggregated, plan.getvalue()
    theirs = events.groupBy(*KEYS, F.window("ts", size, slide, "3 seconds")).agg(
        F.sum("v").alias("sv"), F.count("x").alias("n"), F.avg("x").alias("ax"), F.min("x").alias("lo"),
        F.max("v").alias("hi"))
    assert ours.schema == theirs.schema
    assert sorted(map(repr, ours.collect())) == sorted(map(repr, theirs.collect()))


def test_many_windows_on_a_stream_give_sparks_streaming_rows_late_events_included(spark, tmp_path) -> None:
    """One stateful pass for three windows (one state per key), against one Spark
    streaming query per window, on micro-batches with late events and keys sitting out."""
    import uuid

    from test_spark import AGGS as STREAM_AGGS
    from test_spark import native as spark_native
    from test_spark import assert_same as assert_stream_rows
    from test_spark import run, stream, write_file
    from test_spark_late import DELAY, late_stream
    from test_spark_late import rows_of as late_rows_of

    for rows_ in late_stream(7, size=30, batches=5):
        write_file(spark, tmp_path / "in", rows_)
    shapes = {"a": ("30 seconds", "10 seconds"), "b": ("20 seconds", "20 seconds"), "c": ("60 seconds", "15 seconds")}
    name = f"many_{uuid.uuid4().hex[:8]}"
    combined = window_aggregate(stream(spark, tmp_path / "in"), "k", "ts", STREAM_AGGS, windows=shapes,
                                watermark=f"{DELAY} seconds", late_count=True)
    run(combined, name, tmp_path / "ck")
    got = spark.table(name)
    assert got.columns == ["k", "window_name", "window", *STREAM_AGGS, "late"]
    assert got.where("late > 0").count() > 0  # late events were met, counted per window
    for label, (size, slide) in shapes.items():
        theirs_name = f"{name}_{label}"
        run(spark_native(stream(spark, tmp_path / "in").withWatermark("ts", f"{DELAY} seconds"), size, slide),
            theirs_name, tmp_path / f"ck_{label}")
        ours = late_rows_of(got.where(got.window_name == label).drop("window_name", "late"))
        theirs = late_rows_of(spark.table(theirs_name))
        assert len(ours) > 10, label
        assert_stream_rows(ours, theirs)


def test_rows_without_a_time_have_no_window_on_either_path(spark) -> None:
    """A null time drops the row, as window() does, on the fast path (double) and the per-key
    one (decimal): it used to reach the per-key engine as a float and fail the task."""
    import datetime as dt

    from pyspark.sql import functions as F

    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    df = spark.createDataFrame([("a", None, 1.0), ("a", base, 2.0), ("a", base + dt.timedelta(seconds=70), 4.0)],
                               "k string, ts timestamp, f double").withColumn("dec", F.col("f").cast("decimal(5,1)"))
    for column in ("f", "dec"):
        ours = window_aggregate(df, "k", "ts", {"s": (column, "sum")}, size="1 minute", slide="30 seconds")
        theirs = df.groupBy("k", F.window("ts", "1 minute", "30 seconds")).agg(F.sum(column).alias("s"))
        assert sorted(map(repr, ours.collect())) == sorted(map(repr, theirs.collect())), column


def test_a_small_variance_next_to_a_far_value_is_sparks_to_the_last_bits(spark) -> None:
    """Windows fold moments by Chan's merge: a shifted-sums slide gave 7.031251907 for Spark's
    7.03125 here (an outside tester's case: the block's mean sat near -169739.6)."""
    import datetime as dt

    from pyspark.sql import functions as F

    D = dt.datetime
    data = [("a", D(1970, 1, 2, 17, 19, 42, 250000), float("nan")), ("a", D(1970, 1, 3, 2, 38, 2, 250000),
                                                                      -169739.62797201448),
            ("a", D(1970, 1, 3, 4, 5, 8, 250000), -2.25), ("a", D(1970, 1, 4, 1, 55, 47, 1), 1.5)]
    df = spark.createDataFrame(data, "k string, ts timestamp, f double")
    ours = window_aggregate(df, "k", "ts", {"v": ("f", "var_samp")}, size="1 day", slide="6 hours",
                            start_time="3 hours", flat=True)
    theirs = df.groupBy("k", F.window("ts", "1 day", "6 hours", "3 hours")).agg(F.var_samp("f").alias("v"))
    mine = {r.window_start: r.v for r in ours.collect()}
    spark_rows = {r.window.start: r.v for r in theirs.collect()}
    assert mine.keys() == spark_rows.keys()
    for start, v in spark_rows.items():
        assert (v is None and mine[start] is None) or (v != v and mine[start] != mine[start]) \
            or math.isclose(mine[start], v, rel_tol=1e-12), (start, mine[start], v)
    assert 7.03125 in mine.values()


def test_aggregations_must_be_a_dict(spark, events) -> None:
    with pytest.raises(ValueError, match="aggregations: expected a dict"):
        window_aggregate(events, KEYS, "ts", [("v", "sum")], size="1 hour")
