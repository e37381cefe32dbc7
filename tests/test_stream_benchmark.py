"""Smoke runs of benchmarks.stream_slicing (issue #17): the quick mode runs every experiment,
and every competitor's window results were checked equal to the tuple buffer's (the
benchmark raises otherwise). Timings are not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import bench_smoke

ROOT = Path(__file__).resolve().parents[1]



def _run(tmp_path: Path, *extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.stream_slicing", "--quick", "--out", str(tmp_path),
                           *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "stream_slicing_quick.json").read_text())


@bench_smoke
def test_stream_slicing_quick_checks_every_competitor(tmp_path):
    data = _run(tmp_path)
    experiments = data["experiments"]
    assert list(experiments) == ["fig8", "fig9", "fig11", "fig12", "fig13", "fig16"]
    for name in ("fig8", "fig9"):
        for entry in experiments[name]["results"]:
            competitors = entry["competitors"]
            assert set(competitors) == {"slicing (lazy)", "slicing (eager)", "slicing (auto)", "tuple buffer",
                                        "buckets", "Window per query"}
            assert all(c["checked"] and c["results"] > 0 for c in competitors.values()), name
        assert experiments[name]["targets"] and (tmp_path / f"stream_slicing_quick_{name}.png").exists()
    # the session and the out-of-order tuples are in fig9 only
    assert experiments["fig9"]["params"]["session"] and not experiments["fig8"]["params"]["session"]
    for entry in experiments["fig12"]["results"]:
        assert len(entry["competitors"]) == 8 and all(c["checked"] for c in entry["competitors"].values())
    for entry in experiments["fig13"]["results"]:
        for kind in ("time", "count"):
            assert entry[kind]["checked"] == entry["checked"]
    assert [e["checked"] for e in experiments["fig13"]["results"]] == [True] * 5 + [False]
    for entry in experiments["fig16"]["results"]:
        assert all(v["checked"] for k, v in entry.items() if k != "n")
    # combines counted: slicing folds each tuple once, buckets once per window it belongs to
    fig8 = experiments["fig8"]["results"][-1]
    n = fig8["n"]
    assert fig8["competitors"]["slicing (lazy)"]["combines_per_tuple"] < 2
    assert fig8["competitors"]["buckets"]["combines_per_tuple"] > n - 1
    # without its inverse a count window recomputes the slices a late tuple shifts
    count = {e["aggregation"]: e["count"]["combines_per_tuple"] for e in experiments["fig13"]["results"]}
    assert count["Sum w/o invert"] > 2 * count["Sum"]
    fig11 = experiments["fig11"]["results"]
    assert [e["slices_per_window"] for e in fig11] == [10, 100]
    # lazy slicing folds every slice of the window; eager (AMTA) a constant number
    assert fig11[-1]["combines_per_result"]["slicing (lazy)"] > 5 * fig11[-1]["combines_per_result"]["slicing (eager)"]
    assert (tmp_path / "stream_slicing_quick.csv").read_text().startswith("experiment,setting,x,competitor")


@bench_smoke
def test_stream_slicing_quick_peers(tmp_path):
    data = _run(tmp_path, "--exp", "peers", "--no-plot")
    peers = data["experiments"]["peers"]
    assert {r["peer"].split()[0] for r in peers["results"]} == {"bytewax", "river"}
    assert all(r["checked"] for r in peers["results"]), peers["notes"]
