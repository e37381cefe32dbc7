"""Smoke run of benchmarks.typed_amta (issue 20): the quick mode times every case for both
competitors and writes its table. Timings are not asserted."""

from __future__ import annotations

from conftest import bench_smoke, run_quick


@bench_smoke
def test_typed_amta_quick_writes_its_table(tmp_path):
    run_quick("typed_amta", tmp_path)
    text = (tmp_path / "typed_amta_quick.md").read_text()
    for case in ("Sum float", "Sum int", "Min float", "Max int", "Mean float"):
        assert f"| {case} |" in text
    assert "typed ns/step" in text and "object AMTA ns/step" in text
