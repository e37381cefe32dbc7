"""Session windows: the MTA Spark operator (``window_aggregate(..., session_gap=...)``)
against Spark's own ``groupBy(key, session_window(ts, gap)).agg(...)``, in one session.

1,000,000 events over 100 keys at random times, at two densities (0.05 and 1 event per
second per key: many short sessions, and few long ones, with a 30 s gap), computing
sum, count, min, max and avg. Each round times both competitors, in alternating order
(a noop sink: the whole plan runs, nothing is collected); the table gives the median
over the rounds of each, and their ratio. Then both results are compared row for row
(doubles to 1e-9). The machine may be shared: the absolute times are rough, the
ratio of two runs taken side by side is the number to read.

    python -m benchmarks.spark_sessions            # ~10 min
    python -m benchmarks.spark_sessions --quick    # smoke run
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

from benchmarks import common
from benchmarks.spark_windows import AGGS, dataset, timed

GAP = "30 seconds"


def native(df: Any) -> Any:
    from pyspark.sql import functions as F

    return df.groupBy("k", F.session_window("ts", GAP)).agg(
        F.sum("v").alias("s"), F.count("v").alias("n"), F.min("v").alias("lo"), F.max("v").alias("hi"),
        F.avg("v").alias("a"))


def flat(df: Any) -> Any:
    from pyspark.sql import functions as F

    return df.select("k", F.col("session_window.start").alias("start"), F.col("session_window.end").alias("end"),
                     *AGGS)


def same(ours: Any, theirs: Any) -> tuple[int, bool]:
    """Our row count, and whether the rows are Spark's row for row (a full outer join on
    the exact columns, doubles to 1e-9)."""
    from pyspark.sql import functions as F

    ours, theirs = flat(ours), flat(theirs)
    count = ours.count()
    if count != theirs.count():
        return count, False
    joined = ours.alias("o").join(theirs.alias("t"), ["k", "start", "end", "s", "n", "lo", "hi"], "full_outer")
    bad = joined.where(F.col("o.a").isNull() | F.col("t.a").isNull() |
                       (F.abs(F.col("o.a") - F.col("t.a")) > 1e-9 * F.greatest(F.abs(F.col("t.a")), F.lit(1.0))))
    return count, bad.limit(1).count() == 0


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--events", type=int, default=None, help="events (full: 1,000,000, quick: 50,000)")
    p.add_argument("--rates", type=float, nargs="+", default=None,
                   help="events per second per key (full and quick: 0.05 1)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per competitor (full: 5, quick: 3)")
    args = p.parse_args(argv)
    events = args.events or (50_000 if args.quick else 1_000_000)
    keys = 20 if args.quick else 100
    rates = args.rates or [0.05, 1.0]
    rounds = args.rounds or (3 if args.quick else 5)
    run_ = common.Run("spark_sessions", args, {"events": events, "keys": keys, "gap": GAP, "rounds": rounds})

    from spark_integration import window_aggregate
    from spark_integration.session import local_session

    spark = local_session("mta-bench", shuffle_partitions=8)
    rows = []
    for rate in rates:
        df = dataset(spark, events, keys, rate)
        df.count()  # cached before any timing
        ours = window_aggregate(df, "k", "ts", AGGS, session_gap=GAP).drop("late")
        theirs = native(df)
        timed(ours), timed(theirs)  # JIT, Python workers
        times: dict[str, list[float]] = {"mta": [], "spark": []}
        for r in range(rounds):  # alternate who goes first: neither always runs on a warmer machine
            order = [("mta", ours), ("spark", theirs)] if r % 2 == 0 else [("spark", theirs), ("mta", ours)]
            for who, query in order:
                times[who].append(timed(query))
        output, ok = same(ours, theirs)
        t_ours, t_theirs = statistics.median(times["mta"]), statistics.median(times["spark"])
        rows.append({"rate": rate, "rows": output, "mta_s": t_ours, "spark_s": t_theirs,
                     "speedup": t_theirs / t_ours, "mta_all": times["mta"], "spark_all": times["spark"],
                     "identical": ok})
        run_.log(f"{rate:>5} ev/s/key: mta {t_ours:6.2f} s, spark session_window() {t_theirs:6.2f} s "
                 f"({t_theirs / t_ours:.2f}x), {output:,} sessions, identical: {ok}")
        df.unpersist()
    spark.stop()
    run_.table(f"{events:,} events, {keys} keys, {GAP} gap: sum, count, min, max, avg; median of {rounds} "
               f"alternating rounds (local[*])",
               ["events/s per key", "sessions", "MTA operator s", "Spark session_window() s", "Spark / MTA",
                "identical rows"],
               [[r["rate"], r["rows"], r["mta_s"], r["spark_s"], r["speedup"], "yes" if r["identical"] else "NO"]
                for r in rows])
    run_.data["results"] = rows
    run_.finish(["rate", "rows", "mta_s", "spark_s", "speedup", "identical"],
                [[r["rate"], r["rows"], r["mta_s"], r["spark_s"], r["speedup"], r["identical"]] for r in rows])
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
