"""Smoke run of benchmarks.stream_compiled (issue 20, Stream engine) in its quick mode: every
competitor ran for Sum and Mean (tumbling windows; and long sliding windows with each final
aggregation), gave the object engine's results, and the results file has the command, the
machine and the tables. Timings are not asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick

from benchmarks.stream_compiled import COMPETITORS, DEFAULT, FINAL_COMPETITORS, FINALS


@bench_smoke
def test_stream_compiled_quick(tmp_path):
    run_quick("stream_compiled", tmp_path)
    data = json.loads((tmp_path / "stream_compiled_quick.json").read_text())
    assert data["command"].endswith("--quick --out " + str(tmp_path))
    results = data["results"]
    assert [e["monoid"] for e in results] == DEFAULT
    for e in results:
        assert e["equal"] is True and e["tuples"] == 4000 and e["results"] > 0
        for c in COMPETITORS:
            assert e[f"{c}_tps"] > 0
        assert set(e["object_split_ns_per_tuple"]) == {"insert", "release", "windows"}
    assert "Stream engine, 1,000 tumbling windows" in data["markdown"]
    finals = data["final"]
    assert [(e["monoid"], e["final"]) for e in finals] == [(m, f) for m in DEFAULT for f in FINALS]
    for e in finals:
        assert e["equal"] is True and e["tuples"] == 2000 and e["results"] > 0
        for c in FINAL_COMPETITORS:
            assert e[f"{c}_tps"] > 0 and e[f"{c}_final_ms"] >= 0
    assert "Stream engine, 100 sliding windows of 1-100 slices" in data["markdown"]


@bench_smoke
def test_stream_compiled_quick_pairs_and_records(tmp_path):
    """``--monoid`` takes ArgMin (pairs: no columns competitor) and a Record; both paths agree."""
    run_quick("stream_compiled", tmp_path, args=("--monoid", "ArgMin", "--monoid", "Record"))
    results = json.loads((tmp_path / "stream_compiled_quick.json").read_text())["results"]
    assert [e["monoid"] for e in results] == ["ArgMin", "Record"]
    for e in results:
        assert e["equal"] is True and e["tuples"] == 4000 and e["results"] > 0
        assert e["object_tps"] > 0 and e["typed_tps"] > 0
    assert results[0]["typed, columns_tps"] is None and results[1]["typed, columns_tps"] > 0
