"""What bounds the Spark operator where it misses issue 19's targets: each missing cell's
plan taken apart into pieces written in plain Spark, timed beside the operator and Spark's
own query in one session (the data and sizes of :mod:`benchmarks.spark_windows`).

- ``tumbling-stats``: a 60 s tumbling window with sum, stddev, first and last. Spark's query
  takes ``min_by``/``max_by(v, ts)``: ties of event time go to whichever row its hash
  aggregation meets first. The operator's first/last break ties by the input's row order.
  The pieces: ``exact one pass``, Spark's own query with first/last ordered by one long,
  (offset in the window, ``monotonically_increasing_id``): exact only while the offset,
  the input partition and the row fit 63 bits together (here, with the partitions counted
  first); it is the fastest an exact plan can be, since Spark's own is the same single
  aggregation. ``slicing alone``: the operator's Spark half (slices per key, pane and input
  partition, where ties are exact without counting partitions), no Python.
- ``slide10``: a 60 s window sliding by 10 s, sum, count, min, max, avg. The pieces: Spark's
  slicing aggregation alone (10 s slices), then with the shuffle by key, then with an empty
  Python stage after it: the least any plan that makes the windows in Python costs.

Each piece goes to Spark's ``noop`` sink; the order of the competitors rotates by round;
medians. The rows of ``exact one pass`` are checked equal to Spark's (the data's times are
unique within a key, so both have one answer).

    python -m benchmarks.spark_bounds                  # both shapes at 0.5 and 10 events/s/key
    python -m benchmarks.spark_bounds --quick          # smoke run
"""

from __future__ import annotations

import statistics
from typing import Any, Callable

from benchmarks import common
from benchmarks.spark_windows import AGGS, KEY, STATS_AGGS, TIME, dataset, native, same, timed

SHAPES = ("tumbling-stats", "slide10")


def tumbling_pieces(df: Any, window_aggregate: Callable[..., Any]) -> dict[str, Any]:
    """The competitors of ``tumbling-stats``."""
    from pyspark.sql import functions as F

    P = 60_000_000
    t = F.unix_micros(F.col(TIME))
    seq = F.monotonically_increasing_id()
    offset = F.pmod(t, F.lit(P))
    part_bits = max(1, (df.rdd.getNumPartitions() - 1).bit_length())
    assert (P - 1).bit_length() + 33 + part_bits <= 63, "the exact one-pass long needs more than 63 bits"
    order = F.shiftleft(offset, 33 + part_bits).bitwiseOR(seq)
    start = F.timestamp_micros((t - offset).cast("long"))
    exact = (df.select(KEY, F.struct(start.alias("start"), (start + F.expr("INTERVAL 60 SECONDS")).alias("end"))
                       .alias("window"), "v", order.alias("o"))
             .groupBy(KEY, "window").agg(F.sum("v").alias("s"), F.stddev("v").alias("sd"),
                                         F.min_by("v", "o").alias("f"), F.max_by("v", "o").alias("l")))
    part = F.shiftright(F.col("seq"), 33)
    local = F.shiftleft(F.pmod(F.col("t"), F.lit(P)), 33).bitwiseOR(F.col("seq").bitwiseAND(F.lit((1 << 33) - 1)))
    x = F.col("v").cast("double")
    slicing = (df.select(KEY, t.alias("t"), "v", seq.alias("seq"))
               .select(KEY, F.floor(F.col("t") / P).alias("pane"), part.alias("part"), "v", local.alias("o"))
               .groupBy(KEY, "pane", "part")
               .agg(F.sum("v"), F.count(x), F.avg(x), F.var_pop(x) * F.count(x), F.min("o"), F.min_by("v", "o"),
                    F.max("o"), F.max_by("v", "o")))
    return {"Spark": native(df, "60 seconds", "60 seconds", STATS_AGGS),
            "operator": window_aggregate(df, KEY, TIME, STATS_AGGS, size="60 seconds", slide="60 seconds"),
            "exact one pass": exact, "slicing alone": slicing}


def slide_pieces(df: Any, window_aggregate: Callable[..., Any]) -> dict[str, Any]:
    """The competitors of ``slide10``."""
    from pyspark.sql import functions as F

    P = 10_000_000
    t = F.unix_micros(F.col(TIME))
    slices = (df.select(KEY, F.floor(t / P).alias("pane"), "v")
              .groupBy(KEY, "pane").agg(F.sum("v").alias("s"), F.count("v").alias("n"), F.min("v").alias("lo"),
                                        F.max("v").alias("hi")))
    shuffled = slices.repartition(KEY)
    return {"Spark": native(df, "60 seconds", "10 seconds", AGGS),
            "operator": window_aggregate(df, KEY, TIME, AGGS, size="60 seconds", slide="10 seconds"),
            "slicing alone": slices, "+ shuffle by key": shuffled,
            "+ empty Python stage": shuffled.mapInArrow(_nothing, "k string")}


def _nothing(batches: Any) -> Any:
    """A Python stage that reads every slice and makes no window."""
    for _ in batches:
        pass
    return iter(())


def rotating(frames: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    """Each competitor's seconds per round; the order rotates by one each round."""
    names = list(frames)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            out[n].append(timed(frames[n]))
    return out


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--rates", type=float, nargs="+", default=None, help="events/s/key (full: 0.5 10, quick: 0.1)")
    p.add_argument("--rounds", type=int, default=None, help="rounds (full: 5, quick: 1)")
    args = p.parse_args(argv)
    events, keys = (2_000, 4) if args.quick else (2_000_000, 100)
    rates = args.rates or ([0.1] if args.quick else [0.5, 10.0])
    rounds = args.rounds or (1 if args.quick else 5)
    run_ = common.Run("spark_bounds", args, {"events": events, "keys": keys, "rates": rates, "rounds": rounds})

    from spark_integration import window_aggregate
    from spark_integration.session import local_session

    own = spark is None
    if own:
        spark = local_session("mta-bench", shuffle_partitions=8)
    rows, identical = [], True
    for rate in rates:
        df = dataset(spark, events, keys, rate)
        df.count()
        for shape, pieces in (("tumbling-stats", tumbling_pieces), ("slide10", slide_pieces)):
            frames = pieces(df, window_aggregate)
            if "exact one pass" in frames:
                _, ok, diff = same(frames["exact one pass"], frames["Spark"], STATS_AGGS)
                identical &= ok
                if not ok:
                    print(f"exact one pass differs from Spark at {rate}: {diff}", flush=True)
            times = rotating(frames, rounds)
            spark_s = statistics.median(times["Spark"])
            for name, seconds in times.items():
                s = statistics.median(seconds)
                rows.append({"shape": shape, "rate": rate, "piece": name, "s": s, "spark_over": spark_s / s,
                             "rounds": [round(x, 3) for x in seconds]})
        df.unpersist()
    if own:
        spark.stop()
    run_.table(f"{events:,} events, {keys} keys; medians of {rounds} rotating rounds (local[*])",
               ["shape", "events/s/key", "piece", "s", "Spark / piece", "rounds"],
               [[r["shape"], r["rate"], r["piece"], r["s"], f"{r['spark_over']:.2f}x", r["rounds"]] for r in rows])
    run_.data["results"] = rows
    columns = ["shape", "rate", "piece", "s", "spark_over"]
    run_.finish(columns, [[r[c] for c in columns] for r in rows])
    run_.write_markdown("Seconds (noop sink), medians; Spark / piece: Spark's own query's time over the piece's.")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
