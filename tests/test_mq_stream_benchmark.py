"""Smoke run of benchmarks.multi_query_stream (issue 20) in its quick mode: both settings ran on
the same tuples with equal results every chunk (the benchmark raises otherwise), and with the
compiled core the typed run's Sum groups hold typed twins. Timings are not asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick


@bench_smoke
def test_multi_query_stream_quick(tmp_path):
    run_quick("multi_query_stream", tmp_path, timeout=300)
    data = json.loads((tmp_path / "multi_query_stream_quick.json").read_text())
    results = data["results"]
    assert {(r["monoid"], r["queries"]) for r in results} == {(m, q) for m in ("sum", "max")
                                                              for q in data["params"]["queries"]}
    for r in results:
        assert r["typed"]["tuples_per_s"] > 0 and r["object"]["tuples_per_s"] > 0
        assert not any(name.startswith("Typed") for name in r["object"]["aggregators"])
        if data["params"]["typed_mq_compiled"] and r["monoid"] == "sum" \
                and set(r["plan_finals"]) <= {"slideside", "slickdeque"}:
            # ints and Sum's int identity: never demoted (Max's identity -inf, inserted for the
            # partials before the first tuple, demotes an INT twin at once)
            assert all(name.startswith("Typed") for name in r["typed"]["aggregators"]), r
    markdown = (tmp_path / "multi_query_stream_quick.md").read_text()
    assert "command:" in markdown and "twins / object" in markdown
