"""Smoke run of benchmarks.multi_query (SlideSide Fig. 3a/3b) in its quick mode: every
competitor ran and was checked equal to the replicated baseline after every round (the
benchmark raises otherwise), and the combine counts show the sharing. Timings are not asserted."""

from __future__ import annotations

import json

from conftest import run_quick, bench_smoke



@bench_smoke
def test_multi_query_quick(tmp_path):
    run_quick("multi_query", tmp_path, timeout=300)
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
    # the second part: every twin against its object aggregator on the other monoids
    monoids = data["monoids"]
    assert set(monoids) == {"MinCount", "MaxCount", "First", "Last", "ArgMin", "ArgMax", "Variance", "StdDev",
                            "Record(Count, Sum, Mean)", "Record(Sum, Variance)", "Record(Min, First, ArgMin)",
                            "Record(Count, Sum, Min, First)",
                            "Record(Count, Sum, Min, Max, Mean, Variance, First, ArgMin)",
                            "Sum, floats (inverse=False)", "Mean, floats (inverse=False)",
                            "Variance, floats (inverse=False)"}
    for label, points in monoids.items():
        assert [p["queries"] for p in points] == [data["params"]["queries"][0], data["params"]["queries"][-1]]
        for p in points:
            no_slickdeque = label.endswith("(inverse=False)") or label in ("MinCount", "MaxCount", "Record(Min, First, ArgMin)",
                                      "Record(Count, Sum, Min, First)",
                                      "Record(Count, Sum, Min, Max, Mean, Variance, First, ArgMin)")
            expected = {"slideside:typed", "slideside"}
            if not no_slickdeque:
                expected |= {"slickdeque:typed", "slickdeque"}
            assert set(p["competitors"]) == expected
            assert all(c["checked"] and c["steps_per_s"] > 0 for c in p["competitors"].values())
    markdown = (tmp_path / "multi_query_quick.md").read_text()
    assert "command:" in markdown and "Fig. 3a" in markdown and "Fig. 3b" in markdown and "more monoids" in markdown
