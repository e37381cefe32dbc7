"""first/last on the fast batch path fold by one long per event (its offset in its slice over
its row in its input partition, :data:`spark_integration.slicing.ORDER`), per input partition,
so that Spark hash-aggregates them; the stage folds a pane's partitions. Ties of event time
are the hard case: they go by arrival order (the input's row order) across partitions, within
a partition, and across the high offset bits of slices longer than 2**30 microseconds.
Spark's ``min_by``/``max_by`` by (time, row number) is the oracle."""

from __future__ import annotations

import random

import pytest

from spark_integration import window_aggregate
from spark_integration.slicing import OFFSET_BITS

AGGS = {"f": ("v", "first"), "l": ("v", "last"), "fi": ("v", "first_ignore_nulls"),
        "li": ("v", "last_ignore_nulls"), "fs": ("s", "first"), "n": ("v", "count"), "sd": ("x", "stddev")}
BASE = 1_700_000_000  # seconds


def events(spark, seed: int, partitions: int):
    """Few distinct times (many equal ones, in every partition), nulls among the values."""
    from pyspark.sql import functions as F

    rng = random.Random(seed)
    moments = [0, 0.5, 1, 1, 7.25, 1199, 1200, 1500, 3599.999999, 3600, 5000]
    rows = [(f"k{rng.randrange(3)}", int((BASE + rng.choice(moments)) * 1_000_000),
             None if rng.random() < 0.3 else rng.randrange(100), str(rng.randrange(10)), rng.random() * 10)
            for _ in range(600)]
    df = spark.sparkContext.parallelize(rows, partitions).toDF("k string, us bigint, v bigint, s string, x double")
    return (df.select("k", F.timestamp_micros("us").alias("ts"), "v", "s", "x")
            .withColumn("seq", F.monotonically_increasing_id()).cache())


def oracle(df, window):
    from pyspark.sql import functions as F

    order = F.struct("ts", "seq")
    taken = F.when(F.col("v").isNotNull(), order)
    return df.groupBy("k", window).agg(
        F.min_by("v", order).alias("f"), F.max_by("v", order).alias("l"), F.min_by("v", taken).alias("fi"),
        F.max_by("v", taken).alias("li"), F.min_by("s", order).alias("fs"), F.count("v").alias("n"),
        F.stddev("x").alias("sd"))


def table(df) -> list[tuple]:
    out = []
    for r in df.collect():
        d = r.asDict()
        w = d.pop("window", None) or d.pop("session_window")
        out.append((d["k"], w.start, w.end, *[d[a] for a in AGGS if a != "sd"],
                    None if d["sd"] is None else round(d["sd"], 9)))
    return sorted(out, key=repr)


@pytest.mark.parametrize("partitions", [1, 4])
@pytest.mark.parametrize("shape", ["tumbling", "sliding", "hours", "session"])
def test_first_and_last_break_time_ties_by_arrival_as_sparks_min_by_of_time_and_row(spark, shape, partitions):
    from pyspark.sql import functions as F

    df = events(spark, seed=len(shape) * 10 + partitions, partitions=partitions)
    spec = {"tumbling": ("10 seconds",), "sliding": ("20 seconds", "5 seconds"), "hours": ("2 hours", "1 hour"),
            "session": None}[shape]
    if spec is None:
        ours = window_aggregate(df, "k", "ts", AGGS, session_gap="10 minutes")
        theirs = oracle(df, F.session_window("ts", "10 minutes"))
    else:
        ours = window_aggregate(df, "k", "ts", AGGS, size=spec[0], slide=spec[-1])
        theirs = oracle(df, F.window("ts", *spec))
    got, want = table(ours), table(theirs)
    assert got == want and len(got) > 3


def test_first_and_last_of_numbers_are_a_hash_aggregation(spark):
    """A struct's min (the tie order without the packed long) is a sort aggregation; a string
    value is one too (Spark hash-aggregates fixed-width buffers only)."""
    numbers = {a: spec for a, spec in AGGS.items() if spec[0] != "s"}
    df = events(spark, seed=3, partitions=2)
    plan = window_aggregate(df, "k", "ts", numbers, size="10 seconds")._jdf.queryExecution().executedPlan()
    assert "SortAggregate" not in plan.toString() and "min_by" in plan.toString()


def test_slices_longer_than_the_offset_bits_split_by_high_bits(spark):
    """An hour is more than 2**30 microseconds: the slices fold per high offset too."""
    from pyspark.sql import functions as F

    assert 3600 * 10**6 > 1 << OFFSET_BITS
    df = events(spark, seed=7, partitions=3)
    ours = window_aggregate(df, "k", "ts", AGGS, size="1 hour")
    assert "mta_high" in ours._jdf.queryExecution().optimizedPlan().toString()
    assert table(ours) == table(oracle(df, F.window("ts", "1 hour")))


