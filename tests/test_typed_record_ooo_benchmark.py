"""Smoke run of benchmarks.typed_record_ooo (issue 20) in its quick mode: every monoid ran,
typed and object windows gave equal results, the typed Record windows ran on
TypedRecordFiBA to the end (no demotion), and the results file has the table. Timings are
not asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick


@bench_smoke
def test_typed_record_ooo_quick(tmp_path):
    run_quick("typed_record_ooo", tmp_path, timeout=120)
    data = json.loads((tmp_path / "typed_record_ooo_quick.json").read_text())
    results = data["cells"]["per_event"]["results"]
    assert [e["monoid"] for e in results] == ["Record(count, sum, max, mean)", "Record(first, last, min, variance)",
                                              "Sum()"]
    for e in results:
        assert e["equal"] and e["typed_still"] and e["typed_ns"] > 0 and e["object_ns"] > 0
        assert e["typed_core"] == ("TypedRecordFiBA" if e["monoid"].startswith("Record") else "TypedFiBA")
        assert e["object_core"] == "TimeOrdered"
    assert "Per event, out of order" in (tmp_path / "typed_record_ooo_quick.md").read_text()
