"""The example pipeline, the project's main job: per-host telemetry windows on Spark.

    mta pipeline                          # generated data, local[*], Parquet in ./mta-pipeline-output
    mta pipeline --stream                 # the same windows as a streaming query over arrival-ordered files
    mta pipeline --input readings.parquet # your data: columns host, metric, ts (timestamp), value
    mta pipeline --stream --store redis://localhost:6379/0   # window levels in Redis
    spark-submit --master spark://head:7077 \\
        "$(python -c 'import spark_integration.jobs.telemetry_pipeline as j; print(j.__file__)')" --output /shared/out

Two windows per (host, metric), both MTA-backed (``window_aggregate``), with Spark's
columns (host, metric, a ``window`` struct of ``start`` and ``end``, the aggregations)
and ``late`` (the key's late events dropped so far):

- ``windows/``: 5 minutes sliding by 10 s: mean, max, sample stddev;
- ``peaks/`` (memory only): the paper's Table 2 policy, a custom slide policy that
  keeps the last 5 minutes minus every reading that can never again be the max,
  reported each minute (``window.start``: the oldest reading the window holds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from spark_integration.stored import delete_windows
from spark_integration.windows import window_aggregate

WINDOW, SLIDE = "5 minutes", "10 seconds"
PEAK_HORIZON = 300_000_000  # microseconds
STATS = {"mean": ("value", "avg"), "max": ("value", "max"), "stddev": ("value", "stddev")}
#: The names of the two queries' windows in the store (--store).
STORED = {"windows": "mta_pipeline_windows", "peaks": "mta_pipeline_peaks"}


def peak_policy(total: Any, old: Any) -> bool:
    """Paper Table 2: evict what is older than 5 minutes or can never again be the max."""
    return total.last - old.last >= PEAK_HORIZON or old.value.peak < total.value.peak


def session(master: str | None) -> Any:
    """The job's Spark session on ``master``: spark-submit's when launched by it and none is given.

    Alone (no spark-submit, no ``master``) it is ``local[*]``; ``local[N]`` is :func:`local_session`.
    On any other master (spark-submit's, or ``--master spark://...``) the cluster's settings stand
    and the job adds only what it needs and was not given (``--conf`` wins): RocksDB state (streaming
    windows refuse the default store) and UTC session time (as the local run: input timestamps
    without an offset mean the same instant on every cluster)."""
    from spark_integration.session import ROCKSDB, local_session

    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit
        master = "local[*]"
    if master is not None and master.startswith("local["):
        return local_session("mta-pipeline", master.removeprefix("local[").rstrip("]"))
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("mta-pipeline")
    spark = (builder.master(master) if master is not None else builder).getOrCreate()
    given = spark.sparkContext.getConf()  # spark-submit's settings (--conf, spark-defaults.conf)
    for key, value in (("spark.sql.streaming.stateStore.providerClass", ROCKSDB),
                       ("spark.sql.session.timeZone", "UTC")):
        if not given.contains(key):
            spark.conf.set(key, value)
    return spark


def load(spark: Any, args: argparse.Namespace, out: Path) -> tuple[Any, int]:
    """The input DataFrame (batch) and its size; for ``--stream``, also written as files in arrival order."""
    from pyspark.sql import functions as F

    if args.input:
        reader = spark.read.option("header", True).option("inferSchema", True)
        df = reader.csv(args.input) if args.input.endswith(".csv") else spark.read.parquet(args.input)
        df = df.select("host", "metric", F.col("ts").cast("timestamp").alias("ts"),
                       F.col("value").cast("double").alias("value"))
        if args.stream:
            df = df.withColumn("arrival", F.col("ts"))
    else:
        from spark_integration.jobs.telemetry_data import generate

        df = spark.createDataFrame(generate(args.hosts, args.hours, args.seed, args.late_fraction))
    rows = df.count()
    if not args.stream:
        return df.drop("arrival") if "arrival" in df.columns else df, rows
    files = out / "stream-input"
    files.mkdir(parents=True, exist_ok=True)
    frame = df.toPandas().sort_values("arrival", kind="stable")
    step = -(-len(frame) // args.files)
    for i in range(args.files):  # one file per micro-batch, in arrival order (the source reads by mtime)
        path = files / f"part-{i:04d}.parquet"
        frame.iloc[i * step:(i + 1) * step][["host", "metric", "ts", "value"]].to_parquet(
            path, index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
        stamp = time.time() - 10_000 + i
        os.utime(path, (stamp, stamp))
    stream = spark.readStream.schema("host string, metric string, ts timestamp, value double") \
        .option("maxFilesPerTrigger", 1).parquet(str(files))
    return stream, rows


def write(df: Any, path: Path, checkpoint: Path) -> None:
    if df.isStreaming:
        query = (df.writeStream.format("parquet").option("path", str(path))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"streaming query failed: {query.exception()}")
    else:
        df.write.mode("overwrite").parquet(str(path))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mta pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--input", help="CSV or Parquet with columns host, metric, ts, value (default: generated)")
    p.add_argument("--output", default="mta-pipeline-output", help="directory for the Parquet results")
    p.add_argument("--hosts", type=int, default=20, help="generated hosts")
    p.add_argument("--hours", type=float, default=2.0, help="generated hours of readings")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--late-fraction", type=float, default=0.01, help="generated events that arrive 30 s-3 min late")
    p.add_argument("--stream", action="store_true", help="run as a streaming query over arrival-ordered files")
    p.add_argument("--files", type=int, default=12, help="--stream: input files (one per micro-batch)")
    p.add_argument("--watermark", default="1 minute", help="--stream: watermark delay")
    p.add_argument("--store", help="keep the window levels in Redis at this URL (redis://host:port/db)")
    p.add_argument("--master", help="Spark master (default local[*]; spark-submit's when launched by it)")
    args = p.parse_args(argv)
    out = Path(args.output)
    if args.stream:  # a fresh stream: no checkpoint (or stored windows) of an earlier run to resume from
        for old in ("stream-input", "checkpoints", "windows", "peaks"):
            shutil.rmtree(out / old, ignore_errors=True)
        if args.store:
            for name in STORED.values():
                delete_windows(args.store, name)
    started = time.time()
    with tqdm(total=4, desc="mta pipeline", unit="stage", file=sys.stdout) as progress:
        progress.set_postfix_str("starting Spark")
        spark = session(args.master)
        progress.update()
        progress.set_postfix_str("reading" if args.input else "generating telemetry")
        df, events = load(spark, args, out)
        progress.update()
        progress.set_postfix_str(f"{WINDOW} windows every {SLIDE}")
        stream = {"watermark": args.watermark} if args.stream else {}
        stored = {name: {"store": args.store, "name": STORED[name]} if args.store else {} for name in STORED}
        windows = window_aggregate(df, ["host", "metric"], "ts", STATS, size=WINDOW, slide=SLIDE, late_count=True,
                                   **stream, **stored["windows"])
        write(windows, out / "windows", out / "checkpoints" / "windows")
        progress.update()
        progress.set_postfix_str("Table 2 peak policy")
        memory = df.where(df.metric == "memory")
        peaks = window_aggregate(memory, ["host", "metric"], "ts", {"peak": ("value", "max")},
                                 policy=peak_policy, slide="1 minute", late_count=True, **stream,
                                 **stored["peaks"])
        write(peaks, out / "peaks", out / "checkpoints" / "peaks")
        progress.update()
    summary(spark, out, events, time.time() - started)
    return 0


def summary(spark: Any, out: Path, events: int, seconds: float) -> None:
    from pyspark.sql import functions as F

    windows = spark.read.parquet(str(out / "windows"))
    peaks = spark.read.parquet(str(out / "peaks"))
    late = windows.groupBy("host", "metric").agg(F.max("late").alias("late")).agg(F.sum("late")).first()[0] or 0
    busiest = (windows.where(F.col("metric") == "cpu").groupBy("host").agg(F.max("mean").alias("peak_mean"))
               .orderBy(F.desc("peak_mean")).limit(3).collect())
    print(f"\n{events:,} events -> {windows.count():,} window rows ({WINDOW}, every {SLIDE}) and "
          f"{peaks.count():,} peak rows in {seconds:.1f} s; {late:,} late events dropped")
    print("busiest hosts (highest 5-minute mean cpu): " +
          ", ".join(f"{r.host} {r.peak_mean:.1f}%" for r in busiest))
    print(f"results: {out / 'windows'}, {out / 'peaks'}")


if __name__ == "__main__":
    sys.exit(main())
