"""Smoke run of benchmarks.compiled_core (issue 20) in its quick mode: every cell ran for every
typed core in TYPED_ALGORITHMS, every competitor gave the same results, the typed windows
ran on their typed core to the end (no demotion) and the object windows on the object
algorithm, and the results file has the command, commit and every table. Timings are not
asserted."""

from __future__ import annotations

import json

from conftest import bench_smoke, run_quick
from mta.algorithms import ALGORITHMS, TYPED_ALGORITHMS

from benchmarks.compiled_core import BATCH_MONOIDS, KINDS, MORE_MONOIDS, ORDERED_CORES, PER_EVENT_MONOIDS
from mta.algorithms import typed


@bench_smoke
def test_compiled_core_quick(tmp_path):
    run_quick("compiled_core", tmp_path)
    data = json.loads((tmp_path / "compiled_core_quick.json").read_text())
    params, cells = data["params"], data["cells"]
    assert set(cells) == {"bare", "per_event", "batches", "memory", "monoids", "batch_monoids"}
    assert set(params["typed_algorithms"]) == set(TYPED_ALGORITHMS)

    bare = cells["bare"]["results"]
    assert {(e["algorithm"], e["kind"]) for e in bare} == {(a, k) for a in TYPED_ALGORITHMS for k in KINDS}
    for e in bare:
        assert e["equal"] and e["n"] == params["bare_n"]
        assert e["typed_ns"] > 0 and e["pure_ns"] > 0 and e["object_ns"] > 0 and e["speedup"] > 0

    per_event = cells["per_event"]["results"]
    assert {(e["n"], e["monoid"], e["algorithm"]) for e in per_event} == {
        (n, m, a) for n in params["event_sizes"] for m in PER_EVENT_MONOIDS for a in TYPED_ALGORITHMS}
    for e in per_event:
        assert e["equal"]
        assert e["typed_core"] == TYPED_ALGORITHMS[e["algorithm"]].__name__
        assert e["object_core"] == ALGORITHMS[e["algorithm"]].__name__
        assert e["river_ns"] > 0 and e["typed_ns"] > 0 and e["object_ns"] > 0

    batches = cells["batches"]["results"]
    assert {(e["policy"], e["algorithm"], e["path"]) for e in batches} == {
        (p, a, path) for p in ("MaxSize", "TimeRange") for a in TYPED_ALGORITHMS for path in ("typed", "object")}
    for e in batches:
        assert e["equal"] and e["batch_ns"] > 0 and e["loop_ns"] > 0
        assert e["core"] == e["loop_core"]  # the batch and the loop ran the same kind of window
        if e["path"] == "typed":
            assert TYPED_ALGORITHMS[e["algorithm"]].__name__ in e["core"]
        else:
            assert e["core"] == ALGORITHMS[e["algorithm"]].__name__

    memory = cells["memory"]["results"]
    assert [e["algorithm"] for e in memory] == list(TYPED_ALGORITHMS)
    for e in memory:
        assert e["method"] == "tracemalloc"
        assert e["typed"]["core"] == TYPED_ALGORITHMS[e["algorithm"]].__name__
        assert e["object"]["core"] == ALGORITHMS[e["algorithm"]].__name__
        for path in ("typed", "object"):
            assert 0 < e[path]["filled"] <= e[path]["peak"] and 0 < e[path]["sliding"] <= e[path]["peak"]

    batch_monoids = cells["batch_monoids"]["results"]
    assert {(e["monoid"], e["algorithm"]) for e in batch_monoids} == {
        (m, a) for m in BATCH_MONOIDS for a in TYPED_ALGORITHMS}
    for e in batch_monoids:  # the same results, on the typed cores to the end (no demotion)
        assert e["equal"] and e["batch_ns"] > 0 and e["loop_ns"] > 0 and e["core"] == e["loop_core"]
        assert e["core"].startswith("TypedTimed(")

    markdown = (tmp_path / "compiled_core_quick.md").read_text()
    assert "command: `" in markdown and "commit: " in markdown and "machine: " in markdown
    for title in ("### 1. Bare", "### 2. Per event", "### 3. insert_many", "### 4. Memory", "### 6. insert_many"):
        assert title in markdown

    monoids = cells["monoids"]["results"]
    assert {(e["monoid"], e["algorithm"]) for e in monoids} == {
        (m, a) for m, make in MORE_MONOIDS.items() for a in [*TYPED_ALGORITHMS, *ORDERED_CORES]
        if typed.serves(make())}
    assert {e["monoid"] for e in monoids} == set(MORE_MONOIDS)
    assert {e["monoid"] for e in monoids if e["algorithm"] == "fiba"} >= {"Variance", "ArgMin", "ArgMax", "First"}
    for e in monoids:
        assert e["equal"] and e["typed_ns"] > 0 and e["object_ns"] > 0
        assert e["typed_core"] == (TYPED_ALGORITHMS[e["algorithm"]].__name__ if e["algorithm"] in TYPED_ALGORITHMS
                                   else "TypedTimeOrdered")  # the out-of-order window: TypedFiBA under it


@bench_smoke
def test_compiled_core_quick_batches_cell_alone(tmp_path):
    """``--cells batches`` runs that cell only (of the chosen typed cores) and writes its own
    results file, not over the full run's."""
    run_quick("compiled_core", tmp_path, args=("--cells", "batches", "--algorithms", "amta"))
    assert not (tmp_path / "compiled_core_quick.json").exists()
    data = json.loads((tmp_path / "compiled_core_batches_quick.json").read_text())
    assert set(data["cells"]) == {"batches"} and data["params"]["cells"] == ["batches"]
    batches = data["cells"]["batches"]["results"]
    assert {(e["policy"], e["algorithm"], e["path"]) for e in batches} == {
        (p, "amta", path) for p in ("MaxSize", "TimeRange") for path in ("typed", "object")}
    assert all(e["equal"] and e["batch_ns"] > 0 and e["loop_ns"] > 0 for e in batches)
    markdown = (tmp_path / "compiled_core_batches_quick.md").read_text()
    assert "### 3. insert_many" in markdown and "### 1. Bare" not in markdown

