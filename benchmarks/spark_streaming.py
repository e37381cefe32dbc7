"""The MTA Spark operator as a streaming query against Spark's own streaming window() (issue 19).

Events of 100 keys at 10 per second per key (2,000,000), in event-time order but shuffled
within 3 s, written as Parquet files that a file source reads one per micro-batch
(``maxFilesPerTrigger`` 1, ``trigger(availableNow=True)``: 10 micro-batches), 10 s
watermark, append mode, a Parquet sink. Two shapes, 60 s windows:

- ``slide1``: sliding by 1 s (target: at least 3x Spark's speed);
- ``tumbling``: (target: at least 1.0x).

The operator (``window_aggregate(stream, "k", "ts", aggs, size=..., slide=...,
watermark="10 seconds")``) runs against ``stream.withWatermark("ts", "10 seconds")
.groupBy("k", window("ts", size, slide)).agg(...)``, computing sum, count, min, max and
avg, in one Spark session; each runs once untimed first, on two small files of their own
(as a long-running query is warm: JIT, Python workers), then which one starts first
alternates by round. Each query is
timed from start to end; then its output is compared with Spark's as sets keyed by
(key, start, end) (:func:`benchmarks.spark_windows.same`). Where the time goes, per
query, from Spark's progress reports: running the micro-batches (``addBatch``), planning,
the offset and commit logs, the state store (updates, removals, commits), and the
operator's own split of its time (:class:`OperatorProfile`: summed over the workers).

    python -m benchmarks.spark_streaming            # ~6 min on 2 cores
    python -m benchmarks.spark_streaming --quick    # smoke run, under a minute
    python -m benchmarks.spark_streaming --shapes slide1 --redis   # also with the levels in Redis
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from benchmarks import common
from benchmarks.spark_windows import AGGS, HEADERS, KEY, SIZE, TIME, native, same, table_row

WATERMARK = "10 seconds"
#: shape -> (slide of the 60 s window, target: Spark's time / ours at least this)
SHAPES = {"slide1": ("1 second", 3.0), "tumbling": ("60 seconds", 1.0)}
SPARK = "Spark window()"
OURS = "window_aggregate"
REDIS = "window_aggregate, levels in Redis"
#: Spark's progress durations (ms, summed over the micro-batches) -> the breakdown's column
DURATIONS = {"addBatch": "run batches s", "queryPlanning": "planning s", "walCommit": "offset log s",
             "commitOffsets": "commit log s", "latestOffset": "source s", "getBatch": "source s"}
#: the state operator's progress metrics (ms, summed) -> the breakdown's column
STATE = {"allUpdatesTimeMs": "state updates s", "allRemovalsTimeMs": "state removals s",
         "commitTimeMs": "state commit s"}
#: the state operator's custom metrics (summed) -> the breakdown's column, and the unit's divisor.
#: transformWithState's "state updates" is its input handling, Python included; its timers run apart.
CUSTOM = {"timerProcessingTimeMs": ("timers s", 1000), "rocksdbGetCount": ("state gets", 1),
          "rocksdbPutCount": ("state puts", 1)}


def write_pieces(spark: Any, events: int, keys: int, rate: float, pieces: int, directory: Path) -> None:
    """``pieces`` Parquet files (one micro-batch each), each a run of event time, modified in that order."""
    from pyspark.sql import functions as F

    span = events / keys / rate  # seconds
    df = spark.range(events).select(
        F.concat(F.lit(KEY), (F.col("id") % keys).cast("string")).alias(KEY),
        (F.col("id") / events * span + F.rand(3) * 3).alias("t"),  # in order, but for up to 3 s
        (F.rand(2) * 1000).cast("long").alias("v"))
    df = df.select(KEY, F.timestamp_micros((F.col("t") * 1_000_000).cast("long")).alias(TIME), "v",
                   F.least((F.col("t") / span * pieces).cast("int"), F.lit(pieces - 1)).alias("piece")).cache()
    for piece in range(pieces):
        out = directory / f"piece-{piece:04d}"
        df.where(F.col("piece") == piece).drop("piece").coalesce(1).write.parquet(str(out))
        stamp = time.time() - 10_000 + piece
        for f in out.glob("*.parquet"):
            os.utime(f, (stamp, stamp))
    df.unpersist()


def run_query(result: Any, out: Path, checkpoint: Path) -> tuple[float, list[dict[str, Any]]]:
    """Seconds from start to end, and the progress report of each micro-batch."""
    started = time.perf_counter()
    query = (result.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return seconds, [json.loads(p.json) for p in query.recentProgress]


class OperatorProfile:
    """The operator's own split of its time: with ``MTA_SPARK_PROFILE`` (see
    :mod:`spark_integration.streaming`) set in the Python workers' environment, each worker
    appends a JSON line per micro-batch task to ``<directory>/<pid>.jsonl``: the seconds per
    phase (state round trips, input frames, the engine's load/add/advance/save, output
    frames). Queries run one after the other, so the lines new since the last :meth:`take`
    are the last query's."""

    def __init__(self, spark: Any, directory: Path) -> None:
        from spark_integration.streaming import PROFILE

        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.seen: dict[str, int] = {}  # file -> lines taken
        # Python functions carry the context's environment to their workers (those made from now on)
        self.environment, self.variable = spark.sparkContext.environment, PROFILE
        self.environment[PROFILE] = str(directory)

    def close(self) -> None:
        """Python functions made from now on profile no more."""
        self.environment.pop(self.variable, None)

    def take(self) -> dict[str, float]:
        """Seconds per phase (summed over the workers, which run side by side) and the key calls,
        since the last call."""
        split: dict[str, float] = {}
        for f in sorted(self.directory.glob("*.jsonl")):
            lines = f.read_text().splitlines()
            for line in lines[self.seen.get(f.name, 0):]:
                entry = json.loads(line)
                split["calls"] = split.get("calls", 0) + entry["calls"]
                for phase, seconds in entry["seconds"].items():
                    split[f"{phase} s"] = split.get(f"{phase} s", 0.0) + seconds
            self.seen[f.name] = len(lines)
        return split


