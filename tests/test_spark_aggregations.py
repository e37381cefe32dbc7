"""The aggregations against Spark's own: every built-in over every type it takes, on
seeded data with nulls, NaN, negative values, duplicate and boundary timestamps, in
batch and streaming, result types included; bad calls refused at call time; the new
monoids' laws; the quantile sketch's rank error."""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import time
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from conftest import hsettings
from kvs import codec
from spark_integration import window_aggregate
from spark_integration.aggregations import parse
from spark_integration.spark_monoids import NAN, Distinct, Quantiles, SparkMax, SparkMaxBy, SparkMin, SparkMinBy, \
    SparkSum, kll_k, rank_error

SCHEMA = ("seq long, k string, ts timestamp, ti tinyint, i int, l long, f float, d double, dec decimal(12,3), "
          "wide decimal(38,10), s string, dt date, tv timestamp, nv timestamp_ntz, b boolean, o double")
UTC = dt.timezone.utc
#: 01:30 in New York twice (summer time, then winter time): one wall clock, two instants.
AMBIGUOUS = [dt.datetime(2020, 11, 1, 5, 30, tzinfo=UTC), dt.datetime(2020, 11, 1, 6, 30, tzinfo=UTC)]


def rows(n: int, seed: int, span: int = 120) -> list[tuple]:
    """Generated events: times in whole seconds (duplicates, window boundaries), values
    null one time in five, NaN in the floats, negatives, longs beyond 2**53, and a key
    ``c`` whose values are all null."""
    rng = random.Random(seed)

    def maybe(value):
        return None if rng.random() < 0.2 else value

    out = []
    for seq in range(n):
        k = rng.choice("aabbc")
        t = rng.choice([0, 10, 20, 30, rng.randrange(span)])  # 10 s boundaries, often
        floats = [rng.choice([math.nan, rng.uniform(-1e3, 1e3), -0.0, float(rng.randrange(-5, 5))]) for _ in range(2)]
        values = (rng.randrange(-128, 128), rng.randrange(-10**6, 10**6),
                  rng.choice([rng.randrange(-2**60, 2**60) // 64, rng.randrange(-9, 9)]), floats[0], floats[1],
                  Decimal(rng.randrange(-10**9, 10**9)).scaleb(-3), Decimal(rng.randrange(-10**27, 10**27)).scaleb(-10),
                  rng.choice(["", "a", "b", "é", "ab", "Z"]), dt.date(1969, 12, 25) + dt.timedelta(days=rng.randrange(20)),
                  rng.choice(AMBIGUOUS + [dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
                                          dt.datetime(2262, 5, 1, 0, 0, 0, 1, tzinfo=UTC)]),
                  rng.choice([dt.datetime(2020, 3, 8, 2, 30), dt.datetime(2020, 11, 1, 1, 30, 0, 5),
                              dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999_999)]),
                  rng.choice([True, False]))
        values = tuple(None if k == "c" else maybe(v) for v in values)
        out.append((seq, k, dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=t), *values,
                    maybe(rng.random())))  # o: an order without ties (min_by/max_by ties are Spark's choice)
    return out


def frame(spark, data):
    return spark.createDataFrame(data, SCHEMA)


NUMBERS = ["ti", "i", "l", "f", "d", "dec", "wide"]
ALL = NUMBERS + ["s", "dt", "tv", "nv", "b"]


def specs() -> dict[str, tuple]:
    """Output name -> our aggregation; every built-in over every type it takes."""
    out: dict[str, tuple] = {}
    for c in NUMBERS:
        out |= {f"sum_{c}": (c, "sum"), f"avg_{c}": (c, "avg")}
    for c in ("i", "l", "d", "dec"):
        out |= {f"{m}_{c}": (c, m) for m in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp",
                                             "var_pop")}
    for c in ALL:
        out |= {f"{m}_{c}": (c, m) for m in ("min", "max", "first", "last")}
    for c in ("f", "dec", "s", "tv"):
        out |= {f"{m}_{c}": (c, m) for m in ("count", "first_ignore_nulls", "last_ignore_nulls")}
    for c in ("d", "s", "nv"):  # each distinct aggregate is an Expand in Spark's plan: a few
        out[f"count_distinct_{c}"] = (c, "count_distinct")
    for c in ("l", "dec", "s", "dt", "tv", "nv", "b"):  # not floats: NaN inside arrays comes out null (pyspark)
        out[f"collect_list_{c}"] = (c, "collect_list")
    for c in ("d", "s", "tv", "dec"):
        out |= {f"min_by_{c}": ((c, "o"), "min_by"), f"max_by_{c}": ((c, "o"), "max_by")}
    return out