@pytest.mark.parametrize("kind", ["first", "last", "first_ignore_nulls", "last_ignore_nulls", "min_by", "max_by"])
def test_the_stage_folds_a_panes_slices_in_time_and_row_order_whatever_order_they_come_in(kind):
    """The slices of one pane (one per input partition) reach the stage in shuffle order;
    folding them must not depend on it."""
    import numpy as np

    from mta.columnar import KINDS
    from mta.columnar.windows import runs
    from spark_integration.columnar import _one_per_pane

    rng = np.random.default_rng(5)
    rows = 400
    pane = np.sort(rng.integers(0, 40, rows))
    t = pane * 10 + rng.integers(0, 3, rows)  # ties of time within a pane
    seq = rng.permutation(rows).astype(np.int64)  # rows of a pane in no particular order
    values, nulls = np.arange(rows), rng.random(rows) < 0.3
    order = rng.integers(0, 3, rows)
    lifted = KINDS[kind].lift(values, nulls, t, seq, order, np.zeros(rows, dtype=bool))
    starts = runs(np.zeros(rows, dtype=np.int64), pane)
    values_, nulls_ = KINDS[kind].lower(_one_per_pane(KINDS[kind], lifted, starts))
    got = [None if z else int(v) for v, z in zip(values_, nulls_)]
    want = []  # each pane's pick, one row at a time
    for p in np.unique(pane):
        rows_ = [r for r in np.flatnonzero(pane == p) if not (kind.endswith("ignore_nulls") and nulls[r])]
        key = {"first": lambda r: (t[r], seq[r]), "last": lambda r: (-t[r], -seq[r]),
               "min_by": lambda r: (order[r], t[r], seq[r]), "max_by": lambda r: (-order[r], t[r], seq[r])}[
            kind.replace("_ignore_nulls", "")]
        best = min(rows_, key=key) if rows_ else None
        want.append(None if best is None or nulls[best] else int(values[best]))
    assert got == want and sum(v is not None for v in want) > 5


@pytest.mark.parametrize("how, value", [("first", 0), ("sum", 3)])
@pytest.mark.parametrize("shape, windows", [(dict(size="60 seconds", slide="10 seconds"), 6),
                                            (dict(size="10 seconds"), 1), (dict(session_gap="30 seconds"), 1)])
def test_empty_shuffle_partitions_give_no_rows_and_no_error(spark, how, value, shape, windows):
    """Without adaptive execution most of the stage's partitions hold no slice (one key):
    mapInArrow hands the stage no batch at all there (found from outside: a crash)."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame([("a", i, i) for i in range(3)], "k string, s long, v long") \
        .select("k", F.timestamp_seconds("s").alias("ts"), "v")
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        got = window_aggregate(df, ["k"], "ts", {"x": ("v", how)}, **shape).collect()
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    assert [r.x for r in got] == [value] * windows  # every window holds the three events


def test_stages_take_a_partition_with_no_batch():
    from spark_integration.columnar import Fold, Query, Stage
    from spark_integration.slicing import Sliced

    sliced = [Sliced("x", "sum", ("v",), "bigint", "bigint")]
    assert list(Stage(["k"], sliced, [Query("w", 60, 10)], 10, 0, False, False)(iter([]))) == []
    assert list(Fold(["k"], "t", sliced, 10, 0)(iter([]))) == []


def test_null_times_do_not_change_which_row_a_tie_takes(spark):
    """The operator numbers rows before it drops null times: a filter below the numbering
    would be pushed under the input's round-robin repartition and deal the rows, so number
    them, differently from the input's own order (found from outside)."""
    from pyspark.sql import functions as F

    rows = [("a", None if i % 10 == 0 else i % 3, i) for i in range(300)]
    df = spark.createDataFrame(rows, "k string, s long, v long").repartition(3) \
        .select("k", F.timestamp_seconds("s").alias("ts"), "v").withColumn("seq", F.monotonically_increasing_id())
    got = window_aggregate(df, ["k"], "ts", {"f": ("v", "first"), "l": ("v", "last")}, size="60 seconds",
                           slide="10 seconds")
    order = F.struct("ts", "seq")
    want = df.where("ts IS NOT NULL").groupBy("k", F.window("ts", "60 seconds", "10 seconds")).agg(
        F.min_by("v", order).alias("f"), F.max_by("v", order).alias("l"))
    assert sorted(got.select("window.start", "f", "l").collect()) == \
        sorted(want.select("window.start", "f", "l").collect())
