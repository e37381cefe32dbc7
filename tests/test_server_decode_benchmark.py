"""Smoke run of benchmarks.server_decode (issue 20) in its quick mode: both ways ran every
round, left equal windows, and the results file has the command, commit and table.
Timings are not asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick


@bench_smoke
def test_server_decode_quick(tmp_path):
    run_quick("server_decode", tmp_path)
    data = json.loads((tmp_path / "server_decode_quick.json").read_text())
    assert data["equal"]
    for cell in ("decode", "ingest"):
        for way in ("arrays", "lists"):
            assert len(data["rounds"][cell][way]) == data["params"]["rounds"]
            assert data["cells"][cell][way] > 0
    markdown = (tmp_path / "server_decode_quick.md").read_text()
    assert "- command:" in markdown and "- commit:" in markdown and "| decode |" in markdown
