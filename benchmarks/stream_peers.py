"""The peers of ``benchmarks.stream_slicing --exp peers``: the same workloads on bytewax,
river and PyFlink, against ``mta.Stream``, results checked equal.

- bytewax (``bytewax.operators.windowing.fold_window``): one windowing operator per query
  on one keyed stream, an ``EventClock`` that waits 2 s (its watermark: the newest
  timestamp minus 2 s; the system-time part is frozen by a constant ``now_getter``, so
  runs are deterministic), tumbling windows and a session window, 20% out of order.
  Timed: ``run_main`` of the built dataflow.
- river (``river.utils.Rolling`` over ``river.stats.Sum``): river has no event time, so
  the workload is its count-window form: the stream in order, n tumbling count windows
  (sizes 1,000-20,000 tuples), one ``Rolling`` per query updated by every tuple and read
  at each window's end, against ``Stream`` with ``Count`` queries.
- PyFlink (``apache-flink``, DataStream API, parallelism 1): a bounded-out-of-orderness
  (2 s) watermark, one ``TumblingEventTimeWindows`` reduce per query (a session window
  with ``EventTimeSessionWindows``), results collected. It runs in its own virtualenv
  (``--flink-python``, default ``$MTA_FLINK_PYTHON``): apache-flink pins versions that
  clash with the test extra. A job pays seconds of JVM and Python-worker start-up, so
  its throughput is the marginal one, between a stream and one twice as long (after a
  warm-up job in the same process).

The peers' imports are optional (the ``peers`` extra of pyproject.toml): a missing peer
is reported as such, with the reason.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.common import now_ns, ratio
from benchmarks.stream_baselines import Engine, Workload, feed, final_state
from mta import Sum
from mta.windows import Count, Session, Sliding

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def optional(module: str) -> tuple[Any, str | None]:
    """The module, or None and why it could not be imported."""
    try:
        return importlib.import_module(module), None
    except Exception as error:  # an optional peer: any failure to import is a reason
        return None, f"{type(error).__name__}: {error}"


def version(distribution: str) -> str | None:
    try:
        import importlib.metadata
        return importlib.metadata.version(distribution)
    except Exception:
        return None


def engine_rows(workload: Workload, queries: list) -> tuple[list, float]:
    """``mta.Stream`` (final='auto') on the workload: rows and seconds."""
    rounds = workload.rounds()
    e = Engine(Sum())
    for name, spec in queries:
        e.add(name, spec)
    with common.gc_paused():
        t0 = now_ns()
        rows = feed(e, rounds)
        return rows, (now_ns() - t0) / 1e9


# --------------------------------------------------------------------------- bytewax

def bytewax_rows(workload: Workload, queries: list) -> tuple[list, float]:
    """Rows ``(query, start, end, sum, count)`` of a bytewax dataflow and its run seconds."""
    dataflow = importlib.import_module("bytewax.dataflow")
    op = importlib.import_module("bytewax.operators")
    win = importlib.import_module("bytewax.operators.windowing")
    testing = importlib.import_module("bytewax.testing")
    items = [("sensor", (EPOCH + timedelta(milliseconds=ts), ts, v)) for _, ts, v in workload.tuples()]
    flow = dataflow.Dataflow("stream_slicing")
    keyed = op.input("in", flow, testing.TestingSource(items))
    sinks: dict[str, tuple[list, list]] = {}
    for name, spec in queries:
        clock = win.EventClock(lambda item: item[0], wait_for_system_duration=timedelta(milliseconds=workload.max_delay_ms),
                               now_getter=lambda: EPOCH)
        if isinstance(spec, Sliding):
            windower = win.TumblingWindower(length=timedelta(milliseconds=spec.size), align_to=EPOCH)
        else:
            windower = win.SessionWindower(gap=timedelta(milliseconds=spec.gap))
        out = win.fold_window(f"w_{name}", keyed, clock, windower, builder=lambda: (0, 0),
                              folder=lambda acc, item: (acc[0] + item[2], acc[1] + 1),
                              merger=lambda a, b: (a[0] + b[0], a[1] + b[1]))
        down, meta = [], []
        op.output(f"down_{name}", out.down, testing.TestingSink(down))
        op.output(f"meta_{name}", out.meta, testing.TestingSink(meta))
        sinks[name] = (down, meta)
    with common.gc_paused():
        t0 = now_ns()
        testing.run_main(flow)
        seconds = (now_ns() - t0) / 1e9
    rows = []
    specs = dict(queries)
    for name, (down, meta) in sinks.items():
        bounds = {wid: m for _, (wid, m) in meta}
        # a bytewax session closes at its last item's time; the engine's ends a gap later
        extra = specs[name].gap if isinstance(specs[name], Session) else 0
        for _, (wid, (total, count)) in down:
            m = bounds[wid]
            start = round((m.open_time - EPOCH) / timedelta(milliseconds=1))
            end = round((m.close_time - EPOCH) / timedelta(milliseconds=1)) + extra
            rows.append((name, start, end, total, count))
    return rows, seconds


# --------------------------------------------------------------------------- river

def river_rows(workload: Workload, sizes: list[int]) -> tuple[list, float]:
    """n Rolling sums read every ``size`` tuples: tumbling count windows in order."""
    rolling = importlib.import_module("river.utils").Rolling
    stats = importlib.import_module("river.stats")
    values = [v for _, _, v in workload.tuples()]
    rows: list = []
    windows = [(f"c{i}", rolling(stats.Sum(), window_size=size), size) for i, size in enumerate(sizes)]
    with common.gc_paused():
        t0 = now_ns()
        for position, v in enumerate(values, 1):
            for name, r, size in windows:
                r.update(v)
                if position % size == 0:
                    rows.append((name, position - size, position, r.get(), size))
        seconds = (now_ns() - t0) / 1e9
    return [(q, s, e, int(v), c) for q, s, e, v, c in rows], seconds


# --------------------------------------------------------------------------- PyFlink

FLINK_JOB = r'''
import json, sys, time
from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows

spec = json.load(open(sys.argv[1]))

class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]

def run(tuples):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)
    row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])
    ds = env.from_collection([("k", ts, v) for ts, v in tuples],
                             type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
    ds = ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(spec["delay_ms"]))
        .with_timestamp_assigner(Stamp()))
    keyed = ds.key_by(lambda x: x[0], key_type=Types.STRING())
    outs = []
    for name, kind, size in spec["queries"]:
        assigner = (TumblingEventTimeWindows.of(Time.milliseconds(size)) if kind == "tumbling"
                    else EventTimeSessionWindows.with_gap(Time.milliseconds(size)))
        # (query, first ts, last ts, sum, count): the window bounds are derived after
        out = keyed.map(lambda x, n=name: (n, x[1], x[1], x[2], 1), output_type=row) \
            .key_by(lambda x: x[0], key_type=Types.STRING()).window(assigner) \
            .reduce(lambda a, b: (a[0], min(a[1], b[1]), max(a[2], b[2]), a[3] + b[3], a[4] + b[4]), output_type=row)
        outs.append(out)
    out = outs[0].union(*outs[1:]) if len(outs) > 1 else outs[0]
    t0 = time.perf_counter()
    rows = [tuple(r) for r in out.execute_and_collect()]
    return rows, time.perf_counter() - t0

result = {}
for label, tuples in spec["streams"].items():
    rows, seconds = run(tuples)
    result[label] = {"rows": rows, "seconds": seconds}
json.dump(result, open(sys.argv[2], "w"))
'''


def flink_rows(python: str, workload: Workload, queries: list, scratch: Path) -> dict[str, Any]:
    """Run the PyFlink jobs (a warm-up, the workload's first half, the workload) in one
    process; returns ``{stream: {"rows", "seconds"}}``."""
    tuples = [(ts, v) for _, ts, v in workload.tuples()]
    half = Workload(**{**workload.__dict__, "seconds": workload.seconds / 2})
    spec = {"delay_ms": workload.max_delay_ms,
            "queries": [(name, "tumbling" if isinstance(s, Sliding) else "session",
                         s.size if isinstance(s, Sliding) else s.gap) for name, s in queries],
            # a first small job warms the JVM and the Python workers up; then half, then full
            "streams": {"warm-up": tuples[:200], "half": [(ts, v) for _, ts, v in half.tuples()], "full": tuples}}
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "job.py").write_text(FLINK_JOB)
    (scratch / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([python, str(scratch / "job.py"), str(scratch / "spec.json"), str(scratch / "out.json")],
                          capture_output=True, text=True, timeout=1800, cwd=scratch)
    if proc.returncode != 0:
        raise RuntimeError(f"PyFlink job failed (rc {proc.returncode}): {proc.stderr[-1500:]}")
    return json.loads((scratch / "out.json").read_text())


def flink_to_rows(raw: list, queries: list) -> list:
    """Flink's (query, first ts, last ts, sum, count) as window rows: tumbling bounds from
    the size, sessions [first, last + gap)."""
    specs = dict(queries)
    rows = []
    for name, first, last, total, count in raw:
        spec = specs[name]
        if isinstance(spec, Sliding):
            start = first - first % spec.size
            rows.append((name, start, start + spec.size, total, count))
        else:
            rows.append((name, first, last + spec.gap, total, count))
    return rows


# --------------------------------------------------------------------------- the experiment

def run_peers(run: common.Run, args: Any) -> dict[str, Any]:
    from benchmarks.stream_slicing import SESSION, count_queries, tumbling_queries
    seconds = 2 if args.quick else args.peers_seconds
    ns = [1, 10] if args.quick else [1, 10, 100]
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows_out = []
    versions = {"bytewax": version("bytewax"), "river": version("river")}
    notes: list[str] = []

    def record(peer: str, workload_name: str, n: int, tuples: int, peer_s: float | None, engine_s: float,
               checked: bool | None, extra: dict | None = None) -> None:
        peer_tps = tuples / peer_s if peer_s else None
        engine_tps = tuples / engine_s
        entry = {"peer": peer, "workload": workload_name, "n": n, "tuples": tuples, "peer_tps": peer_tps,
                 "engine_tps": engine_tps, "engine_over_peer": ratio(engine_tps, peer_tps), "checked": checked}
        entry.update(extra or {})
        results.append(entry)
        rows_out.append([peer, workload_name, n, tuples, peer_tps, engine_tps,
                         f"{entry['engine_over_peer']:,.1f}x" if entry["engine_over_peer"] else None,
                         {True: "equal", False: "DIFFER", None: "–"}[checked]])
        csv.append(["peers", workload_name, n, peer, "tps", round(peer_tps) if peer_tps else None])
        csv.append(["peers", workload_name, n, "slicing (auto)", "tps", round(engine_tps)])
        run.log(f"peers {peer} {workload_name} n={n}: peer {peer_tps or 0:,.0f} t/s, engine {engine_tps:,.0f} t/s")

    # bytewax: tumbling windows + a session, 20% out of order, watermark 2 s behind
    bytewax, why = optional("bytewax.operators.windowing")
    if bytewax is None:
        notes.append(f"bytewax not importable: {why}")
    else:
        for n in ns:
            workload = Workload(seconds=seconds if n < 100 else max(2.0, seconds / 5), ooo=0.2)
            queries = tumbling_queries(n, args.granularity_ms) + [SESSION]
            got, peer_s = bytewax_rows(workload, queries)
            want, engine_s = engine_rows(workload, queries)
            same = final_state(got) == final_state(want)
            if not same:
                diff = [k for k in set(final_state(got)) ^ set(final_state(want))][:4]
                notes.append(f"bytewax n={n}: results differ from the engine's, e.g. windows {diff}")
            record("bytewax " + (versions["bytewax"] or ""), "tumbling + session, 20% ooo", n,
                   len(workload.tuples()), peer_s, engine_s, same)

    # river: tumbling count windows, in order
    river, why = optional("river.utils")
    if river is None:
        notes.append(f"river not importable: {why}")
    else:
        for n in ns:
            workload = Workload(seconds=max(seconds, 20.0) if not args.quick else seconds, ooo=0.0)
            queries = count_queries(n)
            if args.quick:
                queries = [(name, Count(spec.size // 10)) for name, spec in queries]
            got, peer_s = river_rows(workload, [spec.size for _, spec in queries])
            want, engine_s = engine_rows(workload, queries)
            same = final_state(got) == final_state(want)
            if not same:
                notes.append(f"river n={n}: results differ from the engine's")
            record("river " + (versions["river"] or ""), "tumbling count windows, in order", n,
                   len(workload.tuples()), peer_s, engine_s, same)

    # PyFlink, in its own virtualenv
    python = args.flink_python or os.environ.get("MTA_FLINK_PYTHON")
    if not python:
        notes.append("PyFlink: no --flink-python / MTA_FLINK_PYTHON given (a virtualenv with apache-flink)")
    elif args.quick:
        notes.append("PyFlink: not run in --quick (a job takes seconds to start)")
    else:
        fv = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('apache-flink'))"],
                            capture_output=True, text=True).stdout.strip()
        versions["apache-flink"] = fv or None
        for n in [1, 10]:
            workload = Workload(seconds=seconds, ooo=0.2)
            queries = tumbling_queries(n, args.granularity_ms) + [SESSION]
            try:
                out = flink_rows(python, workload, queries, Path(tempfile.mkdtemp(prefix="mta-flink-")))
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                notes.append(f"PyFlink n={n}: {error}")
                continue
            got = flink_to_rows(out["full"]["rows"], queries)
            want, engine_s = engine_rows(workload, queries)
            same = final_state(got) == final_state(want)
            if not same:
                notes.append(f"PyFlink n={n}: results differ from the engine's")
            tuples = len(workload.tuples())
            marginal = out["full"]["seconds"] - out["half"]["seconds"]
            record(f"PyFlink {fv}", "tumbling + session, 20% ooo", n, tuples,
                   2 * marginal if marginal > 0 else None, engine_s, same,
                   {"flink_job_seconds": {k: v["seconds"] for k, v in out.items()}})
    run.table("Peers: tuples/s on the same workload, results checked",
              ["peer", "workload", "windows", "tuples", "peer t/s", "mta.Stream t/s", "Stream / peer", "results"],
              rows_out,
              note="bytewax: one fold_window per query, EventClock waiting 2 s (system time frozen); river: one "
                   "Rolling(Sum) per count query; PyFlink: one window reduce per query, marginal throughput "
                   "(twice the time difference between the stream and its first half; job start-up excluded). "
                   + " ".join(notes))
    return {"params": {"seconds": seconds, "ns": ns, "versions": versions}, "results": results, "notes": notes,
            "targets": [{"target": f"mta.Stream faster than {r['peer']} ({r['workload']}, n={r['n']})",
                         "measured": r["engine_over_peer"], "met": bool(r["engine_over_peer"] and r["engine_over_peer"] > 1)}
                        for r in results], "csv": csv}
