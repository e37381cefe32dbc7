"""Smoke run of benchmarks.plans (issue 18): the quick mode runs both experiments; every plan's
results equal lazy slicing's (the benchmark raises otherwise) and the counted cost is recorded.
Timings are not asserted."""

from __future__ import annotations

import json

from conftest import run_quick


def test_plans_quick_runs_both_experiments(tmp_path):
    run_quick("plans", tmp_path, timeout=300)
    data = json.loads((tmp_path / "plans_quick.json").read_text())
    experiments = data["experiments"]
    assert list(experiments) == ["plans", "finals"]
    assert len(experiments["plans"]["csv"]) == 2  # two query sets in the quick mode
    assert experiments["plans"]["worst_error"] < 0.35
    assert len(experiments["finals"]["csv"]) == 2  # sum and max
    assert "Estimated against measured" in data["markdown"] and "Stream finals" in data["markdown"]
