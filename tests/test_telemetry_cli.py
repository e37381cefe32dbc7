"""The telemetry generator, the ``mta`` command line and the benchmark scripts' smoke runs."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from mta.cli import main
from mta.telemetry import DAY, HOUR, PEAK_HOUR, readings

from conftest import run_quick, bench_smoke

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- telemetry

def test_deterministic_for_a_seed():
    assert list(readings(5000, seed=7)) == list(readings(5000, seed=7))
    assert list(readings(5000, seed=7)) != list(readings(5000, seed=8))


def test_shorter_run_is_a_prefix():
    assert list(readings(4000, seed=3)) == list(readings(9000, seed=3))[:4000]


def test_timestamps_non_decreasing_and_values_positive():
    data = list(readings(3 * DAY, seed=11))
    assert len(data) == 3 * DAY
    stamps = [t for t, _ in data]
    assert stamps == list(range(3 * DAY))
    assert all(isinstance(v, float) and v > 0 for _, v in data)


def test_start_and_hosts():
    data = list(readings(3000, seed=2, start=1000, hosts=3))
    assert len(data) == 3000
    stamps = [t for t, _ in data]
    assert stamps[0] == 1000 and stamps == sorted(stamps)
    assert stamps[:6] == [1000, 1000, 1000, 1001, 1001, 1001]
    assert all(v > 0 for _, v in data)
    # hosts are different machines
    assert len({round(v) for _, v in data[:3]}) == 3


def test_unbounded_stream():
    assert len(list(islice(readings(None, seed=1), 10))) == 10


@pytest.mark.parametrize("bad", [{"n": -1}, {"n": 1.5}, {"n": 10, "start": -5}, {"n": 10, "hosts": 0}])
def test_bad_arguments(bad):
    with pytest.raises(ValueError):
        readings(**bad)


def test_daily_cycle():
    days = 7
    by_hour = [[] for _ in range(24)]
    for t, v in readings(days * DAY, seed=5):
        by_hour[(t % DAY) // HOUR].append(v)
    means = [sum(h) / len(h) for h in by_hour]
    trough = (PEAK_HOUR + 12) % 24
    assert means[PEAK_HOUR] > means[trough] * 1.15
    assert max(range(24), key=means.__getitem__) in (PEAK_HOUR - 1, PEAK_HOUR, PEAK_HOUR + 1)


def test_has_spikes_and_noise():
    values = [v for _, v in readings(DAY, seed=9)]
    steps = [abs(b - a) for a, b in zip(values, values[1:])]
    assert len(set(values)) > 0.99 * len(values)  # noisy, not a smooth curve
    assert max(steps) > 20 * (sum(steps) / len(steps))  # occasional bursts / spikes


# --------------------------------------------------------------------------- cli

def test_demo_runs_and_prints_summary(capsys):
    assert main(["demo", "--updates", "20000", "--every", "5000", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "summary: 20,000 updates" in out
    assert "final window: 3,600 readings" in out
    assert out.count("window   3,600 readings") == 4  # one line every 5000 updates
    assert "mean" in out and "max" in out and "stddev" in out


def test_demo_with_another_algorithm_and_window(capsys):
    assert main(["demo", "--updates", "5000", "--window", "600", "--algorithm", "two_stacks",
                 "--every", "100000"]) == 0
    out = capsys.readouterr().out
    assert "algorithm two_stacks" in out
    assert "final window: 600 readings" in out


def test_demo_with_subtract_on_evict_leaves_out_the_max(capsys):
    """subtract_on_evict was a choice the demo refused (Max is not invertible)."""
    assert main(["demo", "--updates", "5000", "--window", "600", "--algorithm", "subtract_on_evict",
                 "--every", "2500", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "algorithm subtract_on_evict" in out and "monoid Record(mean=Mean(), stddev=" in out and "Max()" not in out
    assert "final window: 600 readings (count 600)" in out and out.count("max         – MB") == 2
    assert "mean 1,866.4 MB, max – MB, stddev 44.2 MB" in out


def test_demo_keeps_its_window_in_a_file_store(capsys, tmp_path):
    path = tmp_path / "demo.db"
    assert main(["demo", "--updates", "6000", "--every", "100000", "--store", str(path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "final window: 3,600 readings" in out and "flushed" in out
    import kvs
    from mta import Count, Max, Mean, Record, StdDev, TimeRange, Window
    (window_id,) = kvs.connect(path).windows()
    reopened = Window.open(path, window_id, Record(mean=Mean(), max=Max(), stddev=StdDev(), count=Count()),
                           TimeRange(3600))
    assert reopened.query()["count"] == 3600


def test_demo_with_a_local_redis(capsys):
    assert main(["demo", "--updates", "3000", "--every", "100000", "--local-redis", "--no-progress"]) == 0
    assert "commits" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["demo", "--algorithm", "nope"], "invalid choice: 'nope'"),
    (["demo", "--updates", "0"], "positive integer"),
    (["demo", "--window", "-1"], "seconds > 0"),
    (["bench", "nope"], "invalid choice"),
    ([], "required"),
])
def test_bad_arguments_are_clean_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_unknown_algorithm_lists_choices(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--algorithm", "nope"])
    err = capsys.readouterr().err
    for name in ("amta", "log_mta", "two_stacks", "daba", "flatfat", "naive"):
        assert name in err


# --------------------------------------------------------------------------- benchmark smoke runs

# Each --quick run takes a few seconds; set MTA_SKIP_BENCH_SMOKE=1 to skip them. The Spark benchmarks have
# their own tests (tests/test_spark_windows_benchmark.py, test_spark_streaming_benchmark.py).


@bench_smoke
@pytest.mark.parametrize("script", ["exp1_constant_window", "exp2_bulk_eviction", "table2_stream_analytics",
                                    "exp1_2_redis", "exp4_memory", "exp5_dimensions", "server_ingest",
                                    "server_memory", "server_out_of_order"])
def test_benchmark_quick_mode(tmp_path, script):
    proc = run_quick(f"{script}", tmp_path, timeout=180)
    assert "| " in proc.stdout  # a markdown table
    data = json.loads((tmp_path / f"{script}_quick.json").read_text())
    assert data["quick"] is True
    machine = data["machine"]
    for key in ("platform", "python", "cpu_count", "loadavg_start", "loadavg_end"):
        assert key in machine
    assert (tmp_path / f"{script}_quick.csv").read_text().count("\n") > 2
    assert (tmp_path / f"{script}_quick.png").stat().st_size > 1000


@bench_smoke
def test_fiba_benchmark_quick_mode(tmp_path):
    """benchmarks.fiba runs five experiments in one driver, one PNG each, one merged JSON and CSV."""
    run_quick("fiba", tmp_path, timeout=180)
    data = json.loads((tmp_path / "fiba_quick.json").read_text())
    assert data["quick"] is True
    experiments = data["experiments"]
    assert list(experiments) == ["fig11", "fig12", "fig13", "fig14", "bulk"]
    for name, exp in experiments.items():
        assert exp["results"], name
        assert "| " in exp["markdown"], name
        assert exp["machine"]["git_commit"] == data["machine"]["git_commit"]
        assert (tmp_path / f"fiba_quick_{name}.png").stat().st_size > 1000, name
    for name in ("fig11", "fig13", "bulk"):
        assert experiments[name]["targets"] and all(isinstance(t["met"], bool) for t in experiments[name]["targets"])
    # combines are counted: FiBA's in-order round costs fewer than the B-tree's O(log n) repair
    at0 = next(e for e in experiments["fig11"]["results"] if e["d"] == 0)["combines_per_round"]
    assert 0 < at0["FiBA-2"] < at0["BTree-2"]
    rows = (tmp_path / "fiba_quick.csv").read_text().splitlines()
    assert rows[0] == "experiment,n,d,variant,metric,value"
    assert {r.split(",")[0] for r in rows[1:]} == set(experiments)
    # a single experiment keeps the others' results already in the JSON
    run_quick("fiba", tmp_path, timeout=180, args=("--exp", "bulk", "--no-plot"))
    again = json.loads((tmp_path / "fiba_quick.json").read_text())["experiments"]
    assert list(again) == list(experiments)
    assert again["fig11"] == experiments["fig11"]
    assert "--exp bulk" in again["bulk"]["command"] and "--exp" not in again["fig11"]["command"]
