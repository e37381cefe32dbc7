"""Smoke run of benchmarks.optimizer (issue 18): the quick mode runs every experiment, F1 and the bit set
agreed on every query set (the benchmark raises otherwise). Timings are not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

bench_smoke = pytest.mark.skipif(bool(os.environ.get("MTA_SKIP_BENCH_SMOKE")), reason="MTA_SKIP_BENCH_SMOKE is set")


@bench_smoke
def test_optimizer_quick_runs_every_experiment(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.optimizer", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
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
