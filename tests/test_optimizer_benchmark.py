"""Smoke run of benchmarks.optimizer (issue 18): the quick mode runs every experiment, F1 and the bit set
agreed on every query set (the benchmark raises otherwise). Timings are not asserted."""

from __future__ import annotations

import json

from conftest import run_quick, bench_smoke



@bench_smoke
def test_optimizer_quick_runs_every_experiment(tmp_path):
    run_quick("optimizer", tmp_path, timeout=300)
    data = json.loads((tmp_path / "optimizer_quick.json").read_text())
    experiments = data["experiments"]
    assert list(experiments) == ["f1", "plans", "greedy", "omega"]
    f1_rows = experiments["f1"]["results"]
    assert {(r["workload"], r["queries"]) for r in f1_rows} == {(w, n) for w in ("no fragments", "fragments")
                                                                for n in (10, 50)}
    assert all(r["checked"] and r["edges"] > 0 and r["f1_s"] > 0 and r["bitset_s"] > 0 for r in f1_rows)
    plans = experiments["plans"]["results"]
    assert {(r["queries"], r["method"]) for r in plans} == {(n, m) for n in (10, 25)
                                                            for m in ("triweave", "weaveshare")}
    # the greedy never ends above the plan it starts from, nor above the one-group plan it could reach
    assert all(r["cost"] <= r["no_share_cost"] + 1e-9 for r in plans)
    greedy = experiments["greedy"]["results"]
    assert all(0 <= r["optimal"] <= r["sets"] and r["max_excess"] >= -1e-9 for r in greedy)
    omega = {(r["monoid"], r["final"]): r for r in experiments["omega"]["results"]}
    assert ("Max", "slickdeque") in omega and ("Sum", "slideside") in omega
    assert abs(omega[("Sum", "slickdeque")]["max_abs_error"]) < 1e-9  # Eq. 7.6 x2 is exact for SlickDeque (inv)
    assert "F1 vs bit set" in data["markdown"] and (tmp_path / "optimizer_quick.csv").exists()
