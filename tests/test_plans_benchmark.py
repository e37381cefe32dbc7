"""Smoke run of benchmarks.plans (issue 18): the quick mode runs both experiments; every plan's
results equal lazy slicing's (the benchmark raises otherwise) and the counted cost is recorded.
Timings are not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_plans_quick_runs_both_experiments(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.plans", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((tmp_path / "plans_quick.json").read_text())
    experiments = data["experiments"]
    assert list(experiments) == ["plans", "finals"]
    assert len(experiments["plans"]["csv"]) == 2  # two query sets in the quick mode
    assert experiments["plans"]["worst_error"] < 0.35
    assert len(experiments["finals"]["csv"]) == 2  # sum and max
    assert "Estimated against measured" in data["markdown"] and "Stream finals" in data["markdown"]