def native(df, names: dict[str, tuple], size: str, slide: str):
    """Spark's own groupBy(k, window(...)).agg(...) for ``names``. first/last in event
    time (ties: arrival order, ``seq``) are min_by/max_by over (ts, seq): Spark's own
    first() takes whatever order rows reach it."""
    from pyspark.sql import functions as F

    when = F.struct("ts", "seq")
    exprs = []
    for name, (column, how) in names.items():
        if how in ("first", "last", "first_ignore_nulls", "last_ignore_nulls"):
            order = when if not how.endswith("ignore_nulls") else F.when(F.col(column).isNotNull(), when)
            e = (F.min_by if how.startswith("first") else F.max_by)(column, order)
        elif how == "collect_list":
            e = F.transform(F.array_sort(F.collect_list(F.when(F.col(column).isNotNull(),
                                                               F.struct("ts", "seq", column)))), lambda x: x[column])
        elif how in ("min_by", "max_by"):
            e = getattr(F, how)(*column)
        else:
            e = getattr(F, how)(column)
        exprs.append(e.alias(name))
    return df.groupBy("k", F.window("ts", size, slide)).agg(*exprs).select(
        "k", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), *names)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b and type(a) is type(b)


def assert_rows_equal(ours, theirs, names) -> None:
    key = lambda r: (r.k, r.window_start)  # noqa: E731
    ours, theirs = sorted(ours, key=key), sorted(theirs, key=key)
    assert [key(r) for r in ours] == [key(r) for r in theirs] and ours
    bad = [(key(a), n, a[n], b[n]) for a, b in zip(ours, theirs) for n in names if not same(a[n], b[n])]
    assert not bad, bad[:10]


def test_every_aggregation_and_type_equals_spark_row_for_row_under_a_non_utc_zone(spark) -> None:
    from pyspark.sql import functions as F

    names = specs()
    df = frame(spark, rows(500, seed=3))
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        ours = window_aggregate(df, "k", "ts", names, size="20 seconds", slide="10 seconds", flat=True)
        theirs = native(df, names, "20 seconds", "10 seconds")
        types = {f.name: f.dataType for f in theirs.schema.fields}
        assert {n: ours.schema[n].dataType for n in names} == {n: types[n] for n in names}  # Spark's result types
        # instants compared as microseconds: collect() would render them in the driver's zone
        micros = [F.unix_micros(n).alias(n) if str(types[n]) == "TimestampType()" else n for n in names]
        assert_rows_equal(ours.select("k", "window_start", *micros).collect(),
                          theirs.select("k", "window_start", *micros).collect(), names)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert spark.conf.get("spark.sql.session.timeZone") == zone


def exact_rank_gap(values: list, got, want) -> int:
    """How many of the sorted ``values`` lie between ``got`` and ``want``."""
    lo, hi = min(got, want), max(got, want)
    return sum(lo < v <= hi for v in values)


