"""The MTA Spark operator (``window_aggregate``) against Spark's own windows (issue 19), batch.

Every competitor runs in one Spark session on the same cached DataFrame: 2,000,000 events
over 100 keys at random times, at 0.5 and 10 events per second per key, random long values.
Event times are unique within a key (microseconds), so ``first``/``last`` have one answer.
The shapes (each one printed as a row: shape, rate, ours, Spark, ratio, target, met, rows):

- ``tumbling``, ``slide10``, ``slide1``: 60 s windows, tumbling and sliding by 10 s and 1 s:
  ``window_aggregate(df, "k", "ts", aggs, size=..., slide=...)`` against
  ``groupBy("k", window("ts", size, slide)).agg(...)``; sum, count, min, max, avg
  (targets: at least 1.0x, 2x, 5x Spark's speed);
- ``stats``: the same three windows, at one rate (10), with sum, stddev, first and last
  (Spark: ``stddev``, and ``min_by``/``max_by(v, ts)`` for the oldest/newest value in event
  time: Spark's own ``first()``/``last()`` take whatever row reaches them first, the
  operator's follow event time);
- ``many``: three windows (1 min/10 s, 5 min/30 s, 1 h/1 min) in one ``window_aggregate(...,
  windows={...})`` call against three ``window()`` queries, one after the other (at least 3x);
  an operator without ``windows=`` runs one call per window (``many_windows`` picks);
- ``sessions``: ``window_aggregate(..., session_gap="30 seconds")`` against
  ``groupBy("k", session_window("ts", "30 seconds"))`` (at least 1.0x); at 0.5 and 10
  events/s/key each key is one long session, so 0.02 (many short sessions) is run as well;
- ``sweep``: the cost against size/slide: a 1 s slide and sizes of 1 to 600 s, both
  competitors, one plot (seconds against the ratio, log x); the claim: the operator's time
  stays within 2x of its smallest, Spark's grows with the ratio.

Each query is written to Spark's ``noop`` sink (the whole plan runs, nothing is collected)
and timed; competitors alternate which runs first within each round (this VM's speed swings
within seconds) and the medians are reported. Then the rows are compared as sets keyed by
(key, window start, window end): the same column types, the same row count, every row on
both sides, exact values, doubles to a relative 1e-9.

    python -m benchmarks.spark_windows                       # everything (~30 min on 2 quiet cores)
    python -m benchmarks.spark_windows --quick               # smoke run, under a minute
    python -m benchmarks.spark_windows --shapes slide1 --rates 10 --rounds 3
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from benchmarks import common

KEY, TIME = "k", "ts"
AGGS = {"s": ("v", "sum"), "n": ("v", "count"), "lo": ("v", "min"), "hi": ("v", "max"), "a": ("v", "avg")}
STATS_AGGS = {"s": ("v", "sum"), "sd": ("v", "stddev"), "f": ("v", "first"), "l": ("v", "last")}
SIZE = "60 seconds"
#: shape -> (slide of the 60 s window, target: Spark's time / ours at least this)
SLIDES = {"tumbling": ("60 seconds", 1.0), "slide10": ("10 seconds", 2.0), "slide1": ("1 second", 5.0)}
#: the many-window shape's windows: name -> (size, slide)
MANY = {"1m": ("1 minute", "10 seconds"), "5m": ("5 minutes", "30 seconds"), "1h": ("1 hour", "1 minute")}
MANY_TARGET = 3.0
GAP, SESSION_TARGET = "30 seconds", 1.0
RATIOS = [1, 2, 5, 10, 30, 60, 120, 300, 600]
SWEEP_SLIDE = 1  # seconds
SWEEP_SPREAD = 2.0  # the operator's slowest sweep point / its fastest, at most
SHAPES = ["tumbling", "slide10", "slide1", "stats", "many", "sessions", "sweep"]
TOLERANCE = 1e-9  # relative, for doubles


# --------------------------------------------------------------------------- data

def dataset(spark: Any, events: int, keys: int, rate: float) -> Any:
    """``events`` rows (k, ts, v), cached: ``rate`` events per second per key at uniformly
    random times; times unique within a key (the whole second is random, the microseconds
    are the event's number within its key, so at most 1,000,000 events per key)."""
    from pyspark.sql import functions as F

    span = round(events / keys / rate)  # seconds
    nth = F.floor(F.col("id") / keys)  # the event's number within its key
    micros = (F.rand(1) * span).cast("long") * 1_000_000 + nth % 1_000_000
    return spark.range(events).select(
        F.concat(F.lit(KEY), (F.col("id") % keys).cast("string")).alias(KEY),
        F.timestamp_micros(micros).alias(TIME),
        (F.rand(2) * 1000).cast("long").alias("v")).cache()


# --------------------------------------------------------------------------- Spark's queries

def spark_aggregations(aggs: Mapping[str, tuple]) -> list[Any]:
    """Spark's columns for the operator's ``aggs`` (name -> (column, how)). ``first``/``last``
    become ``min_by``/``max_by`` of the event time: the operator's are in event time."""
    from pyspark.sql import functions as F

    plain = {"sum": F.sum, "count": F.count, "min": F.min, "max": F.max, "avg": F.avg, "stddev": F.stddev}
    by_time = {"first": F.min_by, "last": F.max_by}
    columns = []
    for name, (column, how) in aggs.items():
        if how in by_time:
            columns.append(by_time[how](column, TIME).alias(name))
        else:
            columns.append(plain[how](column).alias(name))
    return columns


def native(df: Any, size: str, slide: str, aggs: Mapping[str, tuple] = AGGS) -> Any:
    """Spark's ``groupBy(k, window(ts, size, slide)).agg(...)``: keys, ``window``, aggregations."""
    from pyspark.sql import functions as F

    return df.groupBy(KEY, F.window(TIME, size, slide)).agg(*spark_aggregations(aggs))


def native_sessions(df: Any, gap: str, aggs: Mapping[str, tuple] = AGGS) -> Any:
    """Spark's ``groupBy(k, session_window(ts, gap)).agg(...)``."""
    from pyspark.sql import functions as F

    return df.groupBy(KEY, F.session_window(TIME, gap)).agg(*spark_aggregations(aggs))


# --------------------------------------------------------------------------- the operator on many windows

def many_windows(window_aggregate: Callable[..., Any], df: Any, aggs: Mapping[str, tuple],
                 windows: Mapping[str, tuple[str, str]]) -> tuple[list[Any], dict[str, Any], str]:
    """The operator on several windows: the DataFrames that compute them (timed together),
    each window's rows (in Spark's schema), and how they were computed.

    The one place that chooses: one ``windows={...}`` call when the operator takes it
    (one DataFrame with ``window_name``), else one call per window (the stand-in)."""
    from pyspark.sql import functions as F

    if "windows" in inspect.signature(window_aggregate).parameters:
        out = window_aggregate(df, KEY, TIME, aggs, windows=dict(windows))
        parts = {name: out.where(F.col("window_name") == name).drop("window_name") for name in windows}
        return [out], parts, "one windows= call"
    parts = {name: window_aggregate(df, KEY, TIME, aggs, size=size, slide=slide)
             for name, (size, slide) in windows.items()}
    return list(parts.values()), parts, f"stand-in: {len(parts)} calls"


# --------------------------------------------------------------------------- timing

def timed(df: Any) -> float:
    """Seconds to run ``df``'s whole plan into the noop sink."""
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def alternating(ours: Sequence[Any], theirs: Sequence[Any], rounds: int) -> tuple[list[float], list[float]]:
    """Each side's seconds per round (a side: DataFrames run one after the other, their times
    summed); which side runs first alternates by round."""
    mine: list[float] = []
    spark: list[float] = []
    for r in range(rounds):
        order = [(mine, ours), (spark, theirs)] if r % 2 == 0 else [(spark, theirs), (mine, ours)]
        for times, frames in order:
            times.append(sum(timed(df) for df in frames))
    return mine, spark


# --------------------------------------------------------------------------- identical rows

def flatten(df: Any, aggs: Mapping[str, tuple]) -> Any:
    """Keys, ``window_start``, ``window_end`` (from ``window`` or ``session_window``), the aggregations."""
    from pyspark.sql import functions as F

    struct = "session_window" if "session_window" in df.columns else "window"
    return df.select(KEY, F.col(f"{struct}.start").alias("window_start"), F.col(f"{struct}.end").alias("window_end"),
                     *aggs)


def same(ours: Any, theirs: Any, aggs: Mapping[str, tuple]) -> tuple[int, bool, str]:
    """Our row count, whether our rows are Spark's, and what differs (empty when nothing):
    both as sets keyed by (key, start, end): the same column types, every key on both sides
    and once (a full outer join: Spark's keys are unique, so the join has as many rows as
    distinct keys only if ours are unique too), every value equal, doubles to a relative
    1e-9 (NaN equals NaN, null equals null). One Spark job when the rows agree."""
    from pyspark.sql import functions as F

    o, t = flatten(ours, aggs), flatten(theirs, aggs)
    if o.dtypes != t.dtypes:
        return -1, False, f"column types differ: ours {o.dtypes}, Spark's {t.dtypes}"
    on = [KEY, "window_start", "window_end"]
    joined = (o.withColumn("mta_ours", F.lit(True)).alias("o")
              .join(t.withColumn("mta_spark", F.lit(True)).alias("t"), on, "full_outer"))
    agree = F.col("mta_ours").isNotNull() & F.col("mta_spark").isNotNull()
    for name, kind in o.dtypes[3:]:
        a, b = F.col(f"o.{name}"), F.col(f"t.{name}")
        equal = a.eqNullSafe(b)
        if kind in ("double", "float"):
            equal = equal | (F.abs(a - b) <= TOLERANCE * F.greatest(F.abs(a), F.abs(b)))
        agree = agree & F.coalesce(equal, F.lit(False))
    joined = joined.withColumn("mta_agree", agree)
    summary = joined.agg(F.count("mta_ours").alias("ours"), F.count("mta_spark").alias("spark"),
                         F.count(F.lit(1)).alias("joined"), F.count_distinct(*on).alias("distinct"),
                         F.sum((~F.col("mta_agree")).cast("long")).alias("bad")).first()
    count = summary["ours"]
    problems = []
    if summary["joined"] != summary["distinct"]:
        problems.append(f"{summary['joined'] - summary['distinct']:,} repeated (key, start, end)")
    if summary["bad"]:
        examples = joined.where(~F.col("mta_agree")).limit(3).collect()
        problems.append(f"{summary['bad']:,} rows differ or are missing ({count:,} rows, Spark {summary['spark']:,}), "
                        "e.g. " + "; ".join(str(r.asDict()) for r in examples))
    return count, not problems, "; ".join(problems)


# --------------------------------------------------------------------------- one shape

def measure(run_: common.Run, shape: str, rate: float, ours: Sequence[Any], parts: Mapping[str, tuple[Any, Any]],
            aggs: Mapping[str, tuple], target: float | None, rounds: int, **extra: Any) -> dict[str, Any]:
    """Time ``ours`` (the operator's DataFrames) against Spark's (the second of each of
    ``parts``: name -> (our rows, Spark's rows)), then check every part's rows; one result row."""
    theirs = [spark for _, spark in parts.values()]
    mine, spark = alternating(ours, theirs, rounds)
    rows, ok, diffs = 0, True, []
    for name, (o, t) in parts.items():
        count, same_rows, diff = same(o, t, aggs)
        rows += max(count, 0)
        ok = ok and same_rows
        if diff:
            diffs.append(f"{name}: {diff}" if len(parts) > 1 else diff)
    t_ours, t_spark = statistics.median(mine), statistics.median(spark)
    speedup = t_spark / t_ours
    row = {"shape": shape, "rate": rate, "ours_s": t_ours, "spark_s": t_spark, "ratio": speedup, "target": target,
           "met": None if target is None else speedup >= target, "rows": rows, "identical": ok,
           "ours_all": mine, "spark_all": spark, **extra}
    if diffs:
        row["differences"] = diffs
    run_.log(f"{shape:>24} {rate:>5} ev/s/key: ours {t_ours:7.2f} s, Spark {t_spark:7.2f} s ({speedup:.2f}x"
             f"{'' if target is None else f', target {target}x'}), {rows:,} rows, identical: {ok}"
             + (f" ({'; '.join(diffs)})" if diffs else ""))
    return row


def window_rows(run_: common.Run, window_aggregate: Callable[..., Any], df: Any, rate: float, shape: str,
                size: str, slide: str, aggs: Mapping[str, tuple], target: float | None, rounds: int,
                **extra: Any) -> dict[str, Any]:
    """One sliding (or tumbling) window: the operator against Spark's ``window()``."""
    ours = window_aggregate(df, KEY, TIME, aggs, size=size, slide=slide)
    return measure(run_, shape, rate, [ours], {"": (ours, native(df, size, slide, aggs))}, aggs, target, rounds,
                   size=size, slide=slide, **extra)


def warm_up(window_aggregate: Callable[..., Any], df: Any) -> None:
    """Run each competitor once, untimed (JIT, Python workers)."""
    timed(window_aggregate(df, KEY, TIME, AGGS, size=SIZE, slide="10 seconds"))
    timed(native(df, SIZE, "10 seconds"))


def run_rate(run_: common.Run, window_aggregate: Callable[..., Any], df: Any, rate: float, shapes: set[str],
             rounds: int, stats_slides: Sequence[str]) -> list[dict[str, Any]]:
    """Every shape but ``sweep`` and ``sessions`` at one rate (``stats`` on ``stats_slides``)."""
    rows = []
    for shape, (slide, target) in SLIDES.items():
        if shape in shapes:
            rows.append(window_rows(run_, window_aggregate, df, rate, shape, SIZE, slide, AGGS, target, rounds))
    for shape in stats_slides if "stats" in shapes else []:
        slide, target = SLIDES[shape]
        rows.append(window_rows(run_, window_aggregate, df, rate, f"{shape} +stddev,first,last", SIZE, slide,
                                STATS_AGGS, target, rounds))
    if "many" in shapes:
        ours, parts, how = many_windows(window_aggregate, df, AGGS, MANY)
        spark = {name: native(df, size, slide) for name, (size, slide) in MANY.items()}
        rows.append(measure(run_, f"many: {', '.join(MANY)}", rate, ours,
                            {name: (parts[name], spark[name]) for name in MANY}, AGGS, MANY_TARGET, rounds,
                            how=how))
    return rows


def sessions_row(run_: common.Run, window_aggregate: Callable[..., Any], df: Any, rate: float,
                 rounds: int) -> dict[str, Any]:
    ours = window_aggregate(df, KEY, TIME, AGGS, session_gap=GAP)
    return measure(run_, f"sessions, {GAP} gap", rate, [ours], {"": (ours, native_sessions(df, GAP))}, AGGS,
                   SESSION_TARGET, rounds)


def sweep(run_: common.Run, window_aggregate: Callable[..., Any], df: Any, rate: float, ratios: Sequence[int],
          rounds: int) -> list[dict[str, Any]]:
    """The cost against size/slide: a 1 s slide, sizes ``ratio`` seconds."""
    slide = f"{SWEEP_SLIDE} second{'s' if SWEEP_SLIDE != 1 else ''}"
    return [window_rows(run_, window_aggregate, df, rate, f"sweep: size/slide {r}", f"{r * SWEEP_SLIDE} seconds",
                        slide, AGGS, None, rounds, size_over_slide=r) for r in ratios]


# --------------------------------------------------------------------------- output

HEADERS = ["shape", "events/s/key", "ours s", "Spark s", "Spark / ours", "target", "met", "rows", "identical"]


def table_row(r: Mapping[str, Any]) -> list[Any]:
    met = "–" if r["met"] is None else ("yes" if r["met"] else "NO")
    return [r["shape"] + (f" ({r['how']})" if "how" in r else ""), r["rate"], r["ours_s"], r["spark_s"],
            f"{r['ratio']:.2f}x", "–" if r["target"] is None else f"≥ {r['target']}x", met, r["rows"],
            "yes" if r["identical"] else "NO"]


def sweep_targets(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Per rate: the operator's slowest / fastest sweep time (at most 2) and Spark's (grows)."""
    out = []
    for rate in sorted({r["rate"] for r in rows}):
        mine = [r for r in rows if r["rate"] == rate]
        if len(mine) < 2:
            continue
        ours = max(r["ours_s"] for r in mine) / min(r["ours_s"] for r in mine)
        spark = max(r["spark_s"] for r in mine) / min(r["spark_s"] for r in mine)
        first, last = min(mine, key=lambda r: r["size_over_slide"]), max(mine, key=lambda r: r["size_over_slide"])
        out.append([f"operator's slowest / fastest over size/slide {first['size_over_slide']}-"
                    f"{last['size_over_slide']} ({rate} ev/s/key)", f"{ours:.2f}", f"≤ {SWEEP_SPREAD}",
                    "yes" if ours <= SWEEP_SPREAD else "NO"])
        out.append([f"Spark's time at the largest ratio / the smallest ({rate} ev/s/key)",
                    f"{last['spark_s'] / first['spark_s']:.2f} (slowest / fastest {spark:.2f})", "grows",
                    "yes" if last["spark_s"] > first["spark_s"] else "NO"])
    return out


def plot_sweep(path: Path, rows: Sequence[Mapping[str, Any]], events: int) -> None:
    lines = {}
    for rate in sorted({r["rate"] for r in rows}):
        mine = sorted((r for r in rows if r["rate"] == rate), key=lambda r: r["size_over_slide"])
        xs = [r["size_over_slide"] for r in mine]
        lines[f"window_aggregate, {rate} ev/s/key"] = (xs, [r["ours_s"] for r in mine])
        lines[f"Spark window(), {rate} ev/s/key"] = (xs, [r["spark_s"] for r in mine])
    common.plot_lines(path, lines, title=f"{events:,} events, {SWEEP_SLIDE} s slide: cost against size / slide",
                      xlabel="window size / slide", ylabel="seconds (median)", logx=10, logy=False)


# --------------------------------------------------------------------------- main

def shape_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in SHAPES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown shape {', '.join(bad) or repr(text)}; "
                                         f"choose from {', '.join(SHAPES)}")
    return names


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Run the benchmark; ``spark``: a session to use (and leave running), else a local one."""
    p = common.parser(__doc__)
    p.add_argument("--events", type=int, default=None, help="events (full: 2,000,000, quick: 2,000)")
    p.add_argument("--keys", type=int, default=None, help="keys (full: 100, quick: 4)")
    p.add_argument("--rates", type=float, nargs="+", default=None,
                   help="events per second per key (full: 0.5 10, quick: 0.1)")
    p.add_argument("--session-rates", type=float, nargs="+", default=None,
                   help="rates of the sessions shape (full: 0.02 0.5 10, quick: 0.1)")
    p.add_argument("--stats-rate", type=float, default=None,
                   help="the rate of the stats shape, one of --rates (default: the largest)")
    p.add_argument("--sweep-rates", type=float, nargs="+", default=None,
                   help="rates of the size/slide sweep (full: 10, quick: 0.1)")
    p.add_argument("--ratios", type=int, nargs="+", default=None,
                   help=f"size/slide of the sweep (full: {' '.join(map(str, RATIOS))}; quick: 1 60)")
    p.add_argument("--shapes", type=shape_list, default=SHAPES, help=f"comma-separated subset of {','.join(SHAPES)}")
    p.add_argument("--rounds", type=int, default=None,
                   help="timings per competitor, alternating which goes first; medians (full: 2, quick: 1)")
    args = p.parse_args(argv)
    quick = args.quick
    events = args.events or (2_000 if quick else 2_000_000)
    keys = args.keys or (4 if quick else 100)
    # quick: one dataset for every shape, sparse enough for ~100 sessions
    rates = args.rates or ([0.1] if quick else [0.5, 10.0])
    session_rates = args.session_rates or ([0.1] if quick else [0.02, 0.5, 10.0])
    sweep_rates = args.sweep_rates or ([0.1] if quick else [10.0])
    ratios = args.ratios or ([1, 60] if quick else RATIOS)
    rounds = args.rounds or (1 if quick else 2)
    shapes = set(args.shapes)
    stats_slides = ["slide10"] if quick else list(SLIDES)
    stats_rate = args.stats_rate or max(rates)
    if stats_rate not in rates:
        p.error(f"--stats-rate {stats_rate}: not one of --rates {rates}")
    run_ = common.Run("spark_windows", args, {
        "events": events, "keys": keys, "rates": rates, "session_rates": session_rates, "sweep_rates": sweep_rates,
        "ratios": ratios, "stats_rate": stats_rate, "rounds": rounds, "shapes": args.shapes, "size": SIZE,
        "many": MANY, "gap": GAP, "aggregations": AGGS, "stats_aggregations": STATS_AGGS})

    from spark_integration import window_aggregate
    from spark_integration.session import local_session

    own = spark is None
    if own:
        spark = local_session("mta-bench", shuffle_partitions=8)
    rows: list[dict[str, Any]] = []
    sweep_rows: list[dict[str, Any]] = []
    wanted = set(rates if shapes - {"sessions", "sweep"} else []) | set(
        session_rates if "sessions" in shapes else []) | set(sweep_rates if "sweep" in shapes else [])
    for i, rate in enumerate(sorted(wanted)):
        df = dataset(spark, events, keys, rate)
        df.count()  # cached before any timing
        if i == 0 and not quick:  # quick: the first shape pays it
            warm_up(window_aggregate, df)
        if rate in rates:
            rows += run_rate(run_, window_aggregate, df, rate, shapes, rounds,
                             stats_slides if rate == stats_rate else [])
        if "sessions" in shapes and rate in session_rates:
            rows.append(sessions_row(run_, window_aggregate, df, rate, rounds))
        if "sweep" in shapes and rate in sweep_rates:
            sweep_rows += sweep(run_, window_aggregate, df, rate, ratios, rounds)
        df.unpersist()
    if own:
        spark.stop()

    title = f"{events:,} events, {keys} keys; median of {rounds} alternating round{'s' * (rounds > 1)} (local[*])"
    if rows:
        run_.table(f"Shapes: {title}", HEADERS, [table_row(r) for r in rows])
    if sweep_rows:
        run_.table(f"Cost against size/slide ({SWEEP_SLIDE} s slide): {title}", HEADERS,
                   [table_row(r) for r in sweep_rows])
        run_.table("Sweep claims", ["claim", "measured", "target", "met"], sweep_targets(sweep_rows))
    everything = rows + sweep_rows
    run_.data["results"] = everything
    columns = ["shape", "rate", "ours_s", "spark_s", "ratio", "target", "met", "rows", "identical"]
    run_.finish(columns, [[r[c] for c in columns] for r in everything])
    if sweep_rows and not args.no_plot:
        plot_sweep(run_.path(".png"), sweep_rows, events)
    run_.write_markdown("Times are seconds (noop sink); ratio = Spark's time / ours; rows = result rows "
                         "(every window of a shape), checked identical to Spark's. "
                         + ("The plot of the sweep: " + run_.path(".png").name if sweep_rows else ""))
    return 0 if all(r["identical"] for r in everything) else 1


if __name__ == "__main__":
    sys.exit(main())
