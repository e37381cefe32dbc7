"""Smoke run of benchmarks.multi_query (SlideSide Fig. 3a/3b) in its quick mode: every
competitor ran and was checked equal to the replicated baseline after every round (the
benchmark raises otherwise), and the combine counts show the sharing. Timings are not asserted."""

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
def test_multi_query_quick(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.multi_query", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((tmp_path / "multi_query_quick.json").read_text())
    figures = data["figures"]
    assert set(figures) == {"3a", "3b"}
    assert figures["3a"]["baseline"] == "soe" and figures["3b"]["baseline"] == "two_stacks"
    for fig in figures.values():
        assert fig["competitors"][0] == "slideside" and fig["competitors"][-1] == fig["baseline"]
        assert [entry["queries"] for entry in fig["results"]] == data["params"]["queries"]
        for entry in fig["results"]:
            assert set(entry["competitors"]) == set(fig["competitors"])
            assert all(c["checked"] and c["steps_per_s"] > 0 for c in entry["competitors"].values())
        # sharing, counted: at the most queries SlideSide does fewer operations per step
        last = fig["results"][-1]["competitors"]
        assert last["slideside"]["combines_per_step"] < last[fig["baseline"]]["combines_per_step"]
    markdown = (tmp_path / "multi_query_quick.md").read_text()
    assert "command:" in markdown and "Fig. 3a" in markdown and "Fig. 3b" in markdown
