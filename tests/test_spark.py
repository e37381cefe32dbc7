"""The operator on a real local Spark session: batch and streaming against Spark's own
window(), a custom monoid and policy against the naive oracle, late events, restarts."""

from __future__ import annotations

import math
import os
import random
import time
import uuid
from pathlib import Path

import pytest

import kvs
from mta.monoid import Collect, Monoid
from spark_integration import window_aggregate

AGGS = {"s": ("v", "sum"), "n": ("v", "count"), "lo": ("v", "min"), "hi": ("v", "max"), "a": ("v", "avg"),
        "fs": ("x", "sum"), "fa": ("x", "avg")}


def events(n: int, keys: int = 4, span: int = 900, seed: int = 1) -> list[tuple]:
    rng = random.Random(seed)
    return [(f"k{rng.randrange(keys)}", rng.randrange(span), rng.randrange(-50, 100), rng.uniform(-1, 1))
            for _ in range(n)]


def frame(spark, rows):
    from pyspark.sql import functions as F

    return spark.createDataFrame(rows, "k string, t long, v long, x double").withColumn(
        "ts", F.timestamp_seconds("t")).drop("t")


def native(df, size: str, slide: str):
    from pyspark.sql import functions as F

    return df.groupBy("k", F.window("ts", size, slide)).agg(
        F.sum("v").alias("s"), F.count("v").alias("n"), F.min("v").alias("lo"), F.max("v").alias("hi"),
        F.avg("v").alias("a"), F.sum("x").alias("fs"), F.avg("x").alias("fa"))


def rows_of(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.select("k", "window.start", "window.end", *AGGS).collect())


def assert_same(ours: list[tuple], theirs: list[tuple]) -> None:
    """Row for row; doubles to 1e-9 (sums in a different order)."""
    assert len(ours) == len(theirs) and ours
    for a, b in zip(ours, theirs):
        assert a[:7] == b[:7], (a, b)
        assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a[7:], b[7:])), (a, b)


@pytest.mark.parametrize("size, slide", [("60 seconds", "60 seconds"), ("60 seconds", "10 seconds"),
                                         ("45 seconds", "20 seconds")])
def test_batch_windows_equal_spark_window(spark, size, slide) -> None:
    df = frame(spark, events(3000))
    ours = window_aggregate(df, "k", "ts", AGGS, size=size, slide=slide)
    assert_same(rows_of(ours), rows_of(native(df, size, slide)))


def test_batch_windows_with_their_levels_in_redis_equal_spark_window(spark, redis_url) -> None:
    df = frame(spark, events(2000))
    name = f"batch_{uuid.uuid4().hex[:8]}"
    ours = window_aggregate(df, "k", "ts", AGGS, size="60 seconds", slide="10 seconds", store=redis_url, name=name)
    assert_same(rows_of(ours), rows_of(native(df, "60 seconds", "10 seconds")))
    assert not [w for w in kvs.connect(redis_url).windows() if w.startswith(name)]  # scratch windows dropped
    with pytest.raises(ValueError, match="store and name go together"):
        window_aggregate(df, "k", "ts", AGGS, size="60 seconds", store=redis_url)


def write_file(spark, directory: Path, rows: list[tuple]) -> None:
    append_file(frame(spark, rows), directory)


def append_file(df, directory: Path) -> None:
    """``df`` as one JSON file, newer than every file already there: the file source reads
    in modification order (one file per micro-batch with maxFilesPerTrigger=1)."""
    before = set(directory.glob("*.json")) if directory.exists() else set()
    df.coalesce(1).write.mode("append").json(str(directory))
    stamp = max((f.stat().st_mtime for f in before), default=time.time() - 10_000) + 1
    for new in set(directory.glob("*.json")) - before:
        os.utime(new, (stamp, stamp))


