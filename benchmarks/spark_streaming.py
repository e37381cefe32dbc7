"""The MTA Spark operator as a streaming query (issue #5), with its state in Spark and
with its window levels in Redis, against Spark's own streaming window(), in one session.

Events of 100 keys at 10 per second per key, in event-time order (shuffled within a
few seconds), written as Parquet files that a file source reads one per micro-batch
(``trigger(availableNow=True)``, 10 s watermark): 60 s windows sliding by 1 s
computing sum, count, min, max and avg, appended to a Parquet sink. Each query is
timed from start to end; then each result is compared with Spark's row for row.

    python -m benchmarks.spark_streaming            # ~4 min
    python -m benchmarks.spark_streaming --quick    # smoke run
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.spark_windows import AGGS, native, same


def write_pieces(spark: Any, events: int, keys: int, rate: float, pieces: int, directory: Path) -> None:
    """``pieces`` Parquet files, each a run of event time, modified in that order."""
    from pyspark.sql import functions as F

    span = events / keys / rate  # seconds
    df = spark.range(events).select(
        F.concat(F.lit("k"), (F.col("id") % keys).cast("string")).alias("k"),
        (F.col("id") / events * span + F.rand(3) * 3).alias("t"),  # in order, but for up to 3 s
        (F.rand(2) * 1000).cast("long").alias("v"))
    df = df.select("k", F.timestamp_seconds(F.col("t").cast("long")).alias("ts"), "v",
                   (F.col("t") / span * pieces).cast("int").alias("piece")).cache()
    for piece in range(pieces + 1):
        out = directory / f"piece-{piece:04d}"
        df.where(F.col("piece") == piece).drop("piece").coalesce(1).write.parquet(str(out))
        stamp = time.time() - 10_000 + piece
        for f in out.glob("*.parquet"):
            os.utime(f, (stamp, stamp))
    df.unpersist()


def run_query(result: Any, out: Path, checkpoint: Path) -> tuple[float, list[float]]:
    """Seconds from start to end, and each micro-batch's seconds."""
    started = time.perf_counter()
    query = (result.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return time.perf_counter() - started, [b.durationMs["triggerExecution"] / 1000 for b in query.recentProgress]


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--events", type=int, default=None, help="events (full: 2,000,000, quick: 20,000)")
    p.add_argument("--pieces", type=int, default=None, help="files = micro-batches (full: 10, quick: 4)")
    args = p.parse_args(argv)
    events = args.events or (20_000 if args.quick else 2_000_000)
    pieces = args.pieces or (4 if args.quick else 10)
    keys, rate = (10, 10.0) if args.quick else (100, 10.0)
    run_ = common.Run("spark_streaming", args, {"events": events, "keys": keys, "rate": rate, "pieces": pieces,
                                                "size": "60 seconds", "slide": "1 second", "watermark": "10 seconds"})

    from kvs.servers import start_redis
    from spark_integration import window_aggregate
    from spark_integration.session import local_session

    spark = local_session("mta-bench-streaming", shuffle_partitions=4)
    url, stop_redis = start_redis()
    rows, results, batches = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        write_pieces(spark, events, keys, rate, pieces, tmp_path / "in")

        def source() -> Any:
            return spark.readStream.schema("k string, ts timestamp, v long").option(
                "maxFilesPerTrigger", 1).option("recursiveFileLookup", "true").parquet(str(tmp_path / "in"))

        setups = {
            "Spark window()": lambda: native(source().withWatermark("ts", "10 seconds"), "60 seconds", "1 second"),
            "MTA, state in Spark": lambda: window_aggregate(source(), "k", "ts", AGGS, size="60 seconds",
                                                           slide="1 second", watermark="10 seconds", flat=True),
            "MTA, levels in Redis": lambda: window_aggregate(
                source(), "k", "ts", AGGS, size="60 seconds", slide="1 second", watermark="10 seconds",
                store=url, name=f"bench_{uuid.uuid4().hex[:8]}", flat=True),
        }
        for i, (name, build) in enumerate(setups.items()):
            seconds, batches[name] = run_query(build(), tmp_path / f"out-{i}", tmp_path / f"ck-{i}")
            results[name] = (seconds, spark.read.parquet(str(tmp_path / f"out-{i}")))
            run_.log(f"{name}: {seconds:.1f} s")
        spark_s, theirs = results["Spark window()"]
        for name, (seconds, df) in results.items():
            count, ok = same(df, theirs)
            rows.append({"query": name, "seconds": seconds, "events_per_s": events / seconds,
                         "speedup": spark_s / seconds, "rows": count, "identical": ok})
    stop_redis()
    spark.stop()
    run_.table(f"{events:,} events, {keys} keys, {pieces} micro-batches; 60 s windows, 1 s slide (local[*], 2 cores)",
               ["query", "seconds", "events/s", "Spark / this", "result rows", "identical to Spark's"],
               [[r["query"], r["seconds"], r["events_per_s"], r["speedup"], r["rows"],
                 "yes" if r["identical"] else "NO"] for r in rows])
    run_.data["results"] = rows
    run_.data["batch_seconds"] = batches
    run_.finish(list(rows[0]), [list(r.values()) for r in rows])
    if not args.no_plot:
        common.plot_lines(run_.path(".png"), {name: (list(range(len(b))), b) for name, b in batches.items()},
                          title=f"{events:,} events, 60 s windows sliding by 1 s", xlabel="micro-batch",
                          ylabel="seconds", logx=None, logy=False)
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
