"""Late data in streaming, against Spark's own streaming ``groupBy(k, window(...))``: streams
of micro-batches (one file each, arrival order unlike event order) with events between the
previous and the current watermark, behind both, exactly at them, keys that sit batches out
and keys that first come late. The rule they check is in :mod:`spark_integration.streaming`."""

from __future__ import annotations

import random
import uuid

import kvs
from spark_integration import window_aggregate
from test_spark import AGGS, assert_same, native, run, stream, write_file

DELAY = 30  # seconds: withWatermark(ts, "30 seconds")


def late_stream(seed: int, size: int, batches: int = 5, per_batch: int = 30) -> list[list[tuple]]:
    """Micro-batches of (key, seconds, v, x): each moves the newest event time on and mixes
    in events behind the watermarks it knows (``W[n]`` as Spark computes it), at them and
    one second before them, and at the end of a window that ends at the previous one."""
    rng = random.Random(seed)
    out, newest, previous, newest_before = [], 1000, 0, None
    for n in range(batches):
        current = max(previous, newest_before - DELAY) if newest_before is not None else 0  # W[n]
        keys = rng.sample(["k0", "k1", "k2", "k3"], 3) + (["new"] if n == batches - 2 else [])  # some sit out
        newest += rng.randrange(15, 60)
        times = []
        for _ in range(per_batch):
            kind = rng.random()
            if kind < 0.5 or current == 0:
                times.append(newest - rng.randrange(0, 25))  # about on time
            elif kind < 0.75:
                times.append(rng.randint(previous, current))  # between the watermarks
            else:
                times.append(previous - rng.randrange(1, 2 * size))  # behind both
        if current:  # the edges: at each watermark, just before it, the window that ends at W[n-1]
            window_end = previous - previous % size
            times += [previous, previous - 1, current, current - 1, window_end - 1, window_end]
        rows = [(rng.choice(keys), t, rng.randrange(-50, 100), rng.uniform(-1, 1)) for t in times]
        rng.shuffle(rows)
        out.append(rows)
        newest_before = max(t for _, t, _, _ in rows) if newest_before is None else \
            max(newest_before, *(t for _, t, _, _ in rows))
        previous = current
    return out


def rows_of(df) -> list[tuple]:
    """The rows as (key, start, end, aggregations...), whether the window is a struct or flat."""
    if "window" in df.columns:
        df = df.selectExpr("k", "window.start as window_start", "window.end as window_end", *AGGS)
    return sorted(tuple(r) for r in df.select("k", "window_start", "window_end", *AGGS).collect())


def compare(spark, tmp_path, batches, size: str, slide: str, **options) -> None:
    for rows in batches:
        write_file(spark, tmp_path / "in", rows)
    name = f"late_{uuid.uuid4().hex[:8]}"
    run(window_aggregate(stream(spark, tmp_path / "in"), "k", "ts", AGGS, size=size, slide=slide,
                         watermark=f"{DELAY} seconds", **options), name, tmp_path / "ck_ours")
    run(native(stream(spark, tmp_path / "in").withWatermark("ts", f"{DELAY} seconds"), size, slide),
        name + "_native", tmp_path / "ck_native")
    ours, theirs = rows_of(spark.table(name)), rows_of(spark.table(name + "_native"))
    assert_same(ours, theirs)
    assert len(ours) > 30


def test_tumbling_windows_take_late_events_as_spark_does(spark, tmp_path) -> None:
    compare(spark, tmp_path, late_stream(1, size=20), "20 seconds", "20 seconds")


def test_sliding_windows_take_late_events_as_spark_does(spark, tmp_path) -> None:
    """A late event misses the windows the previous watermark closed and counts in the
    others, also in windows whose newer events were already aggregated (stragglers)."""
    compare(spark, tmp_path, late_stream(2, size=30), "30 seconds", "10 seconds")


def test_windows_in_redis_take_late_events_as_spark_does(spark, tmp_path, redis_url) -> None:
    name = f"late_{uuid.uuid4().hex[:8]}"
    compare(spark, tmp_path, late_stream(3, size=20), "20 seconds", "10 seconds", store=redis_url, name=name)
    assert [w for w in kvs.connect(redis_url).windows() if w.startswith(f"{name}:")]