def breakdown(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Where a query's time went (seconds summed over its micro-batches), from Spark's progress."""
    out: dict[str, float] = {"batches": float(len(progress)),
                             "input rows": float(sum(p.get("numInputRows", 0) for p in progress))}
    for p in progress:
        for key, column in DURATIONS.items():
            out[column] = out.get(column, 0.0) + (p.get("durationMs") or {}).get(key, 0) / 1000
        for op in p.get("stateOperators", []):
            for key, column in STATE.items():
                out[column] = out.get(column, 0.0) + (op.get(key) or 0) / 1000
            for key, (column, unit) in CUSTOM.items():
                out[column] = out.get(column, 0.0) + (op.get("customMetrics") or {}).get(key, 0) / unit
    return out


def competitors(window_aggregate: Callable[..., Any], source: Callable[[], Any], slide: str,
                redis_url: str | None) -> dict[str, Callable[[], Any]]:
    """Name -> a function making that competitor's streaming DataFrame of 60 s windows by ``slide``."""
    setups: dict[str, Callable[[], Any]] = {
        OURS: lambda: window_aggregate(source(), KEY, TIME, AGGS, size=SIZE, slide=slide, watermark=WATERMARK),
        SPARK: lambda: native(source().withWatermark(TIME, WATERMARK), SIZE, slide),
    }
    if redis_url is not None:
        setups[REDIS] = lambda: window_aggregate(source(), KEY, TIME, AGGS, size=SIZE, slide=slide,
                                                 watermark=WATERMARK, store=redis_url,
                                                 name=f"bench_{uuid.uuid4().hex[:8]}")
    return setups


def run_shape(run_: common.Run, spark: Any, shape: str, setups: dict[str, Callable[[], Any]], rounds: int,
              profile: OperatorProfile, directory: Path, rate: float) -> dict[str, Any]:
    """Run every competitor of one shape ``rounds`` times (rotating who goes first: none always
    runs on a warmer machine), check its rows against Spark's; the result rows, the breakdowns
    (of each competitor's last run), each micro-batch's seconds and the last progress reports."""
    target = SHAPES[shape][1]
    names = list(setups)
    times: dict[str, list[float]] = {name: [] for name in names}
    progress: dict[str, list[dict[str, Any]]] = {}
    own_split: dict[str, dict[str, float]] = {}
    outputs: dict[str, Path] = {}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            outputs[name] = directory / f"out-{r}-{names.index(name)}"
            seconds, progress[name] = run_query(setups[name](), outputs[name],
                                                directory / f"checkpoint-{r}-{names.index(name)}")
            own_split[name] = profile.take()
            times[name].append(seconds)
            run_.log(f"{shape} {name}: {seconds:.1f} s")
    t_spark = statistics.median(times[SPARK])
    theirs = spark.read.parquet(str(outputs[SPARK]))
    out: dict[str, Any] = {"rows": [], "splits": [], "phases": [], "batches": {}, "last_progress": {}}
    for name in names:
        if name != SPARK:
            count, ok, diff = same(spark.read.parquet(str(outputs[name])), theirs, AGGS)
            t_ours = statistics.median(times[name])
            row = {"shape": shape if name == OURS else f"{shape}, {name}", "rate": rate, "ours_s": t_ours,
                   "spark_s": t_spark, "ratio": t_spark / t_ours, "target": target,
                   "met": t_spark / t_ours >= target, "rows": count, "identical": ok,
                   "ours_all": times[name], "spark_all": times[SPARK]}
            if diff:
                row["differences"] = diff
            out["rows"].append(row)
            run_.log(f"{row['shape']}: ours {t_ours:.1f} s, Spark {t_spark:.1f} s ({row['ratio']:.2f}x, "
                     f"target {target}x), {count:,} rows, identical: {ok} {diff}")
        out["splits"].append({"shape": shape, "query": name, "seconds": statistics.median(times[name]),
                              **breakdown(progress[name])})
        if own_split[name]:
            out["phases"].append({"shape": shape, "query": name, **own_split[name]})
        out["last_progress"][f"{shape}: {name}"] = progress[name][-1] if progress[name] else None
        out["batches"][f"{shape}: {name}"] = [(b.get("durationMs") or {}).get("triggerExecution", 0) / 1000
                                              for b in progress[name]]
    return out


BATCH_HEADERS = ["query", "batches", "first s", "median of the others s", "no-data batch s", "total s", "bound"]


def batch_rows(batches: dict[str, list[float]], rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Per query: its first micro-batch, the median of those with data after it, its last (no
    data) and, for Spark's own, the bound the no-data cost sets on any operator's ratio."""
    out = []
    for name, seconds in batches.items():
        if len(seconds) < 3:
            continue
        bound = sum(seconds) / (len(seconds) * seconds[-1]) if name.endswith(SPARK) else None
        out.append([name, len(seconds), seconds[0], statistics.median(seconds[1:-1]), seconds[-1], sum(seconds),
                    f"{bound:.2f}x" if bound else ""])
    return out


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Run the benchmark; ``spark``: a session to use (and leave running), else a local one."""
    p = common.parser(__doc__)
    p.add_argument("--events", type=int, default=None, help="events (full: 2,000,000, quick: 5,000)")
    p.add_argument("--keys", type=int, default=None, help="keys (full: 100, quick: 5)")
    p.add_argument("--rate", type=float, default=10.0, help="events per second per key")
    p.add_argument("--pieces", type=int, default=None, help="files = micro-batches (full: 10, quick: 2)")
    p.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    p.add_argument("--rounds", type=int, default=1,
                   help="runs per competitor, rotating which goes first; medians reported")
    p.add_argument("--redis", action="store_true", help="also the operator with its window levels in Redis")
    args = p.parse_args(argv)
    events = args.events or (5_000 if args.quick else 2_000_000)
    keys = args.keys or (5 if args.quick else 100)
    pieces = args.pieces or (2 if args.quick else 10)
    rate, rounds = args.rate, args.rounds
    run_ = common.Run("spark_streaming", args, {"events": events, "keys": keys, "rate": rate, "pieces": pieces,
                                                "size": SIZE, "shapes": {s: SHAPES[s] for s in args.shapes},
                                                "watermark": WATERMARK, "rounds": rounds, "redis": args.redis,
                                                "aggregations": AGGS})

    from spark_integration import window_aggregate
    from spark_integration.session import local_session

    own = spark is None
    if own:
        spark = local_session("mta-bench-streaming", shuffle_partitions=4)
    url, stop_redis = None, None
    if args.redis:
        from kvs.servers import start_redis
        url, stop_redis = start_redis()
    rows, splits, phases, batches, last_progress = [], [], [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        write_pieces(spark, events, keys, rate, pieces, tmp_path / "in")
        profile = OperatorProfile(spark, tmp_path / "profile")

        def reader(directory: Path) -> Callable[[], Any]:
            return lambda: spark.readStream.schema(f"{KEY} string, {TIME} timestamp, v long").option(
                "maxFilesPerTrigger", 1).option("recursiveFileLookup", "true").parquet(str(directory))

        source = reader(tmp_path / "in")
        write_pieces(spark, max(events // pieces, 100), keys, rate, 2, tmp_path / "warm")
        for i, shape in enumerate(args.shapes):
            setups = competitors(window_aggregate, source, SHAPES[shape][0], url)
            for j, warm in enumerate(competitors(window_aggregate, reader(tmp_path / "warm"), SHAPES[shape][0],
                                                 url).values()):
                # untimed, as a long-running query is warm: the JVM's JIT, the Python workers
                run_query(warm(), tmp_path / f"warm-{i}-{j}", tmp_path / f"warm-checkpoint-{i}-{j}")
            profile.take()
            out = run_shape(run_, spark, shape, setups, rounds, profile, tmp_path / f"shape-{i}", rate)
            rows += out["rows"]
            splits += out["splits"]
            phases += out["phases"]
            batches.update(out["batches"])
            last_progress.update(out["last_progress"])
        profile.close()
    if stop_redis is not None:
        stop_redis()
    if own:
        spark.stop()

    run_.table(f"{events:,} events, {keys} keys, {rate} ev/s/key, {pieces} micro-batches, 60 s windows, "
               f"{WATERMARK} watermark, append; median of {rounds} round{'s' * (rounds > 1)} (local[*])",
               HEADERS, [table_row(r) for r in rows])
    columns = list(dict.fromkeys(c for s in splits for c in s))
    run_.table("Where the time goes (seconds summed over the micro-batches, from Spark's progress reports)", columns,
               [[s.get(c) for c in columns] for s in splits],
               note="For the operator (transformWithStateInPandas) `state updates s` is its whole input handling "
                    "(Python workers included) and `timers s` its expired timers; for Spark's own, state store "
                    "writes only. `state gets`/`state puts`: RocksDB calls.")
    if phases:
        columns = list(dict.fromkeys(c for s in phases for c in s))
        run_.table("The operator's own phases (seconds summed over its Python workers and micro-batches; "
                   "MTA_SPARK_PROFILE)", columns, [[s.get(c) for c in columns] for s in phases],
                   note="`calls`: the processor's calls (one per state key, a key or a bucket of keys, and "
                        "micro-batch: its input rows or its timer). "
                        "What `state updates s` holds beyond these phases is outside the processor's calls: "
                        "the Python workers' start, Arrow batches between the JVM and Python.")
    if batches:
        run_.table("Each micro-batch (seconds, triggerExecution)", BATCH_HEADERS, batch_rows(batches, rows),
                   note="The last micro-batch reads no data: it moves the watermark and reports the windows it "
                        "closes; with few of them, it costs what any micro-batch costs Spark at least (planning, "
                        "logs, the state store's commit). `bound`: Spark's total over (micro-batches x its no-data "
                        "batch), about the ratio an operator costing nothing beyond that would reach.")
    run_.data["results"] = rows
    run_.data["breakdown"] = splits
    run_.data["operator_phases"] = phases
    run_.data["batch_seconds"] = batches
    run_.data["last_progress"] = last_progress  # each query's last progress report, as Spark gave it
    result_columns = ["shape", "rate", "ours_s", "spark_s", "ratio", "target", "met", "rows", "identical"]
    run_.finish(result_columns, [[r[c] for c in result_columns] for r in rows])
    if not args.no_plot:
        common.plot_lines(run_.path(".png"), {name: (list(range(len(b))), b) for name, b in batches.items()},
                          title=f"{events:,} events, 60 s windows: each micro-batch", xlabel="micro-batch",
                          ylabel="seconds", logx=None, logy=False)
    run_.write_markdown("Times are seconds from a query's start to its end; ratio = Spark's time / ours; "
                         "rows = result rows, checked identical to Spark's.")
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
