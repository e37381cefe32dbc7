"""SlideSide paper, Fig. 3a (sum) and Fig. 3b (min): multi-query against replicated single-query.

Workload (paper section 4.2): 1 to 65 queries with window sizes uniform in
[1, 32768] (seeded; the workload of q queries is the first q of one draw),
slide 1: every step inserts one partial and answers every query (``answers()``).
Competitors, whatever of them is registered in ``MULTI_QUERY``: SlideSide,
SlickDeque and FlatFAT (range answers), the typed twins of SlideSide and SlickDeque
(``mta.algorithms.typed_mq``, issue 20: compiled when the core is), against the replicated
baseline, SoE for sum and TwoStacks for min (one instance per distinct range). They alternate
within rounds in one process, on the same stream, after the window is full; the
answers of every competitor are compared after every round (ints: exact).
Combines (and inverts) per step come from a separate pass with a CountingMonoid
over a whole lap of the largest window (so amortized rescans are included);
the timed steps are that lap, twice over, and the faster pass counts.

A second part (``--part monoids``) times the typed twins against their object aggregators
for the other monoids they serve (MinCount/MaxCount, First/Last, ArgMin/ArgMax,
Variance/StdDev: the workload's ints as their partials, ArgMin's keyed by position,
StdDev's halved into floats; Records of Count, Sum and Mean, of Sum and Variance, of
Min, First and ArgMin, and mixing sums and selections; float Sum, Mean and Variance on
SlideSide's overlaid variant), the same way (``--monoids`` picks some of them by name).

    python -m benchmarks.multi_query            # full: ~6 minutes
    python -m benchmarks.multi_query --quick    # smoke run, seconds
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from benchmarks.common import Run, gc_paused, num, parser, ratio
from mta.algorithms import MULTI_QUERY, MultiQueryAggregator, typed_mq
from mta.counting import CountingMonoid
from mta.monoid import (ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Monoid, Record, StdDev,
                        Sum, Variance)

#: figure -> (aggregation, monoid, replicated baseline)
FIGURES: dict[str, tuple[str, Callable[[], Monoid], str]] = {
    "3a": ("sum", Sum, "soe"),
    "3b": ("min", Min, "two_stacks"),
}
#: multi-query competitors, in table order (those not registered are left out)
MULTI = ["slideside", "slickdeque", "flatfat"]
#: a competitor ``name + TYPED`` is the typed twin of ``name`` (``typed_mq.twin``)
TYPED = ":typed"
_HOW = "compiled" if typed_mq.COMPILED else "pure"
LABELS = {"slideside": "SlideSide", "slickdeque": "SlickDeque", "flatfat": "FlatFAT",
          "soe": "SoE (replicated)", "two_stacks": "TwoStacks (replicated)",
          "slideside" + TYPED: f"SlideSide ({_HOW})", "slickdeque" + TYPED: f"SlickDeque ({_HOW})"}
TARGET = 3.0  # multi-query over the replicated baseline at the most queries (issue 18)
#: the second part: monoid -> the partial of the workload's ``i``-th value ``v`` (MinCount's
#: values cut to 1,000 distinct, so that counts add up)
MONOIDS: dict[str, tuple[Callable[[], Monoid], Callable[[int, int], Any]]] = {
    "MinCount": (MinCount, lambda i, v: (v % 1000, 1)),
    "MaxCount": (MaxCount, lambda i, v: (v % 1000, 1)),
    "First": (First, lambda i, v: v),
    "Last": (Last, lambda i, v: v),
    "ArgMin": (ArgMin, lambda i, v: (v, i)),
    "ArgMax": (ArgMax, lambda i, v: (v, i)),
    "Variance": (Variance, lambda i, v: (1, v, 0)),
    "StdDev": (StdDev, lambda i, v: (1, v * 0.5, 0)),
    # Records of invertible fields (the twins run one field twin per field in lockstep)
    "Record(Count, Sum, Mean)": (lambda: Record(n=Count(), s=Sum(), m=Mean()), lambda i, v: (1, v, (v, 1))),
    "Record(Sum, Variance)": (lambda: Record(s=Sum(), v=Variance()), lambda i, v: (v, (1, v, 0))),
    "Record(Min, First, ArgMin)": (lambda: Record(m=Min(), f=First(), a=ArgMin()), lambda i, v: (v, v, (v, i))),
    # Records mixing sums and selections: OverlaidSlideSide, a TypedOverlaidSlideSide per field
    "Record(Count, Sum, Min, First)": (lambda: Record(n=Count(), s=Sum(), lo=Min(), f=First()),
                                       lambda i, v: (1, v, v, v)),
    "Record(Count, Sum, Min, Max, Mean, Variance, First, ArgMin)": (
        lambda: Record(n=Count(), s=Sum(), lo=Min(), hi=Max(), m=Mean(), v=Variance(), f=First(), a=ArgMin()),
        lambda i, v: (1, v, v, v, (v, 1), (1, v, 0), v, (v, i))),
    # SlideSide built with inverse=False (:data:`OVERLAID`: the shared final's, once it may not
    # subtract floats), floats: TypedOverlaidSlideSide serves the sums too
    "Sum, floats (inverse=False)": (Sum, lambda i, v: v * 0.5),
    "Mean, floats (inverse=False)": (Mean, lambda i, v: (v * 0.5, 1)),
    "Variance, floats (inverse=False)": (Variance, lambda i, v: (1, v * 0.5, 0)),
}
#: a :data:`MONOIDS` label ending so runs SlideSide's overlaid variant (``inverse=False``)
OVERLAID = " (inverse=False)"


def competitors(monoid: Monoid, baseline: str) -> list[str]:
    """The registered competitors that serve ``monoid``, multi-query first, then their typed
    twins, the baseline last."""
    multi = [name for name in MULTI if name in MULTI_QUERY]
    names = multi + [name + TYPED for name in multi if typed_mq.twin(name, monoid, [1])] + [baseline]
    out = []
    for name in names:
        try:
            MULTI_QUERY[name.removesuffix(TYPED)].check_monoid(monoid)
        except TypeError:
            continue
        out.append(name)
    return out


def workload(seed: int, queries: int, max_range: int, steps: int) -> tuple[list[int], list[int]]:
    """The first ``queries`` ranges of one seeded draw, and the stream: a full window then ``steps``."""
    rng = random.Random(seed)
    ranges = [rng.randint(1, max_range) for _ in range(max(65, queries))][:queries]
    values = [rng.randint(0, 10**6) for _ in range(max(ranges) + steps)]
    return ranges, values


def build(name: str, monoid: Monoid, ranges: list[int], fill: list[int],
          inverse: bool | None = None) -> MultiQueryAggregator:
    """The competitor ``name`` (SlideSide's ``inverse`` when not None), filled with ``fill``."""
    how = {} if inverse is None else {"inverse": inverse}
    if name.endswith(TYPED):
        agg = typed_mq.twin(name.removesuffix(TYPED), monoid, ranges, **how)(monoid, ranges)
    else:
        agg = MULTI_QUERY[name](monoid, ranges, **how)
    insert = agg.insert
    for v in fill:
        insert(v)
    return agg


def timed_steps(agg: MultiQueryAggregator, values: list[int]) -> tuple[int, list[Any]]:
    """Nanoseconds for ``values`` steps of insert + answers(), and the last answers."""
    insert = agg.insert
    answers = agg.answers
    out: list[Any] = []
    with gc_paused():
        start = time.perf_counter_ns()
        for v in values:
            insert(v)
            out = answers()
        elapsed = time.perf_counter_ns() - start
    return elapsed, out


def counted(name: str, make: Callable[[], Monoid], ranges: list[int], values: list[int]) -> float:
    """Combines + inverts per step over the steps after the fill (a typed twin's are its
    object aggregator's: the same combines in the same order)."""
    monoid = CountingMonoid(make())
    n = max(ranges)
    agg = build(name.removesuffix(TYPED), monoid, ranges, values[:n])
    monoid.calls = monoid.inverts = 0
    insert = agg.insert
    answers = agg.answers
    for v in values[n:]:
        insert(v)
        answers()
    return (monoid.calls + monoid.inverts) / (len(values) - n)


def one_point(make: Callable[[], Monoid], names: list[str], ranges: list[int], values: list[Any],
              rounds: int, laps: int, count: bool = True, inverse: bool | None = None) -> dict[str, dict[str, Any]]:
    """Every competitor on the same stream, ``laps`` times over (the best lap counts: each
    lap holds every amortized rescan once); rounds alternate the competitors, and their
    answers are compared after each round."""
    n = max(ranges)
    monoid = make()
    aggs = {name: build(name, monoid, ranges, values[:n], inverse) for name in names}
    stream = values[n:]
    chunk = -(-len(stream) // rounds)
    best = dict.fromkeys(names, float("inf"))
    for _ in range(laps):
        ns = dict.fromkeys(names, 0)
        for start in range(0, len(stream), chunk):
            part = stream[start:start + chunk]
            last = {}
            for name in names:
                elapsed, last[name] = timed_steps(aggs[name], part)
                ns[name] += elapsed
            reference = last[names[-1]]
            for name in names:
                if last[name] != reference:
                    raise AssertionError(f"{name} answers differ from {names[-1]}: "
                                         f"{last[name][:5]} vs {reference[:5]}")
        for name in names:
            best[name] = min(best[name], ns[name])
    return {name: {"steps_per_s": len(stream) / (best[name] / 1e9), "checked": True,
                   **({"combines_per_step": counted(name, make, ranges, values)} if count else {})} for name in names}


def figure(run: Run, fig: str, queries: list[int], max_range: int, steps: int, rounds: int, laps: int,
           seed: int) -> dict[str, Any]:
    aggregation, make, baseline = FIGURES[fig]
    names = competitors(make(), baseline)
    rows, results, typed_rows = [], [], []
    twins = [n for n in names if n.endswith(TYPED)]
    for q in queries:
        ranges, values = workload(seed, q, max_range, steps)
        point = one_point(make, names, ranges, values, rounds, laps)
        base = point[baseline]["steps_per_s"]
        for entry in point.values():
            entry["ratio_vs_baseline"] = ratio(entry["steps_per_s"], base)
        results.append({"queries": q, "distinct": len(set(ranges)), "capacity": max(ranges), "competitors": point})
        rows.append([q] + [num(point[name]["steps_per_s"]) for name in names]
                    + [f"{point[name]['ratio_vs_baseline']:.2f}x" for name in names[:-1]]
                    + [f"{point[name]['combines_per_step']:.1f}" for name in names])
        typed_rows.append([q] + [f"{point[n]['steps_per_s'] / point[n.removesuffix(TYPED)]['steps_per_s']:.2f}x"
                                 for n in twins])
        for n in twins:
            point[n]["ratio_vs_object"] = point[n]["steps_per_s"] / point[n.removesuffix(TYPED)]["steps_per_s"]
        run.log(f"fig {fig}: {q} queries done")
    headers = (["queries"] + [f"{LABELS.get(n, n)} steps/s" for n in names]
               + [f"{LABELS.get(n, n)} / {LABELS[baseline]}" for n in names[:-1]]
               + [f"{LABELS.get(n, n)} ops/step" for n in names])
    last = results[-1]["competitors"]
    verdicts = [f"{LABELS.get(n, n)} {last[n]['ratio_vs_baseline']:.2f}x" for n in names[:-1]]
    best = max((last[n]["ratio_vs_baseline"] for n in names[:-1] if not n.endswith(TYPED)), default=None)
    met = best is not None and best >= TARGET
    note = (f"At {queries[-1]} queries: {', '.join(verdicts)} the replicated baseline "
            f"(target >= {TARGET:g}x: {'met' if met else 'NOT met'}).")
    if "slickdeque" in last:
        note += (f" SlideSide / SlickDeque = "
                 f"{last['slideside']['steps_per_s'] / last['slickdeque']['steps_per_s']:.2f}x.")
    note += " ops/step = combines + inverts per step (insert + answers), counted over the same steps."
    run.table(f"Fig. {fig}: {aggregation}, ranges uniform in [1, {max_range:,}], slide 1, {steps:,} steps",
              headers, rows, note)
    if twins:
        run.table(f"Fig. {fig}: the typed twins ({_HOW}) against their object aggregators",
                  ["queries"] + [f"{LABELS[n]} / {LABELS[n.removesuffix(TYPED)]}" for n in twins], typed_rows,
                  "Same process, same stream, alternated within rounds; answers checked equal every round.")
    return {"aggregation": aggregation, "baseline": baseline, "competitors": names, "results": results,
            "target": TARGET, "target_met": met}


def more_monoids(run: Run, queries: list[int], max_range: int, steps: int, rounds: int, laps: int,
                 seed: int, labels: list[str]) -> dict[str, Any]:
    """The second part: per monoid of :data:`MONOIDS` and query count, each twin against its
    object aggregator (steps/s and the ratio), alternated within rounds, answers checked
    (pair by pair: SlideSide's and SlickDeque's Variance floats differ in their last bits)."""
    out: dict[str, Any] = {}
    rows = []
    for label in labels:
        make, shape = MONOIDS[label]
        inverse = False if label.endswith(OVERLAID) else None
        multi = [n for n in MULTI[:2] if typed_mq.twin(n, make(), [1], inverse=inverse)]
        out[label] = []
        for q in queries:
            ranges, values = workload(seed, q, max_range, steps)
            partials = [shape(i, v) for i, v in enumerate(values)]
            point = {}
            for n in multi:
                point.update(one_point(make, [n + TYPED, n], ranges, partials, rounds, laps, count=False,
                                       inverse=inverse))
            out[label].append({"queries": q, "competitors": point})
            cells = []
            for n in MULTI[:2]:
                if n in multi:
                    twin, obj = point[n + TYPED]["steps_per_s"], point[n]["steps_per_s"]
                    cells += [num(twin), num(obj), f"{twin / obj:.2f}x"]
                else:
                    cells += ["-", "-", "-"]
            rows.append([label, q] + cells)
        run.log(f"monoids: {label} done")
    headers = ["monoid", "queries"] + [f"{LABELS[n]} {what}" for n in MULTI[:2]
                                       for what in (f"{_HOW} steps/s", "object steps/s", f"{_HOW} / object")]
    run.table(f"The typed twins ({_HOW}) against their object aggregators: more monoids, ranges uniform in "
              f"[1, {max_range:,}], slide 1, {steps:,} steps", headers, rows,
              "Same process, same stream, alternated within rounds; answers checked equal every round. "
              "SlickDeque serves no MinCount / MaxCount, nor a Record of selections or mixing sums and "
              "selections (neither invertible nor a selection).")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--queries", default=None, help="comma-separated query counts (default 1,5,9,17,33,65)")
    p.add_argument("--seed", type=int, default=2020)
    p.add_argument("--part", choices=["all", "figures", "monoids"], default="all",
                   help="Fig. 3a/3b, the twins on more monoids, or both (default)")
    p.add_argument("--monoids", default=None,
                   help=f"semicolon-separated monoids of the second part (default all: {'; '.join(MONOIDS)})")
    args = p.parse_args(argv)
    labels = list(MONOIDS) if args.monoids is None else [m.strip() for m in args.monoids.split(";")]
    unknown = [m for m in labels if m not in MONOIDS]
    if unknown:
        p.error(f"unknown monoid {unknown[0]!r} (choose from: {'; '.join(MONOIDS)})")
    if args.quick:
        queries, max_range, steps, rounds, laps = [1, 5, 17], 256, 512, 2, 1
    else:
        queries, max_range, steps, rounds, laps = [1, 5, 9, 17, 33, 65], 32768, 32768, 4, 2
    if args.queries:
        queries = [int(q) for q in args.queries.split(",")]
    params = {"queries": queries, "max_range": max_range, "steps": steps, "rounds": rounds, "laps": laps,
              "seed": args.seed, "monoids": labels}
    run = Run("multi_query", args, params)
    figures = {fig: figure(run, fig, queries, max_range, steps, rounds, laps, args.seed) for fig in FIGURES
               if args.part != "monoids"}
    run.data["figures"] = figures
    if args.part != "figures":
        run.data["monoids"] = more_monoids(run, [queries[0], queries[-1]], max_range, steps, rounds, laps, args.seed,
                                           labels)
    csv_rows = [[fig, entry["queries"], name, c["steps_per_s"], c["ratio_vs_baseline"], c["combines_per_step"]]
                for fig, data in figures.items() for entry in data["results"]
                for name, c in entry["competitors"].items()]
    run.finish(["figure", "queries", "competitor", "steps_per_s", "ratio_vs_baseline", "combines_per_step"],
               csv_rows)
    write_markdown(run)
    return run.data


def write_markdown(run: Run) -> None:
    """The results snippet for BENCHMARKS.md: command, commit, machine, the tables."""
    m = run.data["machine"]
    head = [
        f"## SlideSide Fig. 3a/3b: multi-query vs replicated single-query{' (quick)' if run.args.quick else ''}",
        "",
        f"- command: `{run.data['command']}`",
        f"- commit: {m['git_commit']}, started {run.data['started_utc']}, {run.data['elapsed_s']} s",
        f"- machine: {m['cpu_model']} x{m['cpu_count']}, {m['platform']}, {m['python_implementation']} "
        f"{m['python']}, load {m['loadavg_start']} -> {m.get('loadavg_end')}",
        f"- parameters: {run.data['params']}",
        "",
    ]
    path = run.path(".md")
    path.write_text("\n".join(head) + "\n" + "\n".join(run.markdown))
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
