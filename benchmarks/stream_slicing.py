"""The slicing paper's section 6 in Python (issue #17): ``mta.Stream`` against Scotty's baselines and the peers.

Traub et al., "Efficient Window Aggregation with General Stream Slicing"
(``../shared/papers/general-stream-slicing.txt``). The workload
(:class:`benchmarks.stream_baselines.Workload`) is a synthetic sensor stream: 1,000
tuples per second of event time (integer milliseconds), integer readings, 5 silent
gaps of 1.5 s a minute (they end sessions), a fraction of the tuples delayed by 0-2 s,
and a watermark every second of arrival time, 2 s behind the arrival clock (the
``buffered`` mode: no tuple is ever behind it) or at the clock with 2 s of allowed
lateness (the ``late`` mode: every delayed tuple is late and updates reported windows).
Concurrent windows are tumbling queries with lengths uniform in 1..20 s, whole
seconds by default (``--granularity-ms 1``: any millisecond, every query its own edges).
Every tuple is inserted one by one and the watermark advanced after each second;
throughput is tuples over the time of the whole run (inserts, advances and the final
flush). Every competitor of an experiment runs in the same process, the order rotating
from one repetition to the next, and every run's results are checked equal to the tuple
buffer's (the final state of every window, after updates) before its time counts.
Combines per tuple are counted on a separate untimed run over
:class:`mta.counting.CountingMonoid`.

Experiments (``--exp``, default all but ``peers``; each run keeps the other
experiments' results already in NAME.json):

* ``fig8``: throughput against 1, 10, 100, 1,000 concurrent tumbling windows, in order.
* ``fig9``: the same plus one session window (gap 1 s) and 20% out-of-order tuples.
  Targets: slicing at 1,000 windows >= 0.67x of 1 window, >= 10x one ``Window`` per
  query, >= 10x the tuple buffer and the buckets.
* ``fig11``: latency of a window's final aggregation (one ``advance`` that closes one
  window) against the slices per window, ``final=`` lazy, eager, amta, fiba, auto.
* ``fig12``: throughput against the out-of-order fraction 0-80% (20 windows + session),
  buffered and late. Target: at 80% >= 0.8x of in order.
* ``fig13``: aggregations (Sum, Sum without invert, Max, Mean, Median, ApproxQuantile)
  on time windows and on count windows, 20% out of order, late mode.
* ``fig16``: count windows against the number of concurrent count windows, with and
  without invert (late mode), time windows beside them.
* ``peers``: the same workloads on bytewax, river and PyFlink (see
  :mod:`benchmarks.stream_peers`).

    python -m benchmarks.stream_slicing                # everything but peers (~9 min)
    python -m benchmarks.stream_slicing --exp fig9     # one experiment
    python -m benchmarks.stream_slicing --quick        # smoke run (seconds)
"""

from __future__ import annotations

import random
import sys
from typing import Any, Callable

from benchmarks import common
from benchmarks.common import now_ns, ratio
from benchmarks.stream_baselines import (Buckets, Engine, TupleBuffer, WindowPerQuery, Workload, feed,
                                         final_state)
from mta import ApproxQuantile, Max, Mean, Median, Sum
from mta.counting import CountingMonoid
from mta.monoid import Monoid
from mta.windows import Count, Session, Sliding, Tumbling, WindowType

NAME = "stream_slicing"
EXPERIMENTS = ["fig8", "fig9", "fig11", "fig12", "fig13", "fig16", "peers"]
CSV_HEADERS = ["experiment", "setting", "x", "competitor", "metric", "value"]
FINALS = ["lazy", "eager", "auto"]


class SumNoInvert(Sum):
    """Sum that does not declare its inverse: the engine recomputes instead of subtracting."""

    invertible = False

    def invert(self, total: Any, front: Any) -> Any:
        raise TypeError("SumNoInvert is not invertible")


# --------------------------------------------------------------------------- workload