def test_percentile_approx_agrees_with_spark_and_the_exact_ranks_within_the_rank_error(spark) -> None:
    from pyspark.sql import functions as F

    rng = random.Random(11)
    base = dt.datetime(2000, 1, 1)
    data = [(seq, rng.choice("ab"), dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=rng.randrange(60)),
             None if rng.random() < 0.1 else rng.gauss(0, 100), rng.randrange(-10**6, 10**6),
             Decimal(rng.randrange(-10**6, 10**6)).scaleb(-2), base + dt.timedelta(microseconds=rng.randrange(10**15)),
             base.date() + dt.timedelta(days=rng.randrange(10**4))) for seq in range(2400)]
    df = spark.createDataFrame(data, "seq long, k string, ts timestamp, x double, n long, dec decimal(10,2), "
                                     "tv timestamp_ntz, day date")
    ps = [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0]
    checks = {"xs": ("x", ps, 100), "n": ("n", 0.5, 200), "dec": ("dec", ps, 50), "tv": ("tv", [0.1, 0.5], 100),
              "day": ("day", 0.5, 1000)}
    names = {name: (column, "percentile_approx", p, a) for name, (column, p, a) in checks.items()}
    ours = window_aggregate(df, "k", "ts", names, size="30 seconds", slide="10 seconds", flat=True)
    theirs = df.groupBy("k", F.window("ts", "30 seconds", "10 seconds")).agg(
        *(F.percentile_approx(c, p, a).alias(name) for name, (c, p, a) in checks.items())).select(
        "k", F.col("window.start").alias("window_start"), *names)
    # the types, but not the arrays' element nullability (ours are declared nullable)
    assert [ours.schema[n].dataType.simpleString() for n in names] == [
        theirs.schema[n].dataType.simpleString() for n in names]
    columns = ["x", "n", "dec", "tv", "day"]
    windows = {}
    for row in data:
        start = row[2].timestamp() // 10 * 10
        for s in (start - 20, start - 10, start):
            windows.setdefault((row[1], s), []).append(dict(zip(columns, row[3:])))
    key = lambda r: (r.k, r.window_start.replace(tzinfo=UTC).timestamp())  # noqa: E731
    ours, theirs = sorted(ours.collect(), key=key), sorted(theirs.collect(), key=key)
    assert [key(r) for r in ours] == [key(r) for r in theirs]
    worst = {name: 0.0 for name in names}
    for a, b in zip(ours, theirs):
        for name, (column, percentages, accuracy) in checks.items():
            values = sorted(e[column] for e in windows[key(a)] if e[column] is not None)
            bound = rank_error(kll_k(accuracy))
            many = isinstance(percentages, list)
            for p, mine, spark_value in zip(percentages if many else [percentages],
                                            a[name] if many else [a[name]], b[name] if many else [b[name]]):
                exact = values[max(1, math.ceil(p * len(values))) - 1]
                assert mine in values  # a value of the window, as Spark's
                gap = exact_rank_gap(values, mine, exact) / len(values)
                worst[name] = max(worst[name], gap)
                assert gap <= bound, (name, p, mine, exact, gap, bound)
                # and Spark's own answer (GK, error 1/accuracy) is as near the exact rank
                assert exact_rank_gap(values, mine, spark_value) / len(values) <= bound + 1 / accuracy
    assert worst["xs"] > 0 and worst["dec"] > 0  # the sketches did approximate (windows of ~1200 > k)


FLOAT = st.one_of(st.none(), st.just(math.nan), st.integers(-5, 5).map(float),
                  st.floats(allow_nan=False, allow_infinity=True, width=32))
ROWS = st.lists(st.tuples(FLOAT, FLOAT), max_size=8)  # (x, o)


def lifted(aggs, name: str, rows: list) -> list:
    """Partials of ``rows`` for aggregation ``name`` of ``aggs``, through a pandas frame
    as Spark sends it (values plus null masks)."""
    import pandas as pd

    frame = pd.DataFrame({f"mta_{part}_{c}": [(v is None) if part == "null" else 0.0 if v is None else v
                                              for v in (r[i] for r in rows)]
                          for i, c in enumerate("xo") for part in ("in", "null")})
    return [row[list(aggs.columns).index(name)] for row in aggs.lift(frame)]


def lowered(aggs, name: str, partial):
    """The Spark value of one partial (None for null)."""
    import pandas as pd

    column = aggs.lower(name, [partial])
    value = column[0] if isinstance(column, list) else column.iloc[0]
    if value is None or value is pd.NA:
        return None
    return value.item() if hasattr(value, "item") else value  # a numpy column's scalar as Python's


AGGS = parse({"sum": ("x", "sum"), "min": ("x", "min"), "max": ("x", "max"), "avg": ("x", "avg"),
              "var": ("x", "var_pop"), "n": ("x", "count"), "distinct": ("x", "count_distinct"),
              "first": ("x", "first_ignore_nulls"), "q": ("x", "percentile_approx", [0.5, 1.0]),
              "min_by": (("x", "o"), "min_by"), "max_by": (("x", "o"), "max_by")},
             {"x": "double", "o": "double"})


def spark_reference(name: str, rows: list):
    """Spark's result by its documented rules (NaN above every number, nulls skipped;
    min_by/max_by ties: the oldest, our documented choice)."""
    if name in ("min_by", "max_by"):
        ordered = [(o, i, x) for i, (x, o) in enumerate(rows) if o is not None]
        if not ordered:
            return None
        rank = lambda e: (math.isnan(e[0]), 0.0 if math.isnan(e[0]) else e[0])  # noqa: E731
        best = min(ordered, key=lambda e: (rank(e), e[1])) if name == "min_by" else \
            max(ordered, key=lambda e: (rank(e), -e[1]))
        return best[2]
    present = [x for x, _ in rows if x is not None]
    nan = [v for v in present if math.isnan(v)]
    numbers = sorted(v for v in present if not math.isnan(v))
    if name == "n":
        return len(present)
    if name == "distinct":
        return len(set(numbers)) + (1 if nan else 0)
    if not present:
        return None
    if name == "min":
        return numbers[0] if numbers else math.nan
    if name == "max":
        return math.nan if nan else numbers[-1]
    if name == "first":
        return present[0]
    ordered = numbers + nan  # "q"
    return [ordered[max(1, math.ceil(p * len(ordered))) - 1] for p in (0.5, 1.0)]


