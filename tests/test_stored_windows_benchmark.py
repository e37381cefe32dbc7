"""Smoke run of benchmarks.stored_windows (issue 20) in its quick mode: every cell ran for
every competitor (this checkout compiled, compiled on the object AMTA and pure, and
``--before`` another: here this one again), the competitors ran on the path they claim and
gave the same results, a small window ran (and reopened on) the typed core and one past
its local limit the object AMTA, and the results file has the command, commit and table.
Timings are not asserted."""

from __future__ import annotations

import json
from pathlib import Path

import mta
from conftest import bench_smoke, run_quick


@bench_smoke
def test_stored_windows_quick(tmp_path):
    root = Path(__file__).resolve().parents[1]
    run_quick("stored_windows", tmp_path, timeout=300, args=("--before", str(root)))
    data = json.loads((tmp_path / "stored_windows_quick.json").read_text())
    assert data["workers"]["pure"]["compiled"] is False
    assert data["workers"]["compiled"]["compiled"] is mta.COMPILED is data["workers"]["before"]["compiled"]
    rows = data["rows"]
    stores = ("in memory", "memory://", "file", "redis")
    assert {(r["cell"], r["store"], r["size"]) for r in rows} == {
        *((c, s, n) for c in ("per_event", "batches") for s in stores for n in (1000, 5000)),
        *(("reopened", s, 1000) for s in stores[1:])}
    for row in rows:
        assert row["equal"], row
        assert set(row["us"]) == {"compiled", "object", "pure", "before"} and min(row["us"].values()) > 0
        reads, writes, algorithm = row["calls"]["compiled"]
        assert reads >= 0 and writes >= 0 and algorithm
        if row["store"] != "in memory":
            assert row["calls"]["object"][2] == "AmortizedMTA"
        if row["store"] == "memory://" and mta.COMPILED:  # a stored window on the typed core below its limit
            assert algorithm == ("StoredTimed" if row["size"] == 1000 else "AmortizedMTA")
            assert reads == writes == 0
    text = (tmp_path / "stored_windows_quick.md").read_text()
    assert "python -m benchmarks.stored_windows --quick --before" in text and data["machine"]["git_commit"] in text
