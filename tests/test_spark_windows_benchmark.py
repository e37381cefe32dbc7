"""benchmarks.spark_windows: its row check catches what differs, and its --quick run covers
every shape of issue 19 with Spark's rows (in the tests' shared Spark session)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from benchmarks import spark_windows
from benchmarks.spark_windows import AGGS, same

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def windows(spark, rows):
    """A DataFrame shaped as a window() result: k, window struct, the AGGS columns."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame(rows, "k string, s long, n long, lo long, hi long, a double, start timestamp")
    return df.select("k", F.struct(F.col("start"), (F.col("start") + F.expr("INTERVAL 60 SECONDS")).alias("end"))
                     .alias("window"), *AGGS)


BASE = [("k1", 10, 2, 4, 6, 5.0, T0), ("k1", 3, 1, 3, 3, 3.0, T0 + dt.timedelta(seconds=60)),
        ("k2", 7, 2, 1, 6, 3.5, T0), ("k2", None, 0, None, None, None, T0 + dt.timedelta(seconds=60))]


@pytest.mark.parametrize("change, identical", [
    (lambda rows: rows, True),
    (lambda rows: [r[:5] + (r[5] * (1 + 1e-12),) + r[6:] if r[5] else r for r in rows], True),  # within 1e-9
    (lambda rows: [r[:5] + (r[5] * (1 + 1e-6),) + r[6:] if r[5] else r for r in rows], False),
    (lambda rows: rows[:-1], False),                                     # a row missing
    (lambda rows: rows + rows[:1], False),                               # a row twice
    (lambda rows: rows[:3] + [("k2", None, 0, None, 1, None, rows[3][6])], False),  # null against a value
])
def test_same_sees_every_difference(spark, change, identical) -> None:
    count, ok, diff = same(windows(spark, change(list(BASE))), windows(spark, BASE), AGGS)
    assert ok is identical
    assert (diff == "") is identical
    assert count == len(change(list(BASE)))


def test_same_refuses_other_column_types(spark) -> None:
    from pyspark.sql import functions as F

    theirs = windows(spark, BASE)
    count, ok, diff = same(theirs.withColumn("n", F.col("n").cast("int")), theirs, AGGS)
    assert not ok and "types" in diff


def test_quick_run_covers_every_shape_with_spark_rows(spark, tmp_path) -> None:
    assert spark_windows.main(["--quick", "--out", str(tmp_path)], spark=spark) == 0
    data = json.loads((tmp_path / "spark_windows_quick.json").read_text())
    results = data["results"]
    shapes = {r["shape"].split(" +")[0].split(":")[0].split(",")[0] for r in results}
    assert shapes == {"tumbling", "slide10", "slide1", "many", "sessions", "sweep"}
    assert any("stddev" in r["shape"] for r in results)
    for r in results:
        assert r["identical"] is True, r
        assert r["rows"] > 0 and r["ours_s"] > 0 and r["spark_s"] > 0
        assert r["met"] is None if r["target"] is None else isinstance(r["met"], bool)
    assert sorted(r["size_over_slide"] for r in results if "size_over_slide" in r) == [1, 60]
    report = (tmp_path / "spark_windows_quick.md").read_text()
    assert data["command"] in report and data["machine"]["git_commit"] in report
    assert report.count("| yes |") + report.count("| NO |") >= len(results)
    assert (tmp_path / "spark_windows_quick.png").stat().st_size > 1000


def test_bounds_quick_run_times_every_piece_and_checks_the_exact_plan(spark, tmp_path) -> None:
    from benchmarks import spark_bounds

    assert spark_bounds.main(["--quick", "--out", str(tmp_path)], spark=spark) == 0
    data = json.loads((tmp_path / "spark_bounds_quick.json").read_text())
    pieces = {(r["shape"], r["piece"]) for r in data["results"]}
    assert pieces == {("tumbling-stats", p) for p in ("Spark", "operator", "exact one pass", "slicing alone")} | \
        {("slide10", p) for p in ("Spark", "operator", "slicing alone", "+ shuffle by key", "+ empty Python stage")}
    assert all(r["s"] > 0 for r in data["results"])
    assert data["machine"]["git_commit"] in (tmp_path / "spark_bounds_quick.md").read_text()