@given(st.lists(ROWS, min_size=1, max_size=5))
@hsettings(max_examples=150)
def test_spark_monoids_are_associative_and_follow_sparks_null_and_nan_rules(chunks) -> None:
    """Any grouping of the same rows gives the same result (associativity, the identity
    on both sides), through a msgpack round trip as in a state store; the result is
    Spark's rule for nulls and NaN."""
    whole = [r for chunk in chunks for r in chunk]
    xs = [x for x, _ in whole]
    for name, spec in AGGS.specs.items():
        monoid = spec.monoid
        left = monoid.identity
        for chunk in chunks:  # chunk partials folded left, each through the codec
            part = monoid.identity
            for p in lifted(AGGS, name, chunk):
                part = monoid.combine(part, p)
            left = monoid.combine(left, codec.unpack(codec.pack(part)))
        right = monoid.identity
        for p in reversed(lifted(AGGS, name, whole)):  # folded from the right
            right = monoid.combine(p, right)
        a, b = lowered(AGGS, name, left), lowered(AGGS, name, right)
        assert same(a, b), (name, a, b)
        if name not in ("sum", "avg", "var"):
            assert same(a, spark_reference(name, whole)), (name, whole, a)
        else:
            assert (a is None) == all(x is None for x in xs)
            assert not any(x is not None and math.isnan(x) for x in xs) or math.isnan(a)


def test_min_by_max_by_skip_null_orders_rank_nan_highest_and_keep_the_oldest_tie() -> None:
    for monoid in (SparkMinBy(), SparkMaxBy()):
        total = monoid.identity
        for p in [None, (2.0, "a"), (2.0, "b"), None]:
            total = monoid.combine(total, p)
        assert total == (2.0, "a")  # the tie keeps the oldest
    assert SparkMaxBy().combine((1e308, "x"), (NAN, "nan")) == (NAN, "nan")
    assert SparkMinBy().combine((NAN, "nan"), (-1e308, "y")) == (-1e308, "y")
    assert SparkMin().combine(SparkMin.identity, NAN) is NAN and SparkMax().combine(NAN, 5.0) is NAN
    assert SparkSum().combine(SparkSum.identity, 3) == 3 and Distinct().lower(("a", "b")) == 2
    assert Quantiles(200).fold(None, [1.0, None, 2.0]) != (b"", 0)


def test_quantiles_of_a_sketch_below_its_k_are_exact_at_every_rank() -> None:
    """Below k values a KLL sketch keeps them all: each percentage gives the exact value
    (the sketch's float rank arithmetic must not move a rank r = ceil(p * n) to r + 1)."""
    monoid = Quantiles(kll_k(1000))
    for n in range(1, 400, 3):
        values = [float(i) for i in range(n)]
        partial = monoid.fold(None, values[::2] + values[1::2])
        percentages = [r / n for r in range(n + 1)]
        assert monoid.quantiles(partial, percentages) == [values[max(1, math.ceil(p * n)) - 1] for p in percentages]


def test_decimal_averages_round_half_up_as_spark(spark) -> None:
    """avg of decimal(3,0): 1/32 is 0.03125, Spark's decimal(7,4) rounds it half up (away
    from zero) to 0.0313 / -0.0313."""
    from pyspark.sql import functions as F

    data = [("a", dt.datetime(2024, 1, 1, tzinfo=UTC), Decimal(v)) for v in [1] + [0] * 31] + \
           [("b", dt.datetime(2024, 1, 1, tzinfo=UTC), Decimal(v)) for v in [-1] + [0] * 31]
    df = spark.createDataFrame(data, "k string, ts timestamp, v decimal(3,0)")
    ours = window_aggregate(df, "k", "ts", {"a": ("v", "avg")}, size="1 minute")
    theirs = df.groupBy("k", F.window("ts", "1 minute")).agg(F.avg("v").alias("a"))
    assert ours.schema["a"].dataType == theirs.schema["a"].dataType
    assert sorted((r.k, r.a) for r in ours.collect()) == sorted((r.k, r.a) for r in theirs.collect()) == [
        ("a", Decimal("0.0313")), ("b", Decimal("-0.0313"))]


