"""Smoke run of benchmarks.typed_fiba (issue 20) in its quick mode: every cell ran for the
three competitors (TypedFiBA as imported, its pure twin, the object FiBA), they agreed, and
the results file has the command, commit and table. Timings are not asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick


@bench_smoke
def test_typed_fiba_quick(tmp_path):
    run_quick("typed_fiba", tmp_path, timeout=120)
    data = json.loads((tmp_path / "typed_fiba_quick.json").read_text())
    params, results = data["params"], data["cells"]["bare"]["results"]
    assert {(e["kind"], e["min_arity"], e["d"]) for e in results} == (
        {("Sum, float", a, d) for a in (16, 4) for d in params["distances"]}
        | {("Mean, float", a, 0) for a in (16, 4)})
    for e in results:
        assert e["equal"] and e["n"] == params["n"]
        assert len(e["competitors"]) == 3 and all(ns > 0 for ns in e["ns_per_step"].values())
    memory = data["cells"]["memory"]
    assert memory["n"] == params["n"] and memory["typed_over_object"] > 0
    markdown = (tmp_path / "typed_fiba_quick.md").read_text()
    assert "- command:" in markdown and "- commit:" in markdown and "| Sum, float | 4 | in order |" in markdown
