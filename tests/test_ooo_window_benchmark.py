"""Smoke run of benchmarks.ooo_window (issue 20) in its quick mode: both orders ran for the
typed and the object out-of-order window, they agreed bit for bit (and the typed one did not
demote), and the results file has the command, commit and table. Timings are not asserted."""

from __future__ import annotations

import json

from benchmarks.ooo_window import BATCH_MONOIDS
from conftest import bench_smoke, run_quick


@bench_smoke
def test_ooo_window_quick(tmp_path):
    run_quick("ooo_window", tmp_path)
    data = json.loads((tmp_path / "ooo_window_quick.json").read_text())
    params, results = data["params"], data["cells"]["per_event"]["results"]
    assert [(e["stamps"], e["d"]) for e in results] == [(s, d) for s in ("int", "epoch float") for d in params["distances"]]
    assert params["distances"] == [0, params["n"] // 4]
    for e in results:
        assert e["equal"] and e["n"] == params["n"]
        assert len(e["competitors"]) == 2 and all(ns > 0 for ns in e["ns_per_step"].values())
    markdown = (tmp_path / "ooo_window_quick.md").read_text()
    assert "- command:" in markdown and "- commit:" in markdown and "| in order |" in markdown
    batches = data["cells"]["batches"]["results"]
    assert [(e["monoid"], e["d"]) for e in batches] == [(m, d) for m in BATCH_MONOIDS for d in params["distances"]]
    for e in batches:
        assert e["equal"] and e["competitors"] == ["numpy columns", "pairs", "per event"]
        assert all(ns > 0 for ns in e["ns_per_update"].values())
    assert "per event / numpy" in markdown
