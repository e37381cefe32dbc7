"""Smoke run of benchmarks.typed_record (issue 20) in its quick mode: both cells ran for every
typed core's algorithm, typed and object windows gave equal results, the typed windows ran
on TypedRecord to the end (no demotion), and the results file has every table. Timings are
not asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick
from mta.algorithms import TYPED_ALGORITHMS


@bench_smoke
def test_typed_record_quick(tmp_path):
    run_quick("typed_record", tmp_path, timeout=120)
    data = json.loads((tmp_path / "typed_record_quick.json").read_text())
    cells = data["cells"]
    per_event = cells["per_event"]["results"]
    assert {(e["policy"].split("(")[0], e["algorithm"]) for e in per_event} == {
        (p, a) for p in ("MaxSize", "TimeRange") for a in TYPED_ALGORITHMS}
    for e in per_event:
        assert e["equal"] and e["typed_ns"] > 0 and e["object_ns"] > 0
        assert "TypedRecord" in e["typed_core"] and "TypedRecord" not in e["object_core"]
    batches = cells["batches"]["results"]
    assert {e["algorithm"] for e in batches} == set(TYPED_ALGORITHMS)
    for e in batches:
        assert e["equal"] and e["typed_core"] == "TypedTimed(TypedRecord)"
        assert e["typed_batch_ns"] > 0 and e["object_loop_ns"] > 0
    text = (tmp_path / "typed_record_quick.md").read_text()
    assert "1. Per event" in text and "2. Batches" in text
