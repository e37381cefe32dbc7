"""Regressions found from outside (issue #19): wall clocks that the session time zone skips
or repeats, and the per-key path's keys and ties. Spark's own queries are the oracle.

- A TIMESTAMP_NTZ in a daylight-saving gap (or overlap) of the session zone landed an hour
  off: its microseconds went through ``timestamp_diff``, which reads the session zone.
- The per-key path (aggregations off the fast path, here a decimal sum) took ties of event
  time in the order rows reached the group after the shuffle, not the input's row order;
  and it read keys back from pandas, where a null and NaN are one float and -0.0 stays
  itself (Spark groups -0.0 with 0.0)."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from spark_integration import window_aggregate
from test_spark_dropin import time_zone

#: Wall clocks around New York's 2024 changes: 02:00-03:00 on 10 March does not exist, 01:00-02:00
#: on 3 November happens twice; Kolkata has none, so the same rows there check the rest.
CLOCKS = [dt.datetime(2024, 3, 10, 1, 59, 59, 999999), dt.datetime(2024, 3, 10, 2, 0),
          dt.datetime(2024, 3, 10, 2, 30, 0, 123456), dt.datetime(2024, 3, 10, 3, 0),
          dt.datetime(2024, 11, 3, 0, 59), dt.datetime(2024, 11, 3, 1, 30), dt.datetime(2024, 11, 3, 2, 0, 0, 1),
          dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(1, 1, 2, 0, 0, 0, 1),
          dt.datetime(9999, 12, 30, 23, 59, 59, 999999)]


def _windows(df, window) -> list[tuple]:
    return sorted((r.k, r.w.start, r.w.end, r.n, r.s) for r in df.select(
        "k", window.alias("w"), "n", "s").collect())


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
@pytest.mark.parametrize("how", ["fast", "per key"])
def test_wall_clocks_the_session_zone_skips_or_repeats_fall_in_sparks_windows(spark, zone, how):
    from pyspark.sql import functions as F

    rows = [(i % 2, c, i, decimal.Decimal(i)) for i, c in enumerate(CLOCKS)]
    with time_zone(spark, zone):
        df = spark.createDataFrame(rows, "k int, tn timestamp_ntz, v long, d decimal(10,0)").cache()
        total = ("v", "sum") if how == "fast" else ("d", "sum")
        for size, slide in (("1 hour", "1 hour"), ("2 hours", "1 hour"), ("1 day", "6 hours")):
            ours = window_aggregate(df, "k", "tn", {"n": ("v", "count"), "s": total}, size=size, slide=slide)
            theirs = df.groupBy("k", F.window("tn", size, slide).alias("window")).agg(
                F.count("v").alias("n"), F.sum(total[0]).alias("s"))
            assert _windows(ours, F.col("window")) == _windows(theirs, F.col("window")), (size, slide)
        ours = window_aggregate(df, "k", "tn", {"n": ("v", "count"), "s": total}, session_gap="40 minutes")
        theirs = df.groupBy("k", F.session_window("tn", "40 minutes")).agg(F.count("v").alias("n"),
                                                                        F.sum(total[0]).alias("s"))
        assert _windows(ours, F.col("session_window")) == _windows(theirs, F.col("session_window"))


def test_the_per_key_path_breaks_time_ties_in_the_inputs_row_order(spark):
    """200 events at one time over 4 input partitions, a double key with nulls."""
    from pyspark.sql import functions as F

    t0 = dt.datetime(2024, 1, 1)
    rows = [(1.0 if i % 2 else None, t0, i, decimal.Decimal(i)) for i in range(200)]
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        df = (spark.sparkContext.parallelize(rows, 4).toDF("k double, ts timestamp, v long, d decimal(10,0)")
              .withColumn("seq", F.monotonically_increasing_id()).cache())
        order = F.struct("ts", "seq")
        theirs = df.groupBy("k", F.window("ts", "10 seconds")).agg(
            F.min_by("v", order).alias("f"), F.max_by("v", order).alias("l"), F.sum("d").alias("s"))
        ours = window_aggregate(df.drop("seq"), "k", "ts", {"f": ("v", "first"), "l": ("v", "last"),
                                                             "s": ("d", "sum")}, size="10 seconds")
        got = sorted((r.k is None, r.f, r.l, r.s) for r in ours.collect())
        assert got == sorted((r.k is None, r.f, r.l, r.s) for r in theirs.collect())
        assert got == [(False, 1, 199, 10000), (True, 0, 198, 9900)]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "4")


@pytest.mark.parametrize("sessions", [False, True])
def test_the_per_key_path_keeps_nan_null_and_zero_keys_as_spark_groups_them(spark, sessions):
    """NaN and null are two keys; -0.0 and 0.0 are one, 0.0 (Spark normalizes them)."""
    from pyspark.sql import functions as F

    t0 = dt.datetime(2024, 1, 1)
    rows = [(float("nan"), t0, decimal.Decimal(1)), (None, t0, decimal.Decimal(2)), (-0.0, t0, decimal.Decimal(4)),
            (0.0, t0, decimal.Decimal(8)), (float("nan"), t0, decimal.Decimal(16))]
    df = spark.createDataFrame(rows, "k double, ts timestamp, d decimal(10,0)").repartition(1).cache()
    window = dict(session_gap="1 day") if sessions else dict(size="10 seconds")
    ours = window_aggregate(df, "k", "ts", {"s": ("d", "sum")}, **window)
    theirs = df.groupBy("k", (F.session_window if sessions else F.window)("ts", "1 day" if sessions else "10 seconds")
                        ).agg(F.sum("d").alias("s"))

    def keyed(out):  # repr tells -0.0 from 0.0 and NaN from null
        return sorted((repr(r.k), int(r.s)) for r in out.collect())

    assert keyed(ours) == keyed(theirs) == [("0.0", 12), ("None", 2), ("nan", 17)]


def test_the_per_key_path_keeps_each_key_columns_type_and_nullability(spark):
    """Keys travel as one string; they come back with their own types, and a key column
    that cannot be null stays so in the schema, as in Spark's groupBy."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("l", T.LongType(), False), T.StructField("x", T.DoubleType(), False),
                           T.StructField("n", T.TimestampNTZType(), False), T.StructField("b", T.BinaryType(), False),
                           T.StructField("s", T.StringType(), False), T.StructField("o", T.LongType(), True),
                           T.StructField("ts", T.TimestampType(), False), T.StructField("d", T.DecimalType(10, 0))])
    t0 = dt.datetime(2024, 1, 1)
    rows = [(2**62 + i % 2, -0.0 if i % 3 else 0.0, t0, b"\x00", "", None if i % 2 else 7, t0,
             decimal.Decimal(i)) for i in range(6)]
    df = spark.createDataFrame(rows, schema)
    keys = ["l", "x", "n", "b", "s", "o"]
    ours = window_aggregate(df, keys, "ts", {"d": ("d", "sum")}, size="10 seconds")
    theirs = df.groupBy(*keys, F.window("ts", "10 seconds")).agg(F.sum("d").alias("d"))
    assert [ours.schema[k] for k in keys] == [theirs.schema[k] for k in keys]
    assert sorted(map(repr, ours.select(*keys, "d").collect())) == \
        sorted(map(repr, theirs.select(*keys, "d").collect()))


def test_a_string_key_column_can_also_be_an_aggregations_input(spark):
    df = spark.createDataFrame([("a", dt.datetime(2021, 1, 1, 0, 0, 1)), ("a", dt.datetime(2021, 1, 1, 0, 0, 2))],
                               "s string, t timestamp")
    rows = window_aggregate(df, ["s"], "t", {"c": ("s", "collect_list"), "n": ("s", "count")},
                            size="10 seconds").collect()
    assert [(r.s, r.c, r.n) for r in rows] == [("a", ["a", "a"], 2)]
