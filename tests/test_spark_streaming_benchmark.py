"""benchmarks.spark_streaming --quick: both shapes, the operator's rows are Spark's streaming
window() rows, and the breakdown of each query's time and the operator's phases (in the tests' shared Spark session)."""

from __future__ import annotations

import json

from benchmarks import spark_streaming


def test_quick_run_gives_spark_rows_and_a_breakdown(spark, tmp_path) -> None:
    assert spark_streaming.main(["--quick", "--out", str(tmp_path)], spark=spark) == 0
    data = json.loads((tmp_path / "spark_streaming_quick.json").read_text())
    assert [r["shape"] for r in data["results"]] == list(spark_streaming.SHAPES)
    for r in data["results"]:
        assert r["identical"] is True, r
        assert r["rows"] > 0 and isinstance(r["met"], bool)
    queries = {(b["shape"], b["query"]) for b in data["breakdown"]}
    assert queries == {(s, q) for s in spark_streaming.SHAPES for q in (spark_streaming.OURS, spark_streaming.SPARK)}
    for b in data["breakdown"]:
        assert b["batches"] >= data["params"]["pieces"]
        assert 0 < b["run batches s"] <= b["seconds"]
    # the operator's own phases (MTA_SPARK_PROFILE), for its stateful queries only (a lone tumbling
    # window of these aggregations compiles to Spark's own streaming aggregation: no processor)
    assert {(p["shape"], p["query"]) for p in data["operator_phases"]} == {("slide1", spark_streaming.OURS)}
    for p in data["operator_phases"]:
        assert p["calls"] > 0 and p["engine: add s"] > 0
    report = (tmp_path / "spark_streaming_quick.md").read_text()
    assert data["command"] in report and data["machine"]["git_commit"] in report
    assert (tmp_path / "spark_streaming_quick.png").stat().st_size > 1000