def tumbling_queries(n: int, granularity_ms: int, seed: int = 7) -> list[tuple[str, WindowType]]:
    """n tumbling queries of lengths uniform in 1..20 s, in steps of ``granularity_ms``."""
    rng = random.Random(seed)
    return [(f"t{i}", Tumbling(rng.randint(1000 // granularity_ms, 20_000 // granularity_ms) * granularity_ms))
            for i in range(n)]


def count_queries(n: int, seed: int = 7) -> list[tuple[str, WindowType]]:
    """n tumbling count windows of 1,000..20,000 tuples (1-20 s of the stream)."""
    rng = random.Random(seed)
    return [(f"c{i}", Count(rng.randint(1, 20) * 1000)) for i in range(n)]


SESSION = ("session", Session(1000))

_ROUNDS: dict[Workload, list] = {}


def rounds_of(workload: Workload) -> list:
    if workload not in _ROUNDS:
        _ROUNDS[workload] = workload.rounds()
    return _ROUNDS[workload]


def build(make: Callable[[Monoid], Any], monoid: Monoid, queries: list[tuple[str, WindowType]]) -> Any:
    competitor = make(monoid)
    for name, spec in queries:
        competitor.add(name, spec)
    return competitor


def engine(final: str, lateness: float = 0) -> Callable[[Monoid], Engine]:
    def make(monoid: Monoid) -> Engine:
        e = Engine(monoid, final=final, allowed_lateness=lateness)
        e.keep_results = lateness > 0  # updates and replaces for the final state
        return e
    make.label = f"slicing ({final})"  # type: ignore[attr-defined]
    return make


def labelled(cls: type) -> Callable[[Monoid], Any]:
    def make(monoid: Monoid) -> Any:
        return cls(monoid)
    make.label = cls.name  # type: ignore[attr-defined]
    return make


class Competitor:
    """One competitor of an experiment: how to build it and the workload it runs (the slow
    baselines run a shorter prefix of the same stream)."""

    def __init__(self, make: Callable[[Monoid], Any], workload: Workload) -> None:
        self.make, self.workload = make, workload
        self.label: str = make.label  # type: ignore[attr-defined]


_REFERENCE: dict[tuple, dict] = {}


def reference(workload: Workload, monoid: Monoid, queries: list) -> dict:
    """The final state of every window, from the tuple buffer on the buffered form of the workload."""
    buffered = Workload(**{**workload.__dict__, "mode": "buffered"})
    key = (buffered, repr(monoid), repr(queries))
    if key not in _REFERENCE:
        _REFERENCE[key] = final_state(feed(build(labelled(TupleBuffer), monoid, queries), rounds_of(buffered)))
    return _REFERENCE[key]


def measure(competitors: list[Competitor], monoid_of: Callable[[], Monoid], queries: list, reps: int,
            check: bool = True) -> dict[str, dict[str, Any]]:
    """Tuples per second of each competitor (median of ``reps`` alternated runs), each run's
    results checked against the tuple buffer's, and combines per tuple (one counted run)."""
    out: dict[str, dict[str, Any]] = {c.label: {"runs_tps": [], "tuples": 0, "checked": False} for c in competitors}
    for rep in range(reps):
        order = competitors[rep % len(competitors):] + competitors[:rep % len(competitors)]
        for c in order:
            rounds = rounds_of(c.workload)
            monoid = monoid_of()
            competitor = build(c.make, monoid, queries)
            with common.gc_paused():
                t0 = now_ns()
                rows = feed(competitor, rounds)
                dt = now_ns() - t0
            tuples = sum(len(batch) for batch, _ in rounds)
            entry = out[c.label]
            entry["runs_tps"].append(tuples / (dt / 1e9))
            entry["tuples"] = tuples
            entry["results"] = len(rows)
            if check:
                got, want = final_state(rows), reference(c.workload, monoid, queries)
                if got != want:
                    bad = [k for k in set(got) | set(want) if got.get(k) != want.get(k)][:3]
                    raise AssertionError(f"{c.label}: results differ from the tuple buffer's "
                                         f"({len(got)} vs {len(want)} windows), e.g. "
                                         + ", ".join(f"{k}: {got.get(k)} != {want.get(k)}" for k in bad))
                entry["checked"] = True
    for c in competitors:
        entry = out[c.label]
        entry["tps"] = common.median(entry["runs_tps"])
        counter = CountingMonoid(monoid_of())
        rounds = rounds_of(c.workload)
        feed(build(c.make, counter, queries), rounds)
        entry["combines_per_tuple"] = counter.calls / max(1, entry["tuples"])
        entry["seconds"] = c.workload.seconds
    return out


def fmt_x(x: float | None) -> str | None:
    return f"{x:,.2f}x" if x is not None else None


def _targets(rows: list[list[Any]]) -> list[dict[str, Any]]:
    return [{"target": t, "measured": m, "met": bool(ok)} for t, m, ok in rows]


def _target_table(run: common.Run, title: str, targets: list[list[Any]]) -> None:
    run.table(title, ["target", "measured", "met"], [[t, m, "yes" if ok else "NO"] for t, m, ok in targets])


# --------------------------------------------------------------------------- fig 8 / 9

def windows_experiment(run: common.Run, args: Any, exp: str) -> dict[str, Any]:
    ooo = exp == "fig9"
    ns = [1, 10] if args.quick else [1, 10, 100, 1000]
    seconds = 4 if args.quick else args.seconds
    reps = 1 if args.quick else args.reps
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    for n in ns:
        queries = tumbling_queries(n, args.granularity_ms) + ([SESSION] if ooo else [])
        full = Workload(seconds=seconds, rate=args.rate, ooo=0.2 if ooo else 0.0)

        def prefix(work: float) -> Workload:
            """The slow baselines' stream: about ``work`` tuple-query steps, 1,000 tuples at least."""
            return Workload(seconds=max(1000 / args.rate, min(seconds, round(work / args.rate / n, 1))), rate=args.rate,
                            ooo=full.ooo)

        competitors = [Competitor(engine(f), full) for f in FINALS]
        competitors += [Competitor(labelled(TupleBuffer), full),
                        Competitor(labelled(Buckets), prefix(2e4 if args.quick else args.bucket_work)),
                        Competitor(labelled(WindowPerQuery), prefix(2e3 if args.quick else args.window_work))]
        m = measure(competitors, Sum, queries, reps)
        best = max(FINALS, key=lambda f: m[f"slicing ({f})"]["tps"])
        slicing = m[f"slicing ({best})"]["tps"]
        entry = {"n": n, "queries": len(queries), "competitors": m, "best_final": best}
        results.append(entry)
        rows.append([n] + [m[c.label]["tps"] for c in competitors]
                    + [fmt_x(ratio(slicing, m[c.label]["tps"])) for c in competitors[len(FINALS):]]
                    + [round(m[c.label]["combines_per_tuple"], 2) for c in competitors]
                    + [", ".join(f"{m[c.label]['seconds']:g}" for c in competitors[len(FINALS):])])
        for c in competitors:
            csv.append([exp, "tuples_per_s", n, c.label, "tps", round(m[c.label]["tps"])])
            csv.append([exp, "combines_per_tuple", n, c.label, "combines", round(m[c.label]["combines_per_tuple"], 3)])
        run.log(f"{exp} n={n}: " + ", ".join(f"{c.label} {m[c.label]['tps']:,.0f}" for c in competitors))
    labels = [c.label for c in competitors]
    base = labels[len(FINALS):]
    run.table(f"{'Fig. 9' if ooo else 'Fig. 8'}: tuples/s against concurrent tumbling windows"
              + (" (+ a session window, 20% out of order)" if ooo else " (in order)"),
              ["windows"] + [f"{l} t/s" for l in labels] + [f"best slicing / {l}" for l in base]
              + [f"{l} combines/tuple" for l in labels] + ["baselines' stream (s)"], rows,
              note=f"Median of {reps} alternated runs. Slicing runs {seconds} s of event time "
                   f"({int(seconds * args.rate):,} tuples at {args.rate:,}/s, lengths in steps of "
                   f"{args.granularity_ms} ms); the baselines the stream seconds in the last column "
                   "(a prefix of the same stream). Every run's window results equal the tuple buffer's.")
    first, last = results[0], results[-1]
    best_last = last["competitors"][f"slicing ({last['best_final']})"]["tps"]
    targets = []
    for f in FINALS:
        x = ratio(last["competitors"][f"slicing ({f})"]["tps"], first["competitors"][f"slicing ({f})"]["tps"])
        targets.append([f"slicing ({f}) at {last['n']} windows >= 0.67x of 1 window", fmt_x(x), x >= 0.67])
    for label in base:
        x = ratio(best_last, last["competitors"][label]["tps"])
        targets.append([f"best slicing at {last['n']} windows >= 10x {label}", fmt_x(x), x >= 10])
    _target_table(run, f"{exp} targets", targets)
    if not args.no_plot:
        common.plot_lines(run.path(f"_{exp}{_png_suffix(args)}.png"),
                          {l: (ns, [e["competitors"][l]["tps"] for e in results]) for l in labels},
                          title=f"{'Fig. 9' if ooo else 'Fig. 8'}: throughput against concurrent windows",
                          xlabel="concurrent tumbling windows", ylabel="tuples / s (log)", logx=10)
    return {"params": {"ns": ns, "seconds": seconds, "reps": reps, "granularity_ms": args.granularity_ms,
                       "ooo": 0.2 if ooo else 0.0, "session": ooo},
            "results": results, "targets": _targets(targets), "csv": csv}


def fig8(run: common.Run, args: Any) -> dict[str, Any]:
    return windows_experiment(run, args, "fig8")


def fig9(run: common.Run, args: Any) -> dict[str, Any]:
    return windows_experiment(run, args, "fig9")


# --------------------------------------------------------------------------- fig 11

LATENCY_FINALS = ["lazy", "eager", "amta", "fiba", "auto"]
ALL_LATENCY = [f"slicing ({f})" for f in LATENCY_FINALS] + ["tuple buffer", "buckets"]


def fig11(run: common.Run, args: Any) -> dict[str, Any]:
    """One sliding query Sliding(n * d, d): every slide cuts one slice (10 tuples) and closes
    one window of n slices; the latency is the time of the ``advance`` that closes it."""
    slice_ms = 10
    ns = [10, 100] if args.quick else [10, 100, 1000, 10_000]
    windows = 20 if args.quick else 200
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    for n in ns:
        spec = Sliding(n * slice_ms, slice_ms)
        workload = Workload(seconds=(n + windows + 2) * slice_ms / 1000, gaps_per_minute=0)
        stream = [(ts, v) for _, ts, v in workload.tuples()]
        competitors: dict[str, Callable[[Monoid], Any]] = {f"slicing ({f})": engine(f) for f in LATENCY_FINALS}
        competitors["tuple buffer"] = labelled(TupleBuffer)
        if n <= 100:
            competitors["buckets"] = labelled(Buckets)
        samples: dict[str, list[float]] = {}
        combines: dict[str, float] = {}
        check: dict[str, list] = {}
        for label, make in competitors.items():  # each its own stream: the windows are timed one by one
            for counted in (False, True):
                monoid = CountingMonoid(Sum()) if counted else Sum()
                c = build(make, monoid, [("w", spec)])
                warm = n * slice_ms
                for ts, v in stream:
                    if ts >= warm:
                        break
                    c.insert(ts, v)
                out = c.advance(warm)
                i = warm  # stream index == ts (one tuple per ms, no gaps)
                times = []
                calls = 0
                with common.gc_paused():
                    for k in range(windows):
                        for ts, v in stream[i:i + slice_ms]:
                            c.insert(ts, v)
                        i += slice_ms
                        before = monoid.calls if counted else 0
                        t0 = now_ns()
                        got = c.advance(i)
                        dt = now_ns() - t0
                        if counted:
                            calls += monoid.calls - before
                        times.append(dt / max(1, len(got)) / 1e3)
                        out += got
                if counted:
                    combines[label] = calls / windows
                else:
                    samples[label] = times
                    check[label] = sorted(out)
        ref = check["tuple buffer"]
        for label, got in check.items():
            if got != ref:
                raise AssertionError(f"fig11 n={n}: {label} results differ from the tuple buffer's")
        med = {label: common.median(t) for label, t in samples.items()}
        results.append({"slices_per_window": n, "us_per_result": med, "combines_per_result": combines,
                        "p99_us": {l: sorted(t)[int(0.99 * (len(t) - 1))] for l, t in samples.items()}})
        rows.append([n] + [med.get(l) for l in ALL_LATENCY] + [round(combines[l], 1) if l in combines else None
                                                              for l in ALL_LATENCY])
        for label in med:
            csv.append(["fig11", "us_per_result", n, label, "median_us", round(med[label], 3)])
            csv.append(["fig11", "combines_per_result", n, label, "combines", round(combines[label], 2)])
        run.log(f"fig11 n={n}: " + ", ".join(f"{l} {v:.1f} us" for l, v in med.items()))
    run.table("Fig. 11: latency of one window's result (us) against slices per window",
              ["slices / window"] + [f"{l} us" for l in ALL_LATENCY] + [f"{l} combines" for l in ALL_LATENCY], rows,
              note=f"One query Sliding(n x {slice_ms} ms, {slice_ms} ms) in order, {slice_ms} tuples a slice; the time "
                   f"of each advance that closes one window (median of {windows}, after n slices of warm-up), "
                   "inserts not included. Buckets only up to 100 (each tuple goes into n buckets).")
    if not args.no_plot:
        common.plot_lines(run.path("_fig11.png"),
                          {l: ([e["slices_per_window"] for e in results if l in e["us_per_result"]],
                               [e["us_per_result"][l] for e in results if l in e["us_per_result"]])
                           for l in ALL_LATENCY},
                          title="Fig. 11: final aggregation latency", xlabel="slices per window",
                          ylabel="us per window result (log)", logx=10)
    return {"params": {"ns": ns, "windows": windows, "slice_ms": slice_ms}, "results": results, "targets": [],
            "csv": csv}



# --------------------------------------------------------------------------- fig 12

def fig12(run: common.Run, args: Any) -> dict[str, Any]:
    fractions = [0.0, 0.4, 0.8] if args.quick else [0.0, 0.2, 0.4, 0.6, 0.8]
    seconds = 4 if args.quick else args.seconds
    reps = 1 if args.quick else args.reps
    queries = tumbling_queries(20, args.granularity_ms) + [SESSION]
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    labels: list[str] = []
    for f in fractions:
        buffered = Workload(seconds=seconds, rate=args.rate, ooo=f)
        late = Workload(seconds=seconds, rate=args.rate, ooo=f, mode="late")
        competitors = [Competitor(engine(x), buffered) for x in FINALS]
        competitors += [Competitor(labelled(TupleBuffer), buffered), Competitor(labelled(Buckets), buffered)]
        lates = [Competitor(engine(x, late.allowed_lateness), late) for x in FINALS]
        for c in lates:
            c.label += " late"
            c.make.label = c.label  # type: ignore[attr-defined]
        m = measure(competitors + lates, Sum, queries, reps)
        labels = [c.label for c in competitors + lates]
        results.append({"ooo": f, "competitors": m})
        rows.append([f"{f:.0%}"] + [m[l]["tps"] for l in labels] + [round(m[l]["combines_per_tuple"], 2) for l in labels])
        for l in labels:
            csv.append(["fig12", "tuples_per_s", f, l, "tps", round(m[l]["tps"])])
        run.log(f"fig12 ooo={f:.0%}: " + ", ".join(f"{l} {m[l]['tps']:,.0f}" for l in labels))
    run.table("Fig. 12: tuples/s against the out-of-order fraction (20 tumbling windows + a session)",
              ["out of order"] + [f"{l} t/s" for l in labels] + [f"{l} combines/tuple" for l in labels], rows,
              note=f"Delays uniform in 0-2 s. Plain: the watermark trails the clock by 2 s (delayed tuples are "
                   f"sorted before they reach the slices); 'late': the watermark is the clock and 2 s of allowed "
                   f"lateness take the delayed tuples as late ones (slice updates, window updates). "
                   f"Median of {reps} alternated runs of {seconds} s.")
    targets = []
    for l in labels:
        if l.startswith("slicing"):
            x = ratio(results[-1]["competitors"][l]["tps"], results[0]["competitors"][l]["tps"])
            targets.append([f"{l} at {fractions[-1]:.0%} out of order >= 0.8x of in order", fmt_x(x), x >= 0.8])
    _target_table(run, "fig12 targets", targets)
    if not args.no_plot:
        common.plot_lines(run.path(f"_fig12{_png_suffix(args)}.png"),
                          {l: ([100 * e["ooo"] for e in results], [e["competitors"][l]["tps"] for e in results])
                           for l in labels},
                          title="Fig. 12: throughput against out-of-order tuples", xlabel="out-of-order tuples (%)",
                          ylabel="tuples / s (log)", logx=None)
    return {"params": {"fractions": fractions, "seconds": seconds, "reps": reps}, "results": results,
            "targets": _targets(targets), "csv": csv}


# --------------------------------------------------------------------------- fig 13 / 16

AGGREGATIONS: dict[str, Callable[[], Monoid]] = {
    "Sum": Sum, "Sum w/o invert": SumNoInvert, "Max": Max, "Mean": Mean, "Median": Median,
    "ApproxQuantile(0.9)": lambda: ApproxQuantile(0.9),
}


def fig13(run: common.Run, args: Any) -> dict[str, Any]:
    seconds = 4 if args.quick else args.seconds
    reps = 1 if args.quick else args.reps
    workload = Workload(seconds=seconds, rate=args.rate, ooo=0.2, mode="late")
    kinds = {"time": tumbling_queries(20, args.granularity_ms) + [SESSION], "count": count_queries(20)}
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    for agg, monoid_of in AGGREGATIONS.items():
        exact = agg != "ApproxQuantile(0.9)"  # the sketch compacts at random: no exact reference
        row: list[Any] = [agg]
        entry: dict[str, Any] = {"aggregation": agg, "checked": exact}
        for kind, queries in kinds.items():
            c = Competitor(engine("auto", workload.allowed_lateness), workload)
            m = measure([c], monoid_of, queries, reps, check=exact)[c.label]
            entry[kind] = m
            row += [m["tps"], round(m["combines_per_tuple"], 2)]
            csv.append(["fig13", kind, agg, c.label, "tps", round(m["tps"])])
            csv.append(["fig13", kind, agg, c.label, "combines_per_tuple", round(m["combines_per_tuple"], 3)])
        results.append(entry)
        rows.append(row)
        run.log(f"fig13 {agg}: time {entry['time']['tps']:,.0f}, count {entry['count']['tps']:,.0f} t/s")
    run.table("Fig. 13: tuples/s of each aggregation (20 windows, 20% out of order, late mode)",
              ["aggregation", "time windows t/s", "time combines/tuple", "count windows t/s",
               "count combines/tuple"], rows,
              note=f"Time: 20 tumbling windows of 1-20 s and a session (gap 1 s); count: 20 tumbling count windows "
                   f"of 1,000-20,000 tuples. Watermark at the arrival clock, allowed lateness 2 s: the 20% delayed "
                   f"tuples are late (a late tuple shifts the positions of every later tuple of the count windows). "
                   f"Median of {reps} runs of {seconds} s, slicing (auto). Results equal the tuple buffer's "
                   "(ApproxQuantile not checked: randomized compaction).")
    return {"params": {"seconds": seconds, "reps": reps}, "results": results, "targets": [], "csv": csv}


def fig16(run: common.Run, args: Any) -> dict[str, Any]:
    ns = [1, 10] if args.quick else [1, 10, 20, 40, 100, 1000]
    seconds = 4 if args.quick else args.seconds
    reps = 1 if args.quick else args.reps
    late = Workload(seconds=seconds, rate=args.rate, ooo=0.2, mode="late")
    buffered = Workload(seconds=seconds, rate=args.rate, ooo=0.2)
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    variants = [("count, Sum, late", Sum, late, "count"), ("count, Sum w/o invert, late", SumNoInvert, late, "count"),
                ("count, Sum, buffered", Sum, buffered, "count"), ("time, Sum, late", Sum, late, "time")]
    for n in ns:
        entry: dict[str, Any] = {"n": n}
        row: list[Any] = [n]
        for label, monoid_of, workload, kind in variants:
            queries = count_queries(n) if kind == "count" else tumbling_queries(n, args.granularity_ms)
            c = Competitor(engine("auto", workload.allowed_lateness), workload)
            m = measure([c], monoid_of, queries, reps)[c.label]
            entry[label] = m
            row += [m["tps"]]
            csv.append(["fig16", label, n, c.label, "tps", round(m["tps"])])
        queries = count_queries(n)
        tb = Competitor(labelled(TupleBuffer), buffered)
        entry["count, tuple buffer, buffered"] = m = measure([tb], Sum, queries, reps)["tuple buffer"]
        row += [m["tps"], fmt_x(ratio(entry["count, Sum, buffered"]["tps"], m["tps"]))]
        row += [round(entry[v[0]]["combines_per_tuple"], 2) for v in variants[:2]]
        csv.append(["fig16", "count, tuple buffer, buffered", n, "tuple buffer", "tps", round(m["tps"])])
        results.append(entry)
        rows.append(row)
        run.log(f"fig16 n={n}: " + ", ".join(f"{k} {v['tps']:,.0f}" for k, v in entry.items() if k != "n"))
    run.table("Fig. 16: tuples/s against concurrent count windows (20% out of order)",
              ["windows"] + [f"{v[0]} t/s" for v in variants] + ["count, tuple buffer, buffered t/s",
                                                                 "slicing / tuple buffer (buffered)"]
              + [f"{v[0]} combines/tuple" for v in variants[:2]], rows,
              note="Count windows: tumbling, 1,000-20,000 tuples. 'late': watermark at the clock, 2 s of allowed "
                   "lateness (late tuples shift count positions: invert or recompute); 'buffered': watermark 2 s "
                   f"behind (the tuple buffer needs it). Median of {reps} runs of {seconds} s, slicing (auto).")
    if not args.no_plot:
        series = {v[0]: (ns, [e[v[0]]["tps"] for e in results]) for v in variants}
        series["count, tuple buffer, buffered"] = (ns, [e["count, tuple buffer, buffered"]["tps"] for e in results])
        common.plot_lines(run.path("_fig16.png"), series, title="Fig. 16: count windows", logx=10,
                          xlabel="concurrent windows", ylabel="tuples / s (log)")
    return {"params": {"ns": ns, "seconds": seconds, "reps": reps}, "results": results, "targets": [], "csv": csv}


# --------------------------------------------------------------------------- peers

def peers(run: common.Run, args: Any) -> dict[str, Any]:
    from benchmarks import stream_peers
    return stream_peers.run_peers(run, args)


# --------------------------------------------------------------------------- main

RUNS: dict[str, Callable[[common.Run, Any], dict[str, Any]]] = {
    "fig8": fig8, "fig9": fig9, "fig11": fig11, "fig12": fig12, "fig13": fig13, "fig16": fig16, "peers": peers}


def _setting(args: Any) -> str:
    """The key suffix of a run with a non-default workload (kept beside the default one)."""
    parts = [f"rate={args.rate}"] if args.rate != 1000 else []
    parts += [f"granularity={args.granularity_ms}ms"] if args.granularity_ms != 1000 else []
    return f"[{', '.join(parts)}]" if parts else ""


def _png_suffix(args: Any) -> str:
    return "".join(c for c in _setting(args).replace(", ", "_") if c.isalnum() or c in "=_").replace("=", "")


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--exp", choices=EXPERIMENTS + ["all"], default="all", help="all: every experiment but peers")
    p.add_argument("--seconds", type=float, default=60, help="event-time seconds of the stream")
    p.add_argument("--rate", type=int, default=1000, help="tuples per second of event time (divides 1000 or is a "
                   "multiple of it)")
    p.add_argument("--reps", type=int, default=3, help="timed runs per competitor (median reported)")
    p.add_argument("--granularity-ms", type=int, default=1000, choices=[1, 10, 100, 1000],
                   help="tumbling lengths are multiples of this (1000: whole seconds)")
    p.add_argument("--bucket-work", type=float, default=1e7, help="tuple-window steps per buckets run")
    p.add_argument("--window-work", type=float, default=1e6, help="tuple-window steps per Window-per-query run")
    p.add_argument("--flink-python", default=None,
                   help="python of a virtualenv with apache-flink (default: $MTA_FLINK_PYTHON)")
    p.add_argument("--peers-seconds", type=float, default=20, help="event-time seconds of the peers' stream")
    args = p.parse_args(argv)
    exps = [e for e in EXPERIMENTS if e != "peers"] if args.exp == "all" else [args.exp]
    run = common.Run(NAME, args, {"experiments": exps, "workload": Workload.__doc__.split("\n\n")[1].strip()})
    done: dict[str, Any] = {}
    for exp in exps:
        done[exp + _setting(args)] = run.experiment(exp, lambda: RUNS[exp](run, args))
    experiments = run.keep_experiments(done)
    run.finish(CSV_HEADERS, [row for e in experiments.values() for row in e["csv"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