def write_files(spark, directory: Path, rows: list[tuple], pieces: int) -> None:
    """``pieces`` files in time order."""
    ordered = sorted(rows, key=lambda r: r[1])
    step = -(-len(ordered) // pieces)
    for i in range(pieces):
        write_file(spark, directory, ordered[i * step:(i + 1) * step])


def stream(spark, directory: Path):
    return spark.readStream.schema("k string, ts timestamp, v long, x double").option(
        "maxFilesPerTrigger", 1).json(str(directory))


def run(query_df, name: str, checkpoint: Path) -> None:
    query = (query_df.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None


@pytest.mark.parametrize("size, slide", [("60 seconds", "60 seconds"), ("60 seconds", "10 seconds")])
def test_streaming_windows_equal_spark_streaming_windows(spark, tmp_path, size, slide) -> None:
    write_files(spark, tmp_path / "in", events(2000), pieces=4)
    name = f"ours_{size[:2]}_{slide[:2]}"
    run(window_aggregate(stream(spark, tmp_path / "in"), "k", "ts", AGGS, size=size, slide=slide,
                         watermark="30 seconds"), name, tmp_path / "ck1")
    run(native(stream(spark, tmp_path / "in").withWatermark("ts", "30 seconds"), size, slide),
        name + "_native", tmp_path / "ck2")
    assert_same(rows_of(spark.table(name)), rows_of(spark.table(name + "_native")))


class Concat(Monoid):
    """A non-commutative user monoid: the values in time order, as a string."""

    identity = ""

    @staticmethod
    def combine(a: str, b: str) -> str:
        return a + b

    def lift(self, value: int) -> str:
        return f"{value}."


def test_a_user_monoid_and_a_user_policy_give_the_oracles_results(spark) -> None:
    import sys

    from pyspark import cloudpickle

    from spark_integration.aggregations import parse
    # Spark's workers import functions by module; a job's own module goes by value (or with --py-files)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    from mta.watermarked import KeyWindow, Windowing

    rows = events(800, keys=3, span=300)
    df = frame(spark, rows)

    def policy(total, old):  # paper Table 2: the last 60 s, less what can never again be the max
        return total.last - old.last >= 60_000_000 or old.value.peak < total.value.peak

    aggs = {"seq": ("v", Concat(), "string"), "items": ("v", Collect(), "array<bigint>")}
    ours = window_aggregate(df, "k", "ts", aggs, size="30 seconds", slide="10 seconds").collect()
    by_key = {}
    for k, t, v, _ in sorted(rows, key=lambda r: r[1]):
        by_key.setdefault(k, []).append((t * 1_000_000, v))
    parsed = parse(aggs, {"v": "bigint"})
    for k, evs in by_key.items():
        oracle = KeyWindow(parsed.monoid, Windowing(size=30_000_000, slide=10_000_000))
        oracle.add([t for t, _ in evs], parsed.monoid.lift_many([{"seq": v, "items": v} for _, v in evs]))
        expected = [(s, e, r["seq"], r["items"]) for s, e, r in
                    ((s, e, parsed.monoid.lower(p)) for s, e, p in oracle.advance(math.inf))]
        got = sorted((int(r.window.start.timestamp() * 1e6), int(r.window.end.timestamp() * 1e6), r.seq,
                      list(r["items"])) for r in ours if r.k == k)
        assert got == expected and all(seq.count(".") == len(items) for _, _, seq, items in got)
    max_aggs = {"peak": ("v", "max")}
    reported = window_aggregate(df, "k", "ts", max_aggs, policy=policy, slide="20 seconds").collect()
    parsed = parse(max_aggs, {"v": "bigint"})
    for k, evs in by_key.items():
        oracle = KeyWindow(parsed.monoid, Windowing(slide=20_000_000, policy=policy))
        oracle.add([t for t, _ in evs], parsed.monoid.lift_many([{"peak": v} for _, v in evs]))
        expected = [(e, parsed.monoid.lower(p)["peak"]) for _, e, p in oracle.advance(math.inf)]
        got = sorted((int(r.window.end.timestamp() * 1e6), r.peak) for r in reported if r.k == k)
        assert got == expected
        for end, peak in got:  # and each peak is the max of the 60 s before the newest event
            newest = max(t for t, _ in evs if t < end)
            assert peak == max(v for t, v in evs if newest - 60_000_000 < t <= newest)


def test_late_events_are_counted_and_dropped_or_counted_in_within_the_lateness(spark, tmp_path) -> None:
    on_time = [("a", t, 1, 0.0) for t in range(0, 200, 2)]
    write_files(spark, tmp_path / "in", on_time, pieces=2)
    write_file(spark, tmp_path / "in", [("a", 201, 1, 0.0)])  # its batch has watermark 168 s (198 - 30)
    # then events whose windows that watermark closed (late, also with 10 s of allowed
    # lateness), and one whose window [140, 160) it closed only without the lateness
    late = [("a", 99, 1000, 0.5), ("a", 101, 1000, 0.25), ("a", 156, 7, 0.0)]
    write_file(spark, tmp_path / "in", late + [("a", 260, 1, 0.0)])  # moves the watermark to 230 s
    aggs = {"s": ("v", "sum"), "n": ("v", "count"), "fs": ("x", "sum")}
    run(window_aggregate(stream(spark, tmp_path / "in"), "k", "ts", aggs, size="20 seconds",
                         watermark="30 seconds", allowed_lateness="10 seconds", late_count=True, late_events=True),
        "late_q", tmp_path / "ck")
    rows = spark.sql("select window.start as window_start, s, n, late from late_q where late_event is null "
                     "order by window_start").collect()
    by_start = {int(r.window_start.timestamp()): (r.s, r.n) for r in rows}
    assert max(r.late for r in rows) == 2  # the two events 100 s behind
    assert by_start[80] == (10, 10) and by_start[100] == (10, 10)  # they are not in
    assert by_start[140] == (17, 11)  # the one within the lateness is
    side = spark.sql("select * from late_q where late_event is not null").collect()
    assert sorted((int(r.late_event.ts.timestamp()), r.late_event.v, r.late_event.x) for r in side) == [
        (99, 1000, 0.5), (101, 1000, 0.25)]  # the side output: the dropped events whole
    assert all(r.window is None and r.s is None and r.late == 2 for r in side)


class Tripwire(Monoid):
    """A sum whose ``lower`` fails once while ``path`` exists (and removes it): a task that
    dies after its window work is done, before Spark commits the micro-batch."""

    identity = 0

    def __init__(self, path: str) -> None:
        self.path = path

    @staticmethod
    def combine(a: int, b: int) -> int:
        return a + b

    def lower(self, partial: int) -> int:
        if os.path.exists(self.path):
            os.remove(self.path)
            raise RuntimeError("tripwire: the task dies here")
        return partial


@pytest.mark.parametrize("where", ["spark", "redis"])
def test_a_restart_from_the_checkpoint_gives_the_uninterrupted_results(spark, tmp_path, where, request) -> None:
    """Runs on one checkpoint, one of them dying in the middle of a micro-batch, give the
    rows of one uninterrupted run. With the window levels in Redis, the keys that the
    dead batch had already stored are not counted twice when Spark replays it."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rows = events(1500, keys=3, span=600, seed=7)
    ordered = sorted(rows, key=lambda r: r[1])
    tripwire = tmp_path / "tripwire"
    aggs = {"s": ("v", "sum"), "n": ("v", "count"), "hi": ("v", "max"), "t": ("v", Tripwire(str(tripwire)), "bigint")}
    url = request.getfixturevalue("redis_url") if where == "redis" else None
    prefix = uuid.uuid4().hex[:8]

    def to_parquet(directory, out, checkpoint):  # a sink that can restart (the memory sink cannot)
        store = {"store": url, "name": f"{prefix}_{checkpoint.name}"} if url else {}
        q = (window_aggregate(stream(spark, directory), "k", "ts", aggs, size="60 seconds", slide="20 seconds",
                              watermark="15 seconds", late_count=True, **store)
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        try:
            q.awaitTermination()
        except Exception as error:
            return error
        return q.exception()

    def collect(out):
        return sorted(tuple(r) for r in spark.read.parquet(str(out)).select(
            "k", "window.start", "s", "n", "hi", "t", "late").collect())

    write_files(spark, tmp_path / "all", ordered, pieces=6)
    assert to_parquet(tmp_path / "all", tmp_path / "out_whole", tmp_path / "ck_whole") is None
    whole = collect(tmp_path / "out_whole")
    write_files(spark, tmp_path / "parts", ordered[:500], pieces=2)
    assert to_parquet(tmp_path / "parts", tmp_path / "out_parts", tmp_path / "ck_parts") is None
    first = collect(tmp_path / "out_parts")
    assert first and len(first) < len(whole)
    write_files(spark, tmp_path / "parts", ordered[500:1000], pieces=2)
    tripwire.touch()
    assert "tripwire" in str(to_parquet(tmp_path / "parts", tmp_path / "out_parts", tmp_path / "ck_parts"))
    assert to_parquet(tmp_path / "parts", tmp_path / "out_parts", tmp_path / "ck_parts") is None  # replays it
    write_files(spark, tmp_path / "parts", ordered[1000:], pieces=2)
    assert to_parquet(tmp_path / "parts", tmp_path / "out_parts", tmp_path / "ck_parts") is None
    assert collect(tmp_path / "out_parts") == whole
    if url:  # the levels were in Redis: one window per key and query
        stored = [w for w in kvs.connect(url).windows() if w.startswith(f"{prefix}_ck_parts:")]
        assert len(stored) == 3


def test_the_example_pipeline_writes_the_windows_spark_would(spark, tmp_path, capsys) -> None:
    from pyspark.sql import functions as F

    from spark_integration.jobs import telemetry_pipeline as job

    assert job.main(["--hosts", "3", "--hours", "0.1", "--output", str(tmp_path)]) == 0
    assert "events ->" in capsys.readouterr().out
    windows = spark.read.parquet(str(tmp_path / "windows"))
    readings = spark.createDataFrame(__import__("spark_integration.jobs.telemetry_data", fromlist=["generate"])
                                     .generate(3, 0.1, 1, 0.01)).drop("arrival")
    expected = readings.groupBy("host", "metric", F.window("ts", "5 minutes", "10 seconds")).agg(
        F.avg("value").alias("mean"), F.max("value").alias("max"), F.stddev("value").alias("stddev"))
    ours = {(r.host, r.metric, r.window.start): (r.max, r.mean, r.stddev) for r in windows.collect()}
    theirs = {(r.host, r.metric, r.window.start): (r.max, r.mean, r.stddev) for r in expected.collect()}
    assert ours.keys() == theirs.keys() and len(ours) > 100
    for key, (peak, mean, spread) in ours.items():
        their_peak, their_mean, their_spread = theirs[key]
        assert peak == their_peak and math.isclose(mean, their_mean, rel_tol=1e-9), key
        assert (spread is None) == (their_spread is None), key  # null below two readings
        assert spread is None or math.isclose(spread, their_spread, rel_tol=1e-6, abs_tol=1e-9), key
    peaks = spark.read.parquet(str(tmp_path / "peaks")).collect()
    assert peaks and {r.metric for r in peaks} == {"memory"}


def test_the_streaming_pipeline_with_levels_in_redis_gives_the_batch_rows(spark, tmp_path, redis_url,
                                                                          capsys) -> None:
    """``mta pipeline --stream --store``: every window the watermark closed, as the batch
    run computes it (no late events, so none is dropped), run twice (a fresh stream
    clears the stored windows of the one before)."""
    from spark_integration.jobs import telemetry_pipeline as job

    common = ["--hosts", "2", "--hours", "0.1", "--late-fraction", "0"]
    assert job.main([*common, "--output", str(tmp_path / "batch")]) == 0
    for _ in range(2):
        assert job.main([*common, "--stream", "--files", "3", "--store", redis_url,
                         "--output", str(tmp_path / "stream")]) == 0
    assert "events ->" in capsys.readouterr().out

    def rows(run, name):
        return {(r.host, r.metric, r.window.end): tuple(r) for r in spark.read.parquet(str(tmp_path / run / name))
                .drop("late").collect()}

    for name in ("windows", "peaks"):
        batch, stream = rows("batch", name), rows("stream", name)
        assert stream and len(stream) < len(batch)  # the last windows wait for a later watermark
        for key, row in stream.items():
            assert row[:3] == batch[key][:3] and all(
                (a is None and b is None) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
                for a, b in zip(row[3:], batch[key][3:])), key
    assert [w for w in kvs.connect(redis_url).windows() if w.startswith(job.STORED["windows"] + ":")]


def test_reactive_rows_give_the_window_right_after_each_event(spark) -> None:
    rng = random.Random(3)
    times = rng.sample(range(2000), 600)  # distinct times: the order within a key is the time order
    rows = [(f"k{i % 3}", t, rng.randrange(100), 0.0) for i, t in enumerate(times)]
    df = frame(spark, rows)
    out = window_aggregate(df, "k", "ts", {"s": ("v", "sum"), "n": ("v", "count")}, size="30 seconds",
                           emit="event").collect()
    got = sorted((r.k, int(r.event_time.timestamp()), r.s, r.n) for r in out)
    expected = []
    for k, t, _, _ in rows:  # TimeRange(30 s): the events of (t - 30 s, t] of that key
        inside = [v for k2, t2, v, _ in rows if k2 == k and t - 30 < t2 <= t]
        expected.append((k, t, sum(inside), len(inside)))
    assert got == sorted(expected)
