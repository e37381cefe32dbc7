"""Session windows (``window_aggregate(..., session_gap=...)``) against Spark's own
``groupBy(keys, session_window(ts, gap)).agg(...)``, row for row and schema for schema,
in batch and in streaming (file source, micro-batches in arrival order, a watermark)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from mta.monoid import Collect
from spark_integration import window_aggregate
from test_spark import append_file

AGGS = {"s": ("v", "sum"), "n": ("v", "count"), "lo": ("v", "min"), "hi": ("v", "max"), "a": ("v", "avg"),
        "fs": ("x", "sum")}
SCHEMA = "k string, t long, v long, x double"


def events(n: int, keys: int, span: int, seed: int) -> list[tuple]:
    """Times in whole seconds over ``span``: many duplicates and many pairs exactly a
    10 s gap apart; a few lone events far away (single-event sessions)."""
    rng = random.Random(seed)
    rows = [(f"k{rng.randrange(keys)}", rng.randrange(span), rng.randrange(-50, 100), rng.uniform(-1, 1))
            for _ in range(n)]
    rows += [(f"k{i}", span + 1000 * (i + 1), i, 0.5) for i in range(keys)]
    return rows


def frame(spark, rows, kind: str = "timestamp"):
    from pyspark.sql import functions as F

    ts = F.timestamp_seconds("t")
    return spark.createDataFrame(rows, SCHEMA).withColumn("ts", ts.cast(kind) if kind != "timestamp" else ts).drop("t")


def native(df, gap, extra: dict | None = None):
    from pyspark.sql import functions as F

    aggs = [F.sum("v").alias("s"), F.count("v").alias("n"), F.min("v").alias("lo"), F.max("v").alias("hi"),
            F.avg("v").alias("a"), F.sum("x").alias("fs")]
    return df.groupBy("k", F.session_window("ts", gap)).agg(*aggs, *(extra or {}).values())


def rows_of(df, columns=tuple(AGGS)) -> list[tuple]:
    return sorted(tuple(r) for r in df.select("k", "session_window.start", "session_window.end", *columns).collect())


def assert_same(ours: list[tuple], theirs: list[tuple], exact: int = 7) -> None:
    """Row for row; the doubles after the first ``exact`` columns to 1e-9 (sums in another order)."""
    assert len(ours) == len(theirs) and ours
    for a, b in zip(ours, theirs):
        assert a[:exact] == b[:exact], (a, b)
        assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a[exact:], b[exact:])), (a, b)


def test_batch_sessions_equal_spark_session_window(spark) -> None:
    df = frame(spark, events(4000, keys=40, span=3000, seed=7))
    ours = window_aggregate(df, "k", "ts", AGGS, session_gap="10 seconds")
    theirs = native(df, "10 seconds")
    assert_same(rows_of(ours), rows_of(theirs))
    spans = [(r[2] - r[1]).total_seconds() for r in rows_of(theirs)]
    assert 10 in spans and any(s > 30 for s in spans)  # single-event sessions and long chains are both there
    # one shuffle, of the events by key: the slices are folded after it (sliced.plan)
    plan = ours._jdf.queryExecution().executedPlan().toString()
    assert plan.count("Exchange hashpartitioning") == 1 and "MapInArrow" in plan


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_the_schema_is_spark_session_window_schema(spark, kind) -> None:
    df = frame(spark, events(300, keys=5, span=500, seed=3), kind)
    ours = window_aggregate(df, "k", "ts", AGGS, session_gap="10 seconds").drop("late")
    theirs = native(df, "10 seconds")
    assert [(f.name, f.dataType) for f in ours.schema] == [(f.name, f.dataType) for f in theirs.schema]
    assert ours.schema["session_window"].dataType.simpleString() == f"struct<start:{kind},end:{kind}>"
    assert_same(rows_of(ours), rows_of(theirs))


def test_a_non_commutative_monoid_sees_a_session_in_time_order(spark) -> None:
    from pyspark.sql import functions as F

    rng = random.Random(11)
    rows = [(f"k{i % 6}", t, i, 0.0) for i, t in enumerate(rng.sample(range(2000), 600))]  # distinct times
    rng.shuffle(rows)
    df = frame(spark, rows).repartition(3)
    ours = window_aggregate(df, "k", "ts", {"items": ("v", Collect(), "array<bigint>")}, session_gap="7 seconds")
    theirs = df.groupBy("k", F.session_window("ts", "7 seconds")).agg(F.collect_list("v").alias("items"))
    assert rows_of(ours, ["items"]) == rows_of(theirs, ["items"])


def test_a_dynamic_gap_gives_spark_sessions_and_drops_the_rows_spark_drops(spark) -> None:
    from pyspark.sql import functions as F

    df = frame(spark, events(2000, keys=20, span=2000, seed=5))
    gap = (F.when(F.col("v") > 80, "30 seconds").when(F.col("v") > -45, "5 seconds")
           .when(F.col("v") > -48, "0 seconds").otherwise(F.lit(None)))  # zero and null gaps: no session
    ours = window_aggregate(df, "k", "ts", AGGS, session_gap=gap)
    assert_same(rows_of(ours), rows_of(native(df, gap)))


@pytest.mark.parametrize("extra, match", [
    ({"size": "10 seconds"}, "session_gap: session windows take no size"),
    ({"slide": "10 seconds"}, "session_gap: session windows take no slide"),
    ({"policy": lambda total, old: False}, "session_gap: session windows take no policy"),
    ({"emit": "event"}, "session_gap: session windows take no emit"),
    ({"session_gap": "0 seconds"}, "session_gap must be a positive duration"),
    ({"session_gap": -5}, "session_gap must be a positive duration"),
    ({"session_gap": "-5 seconds"}, "session_gap must be a positive duration"),
])
def test_a_bad_session_call_fails_at_call_time_naming_the_argument(spark, extra, match) -> None:
    df = frame(spark, events(10, keys=2, span=100, seed=1))
    with pytest.raises(ValueError, match=match):
        window_aggregate(df, "k", "ts", AGGS, **{"session_gap": "10 seconds", **extra})


def write_file(spark, directory: Path, rows: list[tuple]) -> None:
    append_file(frame(spark, rows), directory)


def stream(spark, directory: Path):
    return spark.readStream.schema("k string, ts timestamp, v long, x double").option(
        "maxFilesPerTrigger", 1).json(str(directory))


def run(query_df, name: str, checkpoint: Path):
    query = (query_df.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return query


def arrivals(seed: int) -> list[list[tuple]]:
    """Micro-batches in arrival order (gap 10 s, watermark delay 5 s: the watermark is 47,
    95, 108, 108 s in batches 1 to 4). Hand-made traps: key ``t`` gets an out-of-order
    event (13) that bridges two open sessions, events older than the watermark whose
    ``time + gap`` is past the previous batch's (86, 92: kept) or not (84, 85, 45:
    dropped); key ``u`` an event (100) inside a session already reported, which opens a
    session of its own. Around them, random out-of-order events of many keys that do not
    move the watermark, then random batches that do."""
    traps = [[("t", 0, 1, 0.1), ("t", 3, 2, 0.2), ("t", 20, 3, 0.3), ("t", 52, 4, 0.4)],
             [("t", 100, 5, 0.5), ("t", 13, 6, 0.6), ("u", 97, 1, 0.0)],
             [("t", 101, 7, 0.7), ("t", 113, 8, 0.8)],
             [("t", 84, 9, 0.9), ("t", 85, 10, 1.0), ("t", 86, 11, 1.1), ("t", 45, 12, 1.2), ("t", 92, 13, 1.3)],
             [("u", 100, 2, 0.0)]]
    rng = random.Random(seed)

    def noise(newest: int) -> list[tuple]:
        return [(f"k{rng.randrange(12)}", newest - rng.randrange(0, 40), rng.randrange(-50, 100), rng.uniform(-1, 1))
                for _ in range(rng.randrange(20, 60))]

    batches, newest = [], 0
    for trap in traps:
        newest = max(newest, *(t for _, t, _, _ in trap))
        batches.append(trap + noise(newest))
    for _ in range(4):
        newest += rng.randrange(20, 60)
        batches.append(noise(newest) + [("k0", newest, 0, 0.0)])
    return batches


def test_streaming_sessions_equal_spark_streaming_session_window(spark, tmp_path) -> None:
    for batch in arrivals(seed=3):
        write_file(spark, tmp_path / "in", batch)
    ours = run(window_aggregate(stream(spark, tmp_path / "in"), "k", "ts", AGGS, session_gap="10 seconds",
                                watermark="5 seconds"), "sessions_ours", tmp_path / "ck1")
    theirs = run(native(stream(spark, tmp_path / "in").withWatermark("ts", "5 seconds"), "10 seconds"),
                 "sessions_native", tmp_path / "ck2")
    mine, spark_rows = rows_of(spark.table("sessions_ours")), rows_of(spark.table("sessions_native"))
    assert_same(mine, spark_rows)
    trap = [(r[1].timestamp(), r[2].timestamp(), r[3]) for r in spark_rows if r[0] == "t"]
    assert trap == [(0, 30, 1 + 2 + 6 + 3), (52, 62, 4), (86, 111, 11 + 13 + 5 + 7), (113, 123, 8)]
    assert [(r[1].timestamp(), r[2].timestamp(), r[3]) for r in spark_rows if r[0] == "u"] == [(97, 107, 1),
                                                                                                (100, 110, 2)]
    dropped = sum(o["numRowsDroppedByWatermark"] for p in ours.recentProgress for o in p["stateOperators"])
    assert dropped == sum(o["numRowsDroppedByWatermark"] for p in theirs.recentProgress for o in p["stateOperators"])
    assert dropped >= 3


def test_a_dynamic_gap_or_a_lateness_on_a_stream_fails_at_call_time(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    write_file(spark, tmp_path / "in", [("a", 1, 1, 0.0)])
    df = stream(spark, tmp_path / "in")
    with pytest.raises(ValueError, match="session_gap: a Column"):
        window_aggregate(df, "k", "ts", AGGS, session_gap=F.lit("5 seconds"))
    with pytest.raises(ValueError, match="allowed_lateness"):
        window_aggregate(df, "k", "ts", AGGS, session_gap="5 seconds", allowed_lateness="10 seconds")
    with pytest.raises(ValueError, match="late_events"):
        window_aggregate(df, "k", "ts", AGGS, session_gap="5 seconds", late_events=True)


def test_a_gap_in_days_adds_calendar_days_in_the_session_time_zone_as_spark_does(spark) -> None:
    from pyspark.sql import functions as F

    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        hours = [0, 20, 44, 47, 70, 95, 96, 130]  # from 2026-03-07 00:00 local, across the spring-forward night
        rows = [("a", h, i, 0.0) for i, h in enumerate(hours)]
        df = spark.createDataFrame(rows, SCHEMA).select(
            "k", (F.to_timestamp(F.lit("2026-03-07 00:00:00")) + F.make_dt_interval(hours=F.col("t"))).alias("ts"),
            "v", "x")
        ours = window_aggregate(df, "k", "ts", AGGS, session_gap="1 day")
        theirs = native(df, "1 day")
        assert_same(rows_of(ours), rows_of(theirs))
        assert rows_of(theirs) != rows_of(native(df, "24 hours"))  # a 23-hour day is in there
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
