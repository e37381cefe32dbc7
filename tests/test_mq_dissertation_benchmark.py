"""Smoke run of benchmarks.multi_query_dissertation (issue #18): the quick mode runs every
experiment, every competitor's answers agreed after every round (the benchmark raises
otherwise), and the counted operations per slide have the dissertation's shape.
Timings are not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import bench_smoke

ROOT = Path(__file__).resolve().parents[1]



@bench_smoke
def test_multi_query_dissertation_quick(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.multi_query_dissertation", "--quick", "--out",
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((tmp_path / "multi_query_dissertation_quick.json").read_text())
    experiments = data["experiments"]
    assert list(experiments) == ["fig16", "fig17", "fig23", "fig24", "fig25", "fig26", "both"]
    for name in ("fig16", "fig17"):
        results = experiments[name]["results"]
        assert [e["n"] for e in results] == [2 ** k for k in range(1, 7)]
        assert all(set(e["competitors"]) == {"flatfit", "flatfat"} for e in results)
        assert experiments[name]["targets"][0]["met"] is None  # no n >= 2^10 in the quick run
        last = results[-1]["competitors"]  # n = 64: FlatFAT's log n per range against FlatFIT's ~1.5
        assert last["flatfit"]["ops_per_slide"] < last["flatfat"]["ops_per_slide"]
    single = experiments["fig16"]["results"][-1]["competitors"]["flatfit"]["ops_per_slide"]
    assert single == pytest.approx(3 * 63 / 65)  # 3 (n - 1) over a period of n + 1 slides
    for name in ("fig23", "fig24", "fig25", "fig26"):
        for entry in experiments[name]["results"]:
            assert {"slickdeque", "flatfit", "flatfat"} <= set(entry["competitors"])
            assert entry["second_best"] != "slickdeque"
    assert experiments["fig23"]["variant"] == "Alg. 2 (inv)" and experiments["fig26"]["variant"] == "Alg. 3 (non-inv)"
    # Alg. 2: one combine and one invert per range; Alg. 3: under 2 combines whatever the ranges
    for entry in experiments["fig25"]["results"]:
        assert entry["competitors"]["slickdeque"]["ops_per_slide"] == 2 * entry["n"]
    for entry in experiments["fig26"]["results"]:
        assert entry["competitors"]["slickdeque"]["ops_per_slide"] < 3
    # Panes folds every range: n (n - 1) / 2 combines per slide, only up to --max-multi-quadratic
    fig26 = {e["n"]: e["competitors"] for e in experiments["fig26"]["results"]}
    assert fig26[16]["panes"]["ops_per_slide"] == 16 * 15 / 2 and "panes" not in fig26[32]
    both = experiments["both"]["results"]
    assert [(e["n"], e["environment"]) for e in both] == [(64, "single"), (64, "max-multi")]
    assert both[1]["competitors"]["alg2_inv"]["ops_per_slide"] == 128
    assert (tmp_path / "multi_query_dissertation_quick.csv").read_text().startswith("experiment,n,competitor")
    for fig in ("fig16", "fig17", "fig18", "fig23", "fig24", "fig25", "fig26"):
        assert (tmp_path / f"multi_query_dissertation_quick_{fig}.png").exists()