@pytest.mark.parametrize("aggregations, message", [
    ({"x": ("s", "sum")}, r"aggregations\['x'\]: sum does not take column 's' of type string \(cast it"),
    ({"x": ("tv", "avg")}, r"aggregations\['x'\]: avg does not take column 'tv' of type timestamp"),
    ({"x": ("b", "stddev")}, r"aggregations\['x'\]: stddev does not take column 'b' of type boolean"),
    ({"x": ("b", "percentile_approx", 0.5)}, r"percentile_approx does not take column 'b' of type boolean"),
    ({"x": ("d", "percentile_approx", 1.5)}, r"aggregations\['x'\]: percentages must be numbers in \[0, 1\]"),
    ({"x": ("d", "percentile_approx", [0.5, -0.1])}, r"percentages must be numbers in \[0, 1\]"),
    ({"x": ("d", "percentile_approx", 0.5, 0)}, r"aggregations\['x'\]: accuracy must be a positive int"),
    ({"x": ("d", "percentile_approx")}, r"percentile_approx takes a percentage"),
    ({"x": ("d", "median")}, r"aggregations\['x'\]: unknown aggregation 'median'"),
    ({"x": ("nope", "sum")}, r"aggregations\['x'\]: no column 'nope'"),
    ({"x": ("d", "sum", 2)}, r"aggregations\['x'\]: sum takes no parameters"),
    ({"x": ("d", "max_by")}, r"aggregations\['x'\]: max_by takes two columns"),
    ({"x": (("d", "nope"), "max_by")}, r"no column 'nope'"),
    ({"x": (("d", "s"), "sum")}, r"aggregations\['x'\]: sum takes one column"),
])
def test_a_bad_aggregation_fails_at_call_time_naming_it(spark, aggregations, message) -> None:
    df = frame(spark, rows(5, seed=1))  # nothing runs: the error comes from window_aggregate itself
    with pytest.raises(ValueError, match=message):
        window_aggregate(df, "k", "ts", aggregations, size="10 seconds")


# --------------------------------------------------------------------------- streaming

STREAM_SCHEMA = "seq long, k string, ts timestamp, l long, d double, dec decimal(12,3), s string"


def write_parquet(spark, directory: Path, data: list[tuple]) -> None:
    """One file, newer than those already there (the file source reads in modification
    order, one file per micro-batch with maxFilesPerTrigger=1)."""
    before = set(directory.glob("*.parquet")) if directory.exists() else set()
    spark.createDataFrame(data, STREAM_SCHEMA).coalesce(1).write.mode("append").parquet(str(directory))
    stamp = max((f.stat().st_mtime for f in before), default=time.time() - 10_000) + 1
    for new in set(directory.glob("*.parquet")) - before:
        os.utime(new, (stamp, stamp))


def test_streaming_with_nulls_nan_and_decimals_equals_sparks_streaming_result(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    rng = random.Random(5)
    data = [(seq, rng.choice("ab"), dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=rng.randrange(120)),
             rng.choice([None, rng.randrange(-2**60, 2**60) // 64, rng.randrange(-5, 5)]),
             rng.choice([None, math.nan, rng.uniform(-10, 10)]),
             rng.choice([None, Decimal(rng.randrange(-10**9, 10**9)).scaleb(-3)]),
             rng.choice([None, "a", "b", "é"])) for seq in range(300)]
    data.sort(key=lambda r: r[2])
    for i in range(3):
        write_parquet(spark, tmp_path / "in", data[i * 100:(i + 1) * 100])
    names = {"sl": ("l", "sum"), "al": ("l", "avg"), "sd": ("d", "sum"), "ad": ("d", "avg"), "hd": ("d", "max"),
             "ld": ("d", "min"), "nd": ("d", "count"), "vd": ("d", "stddev"), "sdec": ("dec", "sum"),
             "adec": ("dec", "avg"), "hdec": ("dec", "max"), "hs": ("s", "max"), "fs": ("s", "first")}
    source = lambda: spark.readStream.schema(STREAM_SCHEMA).option(  # noqa: E731
        "maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    ours = window_aggregate(source(), "k", "ts", names, size="20 seconds", slide="10 seconds",
                            watermark="5 seconds", flat=True)
    theirs = native(source().withWatermark("ts", "5 seconds"), names, "20 seconds", "10 seconds")
    for query, name in ((ours, "aggs_ours"), (theirs, "aggs_theirs")):
        q = (query.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())
        q.awaitTermination()
        assert q.exception() is None
    assert_rows_equal(spark.table("aggs_ours").collect(), spark.table("aggs_theirs").collect(), names)
    assert [spark.table("aggs_ours").schema[n].dataType for n in names] == \
        [spark.table("aggs_theirs").schema[n].dataType for n in names]
    assert spark.table("aggs_ours").where(F.isnan("sd")).count() > 0  # NaN came through as NaN
