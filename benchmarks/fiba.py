"""The FiBA paper's section 5 in Python (issue #16): FiBA against the classic B-tree and the in-order SWAGs.

Tangwongsan, Hirzel, Schneider, "Out-of-Order Sliding-Window Aggregation with
Efficient Bulk Evictions and Insertions" (``../shared/papers/fiba-out-of-order.txt``).
Monoid: ``Sum`` of 1s (the paper's cheap operator; a query's answer is the window's
size, checked after every timed section). Every competitor of an experiment runs in the
same process, alternated within each measurement (the VM's speed swings 2x within
seconds; the order rotates from one repetition to the next); medians are reported with
ratios. Beside each time, combines per round are counted on a twin of each structure
built over a counting monoid (:class:`mta.counting.CountingMonoid`), so that the counts
cost the timed structures nothing. The cyclic GC stays off through each experiment
(collected between window sizes): a collection over millions of tree nodes takes seconds.

Rounds follow the paper's generator (section 5.1): the window is built with n entries
whose d newest have "high" keys, above every key inserted later; a round evicts the
oldest entry, inserts the next key (exactly d entries below the newest) and queries.
The window is built by in-order inserts (FiBA's O(1) append); moving to a larger d
bulk-evicts the oldest entries and appends more high keys, so one tree serves every d.

Experiments (``--exp``, default all; each run keeps the other experiments' results
already in NAME.json):

* ``fig11``: time per round against d at n = 2^16 and 2^20, FiBA of min arity 2, 4, 8,
  16 against the B-tree of min arity 2 and 4. Targets: FiBA >= 2x the B-tree's
  throughput at d = 0, within 0.8-1.25x at d >= n/4.
* ``fig12``: latency of each round and of each operation (min, median, p99, p99.9,
  max; one ``perf_counter_ns`` around each operation) at d = 0 and d = n/4.
* ``fig13``: in-order rounds (d = 0), FiBA against AMTA, TwoStacks, DABA and FlatFAT
  (and the B-tree) for n = 2^4 .. 2^20. Targets: FiBA flat in n (slowest / fastest
  <= 1.5) and at least 0.5x DABA's throughput.
* ``fig14``: window sharing (section 5.4): a big window of n entries and a small one of
  s; d = s / 2. ``range``: one FiBA of n, ``query()`` for the big window and
  ``query_range`` for the small one; ``twin``: a FiBA of n and a FiBA of s.
* ``bulk``: as the MTA paper's Experiment 2 (``benchmarks.exp2_bulk_eviction``):
  a FiBA of 2^22 (in order), latency of ``evict_upto`` evicting k against evicting
  the same k one by one (``evict`` of the oldest, k times), refilled by in-order
  appends (untimed) before each measurement; repetitions as Experiment 2's (one by one
  once above k = 2^16), evict_upto at least 3 times. Targets: logarithmic in k, and at least
  1000x faster than one by one at k = 2^21.

    python -m benchmarks.fiba                  # all (~7 min; BENCHMARKS.md ran them one at a time)
    python -m benchmarks.fiba --exp fig11      # one experiment
    python -m benchmarks.fiba --quick          # smoke run (seconds)
"""

from __future__ import annotations

import gc
import json
import math
import sys
from typing import Any, Callable

from benchmarks import common
from benchmarks.common import label, now_ns, pow2, ratio
from benchmarks.exp2_bulk_eviction import fit_linear, fit_log, k_values, repetitions
from mta.algorithms import ALGORITHMS, BTree, FiBA, OrderedAggregator
from mta.counting import CountingMonoid
from mta.monoid import Monoid, Sum

NAME = "fiba"
EXPERIMENTS = ["fig11", "fig12", "fig13", "fig14", "bulk"]
#: The first "high" key: above every key a round inserts.
HIGH = 1 << 62
#: The CSV's columns (long format: one measured value a row, every experiment).
CSV_HEADERS = ["experiment", "n", "d", "variant", "metric", "value"]


# --------------------------------------------------------------------------- workload

class Distanced:
    """A window of ``n`` entries whose every round inserts exactly ``d`` entries below the
    newest (section 5.1's adversarial generator).

    Invariant: the keys are the "regular" keys ``lo .. next - 1`` (n - d of them,
    consecutive) and the d high keys ``HIGH .. HIGH + d - 1``; a round evicts ``lo`` and
    inserts ``next``, which lands below the d high keys."""

    def __init__(self, tree: OrderedAggregator, n: int, d: int = 0) -> None:
        self.tree = tree
        self.n = n
        self.d = 0
        insert = tree.insert
        for key in range(n):  # in order: FiBA's O(1) append
            insert(key, 1)
        self.lo, self.next = 0, n
        self.shift(d)

    def shift(self, d: int) -> None:
        """Make the distance ``d`` (not smaller than now): bulk-evict the ``d - self.d``
        oldest regular entries and append as many high keys."""
        if not self.d <= d < self.n:
            raise ValueError(f"distance {d} not in [{self.d}, {self.n})")
        extra = d - self.d
        if extra:
            self.tree.evict_upto(self.lo + extra - 1)
            self.lo += extra
            insert = self.tree.insert
            for j in range(self.d, d):
                insert(HIGH + j, 1)
        self.d = d

    def rounds(self, count: int) -> None:
        """``count`` rounds of evict oldest + insert at distance d + query."""
        tree = self.tree
        evict, insert, query = tree.evict, tree.insert, tree.query
        lo, nxt = self.lo, self.next
        for _ in range(count):
            evict(lo)
            insert(nxt, 1)
            query()
            lo += 1
            nxt += 1
        self.lo, self.next = lo, nxt

    def timed_rounds(self, count: int, out: list[tuple[int, int, int]]) -> None:
        """As :meth:`rounds`, appending (evict, insert, query) nanoseconds of each round to ``out``."""
        tree = self.tree
        evict, insert, query = tree.evict, tree.insert, tree.query
        lo, nxt = self.lo, self.next
        append = out.append
        for _ in range(count):
            t0 = now_ns()
            evict(lo)
            t1 = now_ns()
            insert(nxt, 1)
            t2 = now_ns()
            query()
            t3 = now_ns()
            append((t1 - t0, t2 - t1, t3 - t2))
            lo += 1
            nxt += 1
        self.lo, self.next = lo, nxt

    def check(self) -> None:
        if self.tree.query() != self.n:
            raise AssertionError(f"{self.tree.name}: query {self.tree.query()} != window size {self.n}")


class InOrder:
    """An in-order SWAG (:class:`mta.algorithms.Aggregator`) of ``n`` entries, with the
    same rounds (evict the oldest, insert, query)."""

    def __init__(self, agg: Any, n: int) -> None:
        self.agg = agg
        self.n = n
        agg.insert_many([1] * n)

    def rounds(self, count: int) -> None:
        agg = self.agg
        evict, insert, query = agg.evict, agg.insert, agg.query
        for _ in range(count):
            evict()
            insert(1)
            query()

    def check(self) -> None:
        if self.agg.query() != self.n:
            raise AssertionError(f"{self.agg.name}: query {self.agg.query()} != window size {self.n}")


def ordered_variants(fiba_arities: list[int], btree_arities: list[int]) -> dict[str, Callable[[Monoid], Any]]:
    """Label -> a factory of the tree over a monoid."""
    out: dict[str, Callable[[Monoid], Any]] = {}
    for a in fiba_arities:
        out[f"FiBA-{a}"] = lambda m, a=a: FiBA(m, min_arity=a)
    for a in btree_arities:
        out[f"BTree-{a}"] = lambda m, a=a: BTree(m, min_arity=a)
    return out


# --------------------------------------------------------------------------- measuring

def alternate(runners: dict[str, Callable[[int], Any]], steps: int, reps: int) -> dict[str, list[float]]:
    """Microseconds per round of each runner: ``reps`` timed runs of ``steps`` rounds, the
    runners taking turns within each repetition (the order rotating). The caller keeps the
    cyclic GC off (see :func:`main`): a collection per run would cost seconds at 2^20."""
    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            run = runners[name]
            t0 = now_ns()
            run(steps)
            times[name].append((now_ns() - t0) / steps / 1e3)
    return times


def combines(run: Callable[[int], Any], monoid: CountingMonoid, steps: int) -> float:
    """Combines per round over ``steps`` rounds of ``run`` (built over ``monoid``)."""
    before = monoid.calls
    run(steps)
    return (monoid.calls - before) / steps


def percentile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 < q <= 100) of sorted values."""
    return sorted_values[max(0, math.ceil(q / 100 * len(sorted_values)) - 1)]


def distances(n: int) -> list[int]:
    """0, then powers of 4 up to n / 4, and n / 2 (the paper's d goes up to n)."""
    ds = [0]
    d = 1
    while d <= n // 4:
        ds.append(d)
        d *= 4
    return ds + [n // 2]


def fmt_ratio(x: float | None) -> str | None:
    return f"{x:,.2f}x" if x is not None else None


# --------------------------------------------------------------------------- fig 11

def fig11(run: common.Run, args: Any) -> dict[str, Any]:
    ns = [2 ** 10] if args.quick else [2 ** 16, 2 ** 20]
    steps, reps = (100, 3) if args.quick else (args.steps, args.reps)
    variants = ordered_variants(args.arities, args.btree_arities)
    fibas = [v for v in variants if v.startswith("FiBA")]
    btrees = [v for v in variants if v.startswith("BTree")]
    results: list[dict[str, Any]] = []
    targets: list[list[Any]] = []
    csv: list[list[Any]] = []
    for n in ns:
        t_build = now_ns()
        timed = {v: Distanced(make(Sum()), n) for v, make in variants.items()}
        counters = {v: CountingMonoid(Sum()) for v in variants}
        counted = {v: Distanced(make(counters[v]), n) for v, make in variants.items()}
        run.log(f"fig11 n={pow2(n)}: built {2 * len(variants)} trees in {(now_ns() - t_build) / 1e9:.1f} s")
        rows = []
        for d in distances(n):
            for v in variants:
                timed[v].shift(d)
                counted[v].shift(d)
            times = alternate({v: timed[v].rounds for v in variants}, steps, reps)
            for v in variants:
                timed[v].check()
            us = {v: common.median(t) for v, t in times.items()}
            cpr = {v: combines(counted[v].rounds, counters[v], steps) for v in variants}
            best_btree = min(us[b] for b in btrees)
            best_fiba = min(fibas, key=lambda v: us[v])
            entry = {"n": n, "d": d, "us_per_round": us, "runs_us": times, "combines_per_round": cpr,
                     "fiba_over_best_btree": {v: ratio(best_btree, us[v]) for v in fibas}}
            results.append(entry)
            rows.append([d] + [us[v] for v in variants] + [f"{best_fiba}: {ratio(best_btree, us[best_fiba]):,.2f}x"]
                        + [round(cpr[v], 1) for v in variants])
            for v in variants:
                csv.append(["fig11", n, d, v, "us_per_round", round(us[v], 3)])
                csv.append(["fig11", n, d, v, "combines_per_round", round(cpr[v], 2)])
            run.log(f"  d={d}: " + ", ".join(f"{v} {us[v]:.2f}" for v in variants))
        run.table(f"Fig. 11: us per round (evict + insert at distance d + query), n = {pow2(n)}",
                  ["d"] + [f"{v} us" for v in variants] + ["best FiBA / best BTree throughput"]
                  + [f"{v} combines" for v in variants], rows,
                  note=f"Median of {reps} alternated runs of {steps} rounds; combines per round counted "
                       f"over {steps} rounds on a twin over a counting monoid.")
        del timed, counted
        gc.collect()  # the trees' parent pointers are cycles; the GC is off
        # targets at this n
        at0 = next(e for e in results if e["n"] == n and e["d"] == 0)
        x0 = max(at0["fiba_over_best_btree"].values())
        targets.append([f"n={pow2(n)}, d=0: best FiBA >= 2x best BTree", fmt_ratio(x0), x0 >= 2])
        for e in (e for e in results if e["n"] == n and e["d"] >= n // 4):
            xs = e["fiba_over_best_btree"]
            inside = [v for v in fibas if 0.8 <= xs[v] <= 1.25]
            targets.append([f"n={pow2(n)}, d={pow2(e['d'])}: FiBA within 0.8-1.25x of best BTree",
                            ", ".join(f"{v} {xs[v]:.2f}x" for v in fibas), bool(inside)])
    run.table("Fig. 11 targets", ["target", "measured (FiBA / best BTree throughput)", "met"],
              [[t, m, "yes" if ok else "NO"] for t, m, ok in targets],
              note="d >= n/4 is met when at least one arity is inside the band; the ratio of each is listed.")
    if not args.no_plot:
        series = {}
        for n in ns:
            for v in variants:
                pts = [e for e in results if e["n"] == n]
                series[f"{v} n={pow2(n)}"] = ([e["d"] + 1 for e in pts], [1e6 / e["us_per_round"][v] for e in pts])
        common.plot_lines(run.path("_fig11.png"), series, title="Fig. 11: rounds per second against distance",
                          xlabel="out-of-order distance d + 1", ylabel="rounds / s (log)")
    return {"params": {"ns": ns, "steps": steps, "reps": reps, "variants": list(variants)},
            "results": results, "targets": _targets(targets), "csv": csv}


# --------------------------------------------------------------------------- fig 12

OPS = ["round", "evict", "insert", "query"]


def fig12(run: common.Run, args: Any) -> dict[str, Any]:
    n = 2 ** 10 if args.quick else 2 ** 18
    chunks, per_chunk = (2, 500) if args.quick else (10, 2000)
    variants = ordered_variants(args.arities, args.btree_arities)
    trees = {v: Distanced(make(Sum()), n) for v, make in variants.items()}
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    for d in (0, n // 4):
        samples: dict[str, list[tuple[int, int, int]]] = {v: [] for v in variants}
        for v in variants:
            trees[v].shift(d)
        names = list(variants)
        for c in range(chunks):  # alternated in chunks, the order rotating
            for v in names[c % len(names):] + names[:c % len(names)]:
                trees[v].timed_rounds(per_chunk, samples[v])
        for v in variants:
            trees[v].check()
            stats = {}
            for i, op in enumerate(OPS):
                values = sorted((sum(s) if op == "round" else s[i - 1]) / 1e3 for s in samples[v])
                stats[op] = {"min": values[0], "median": common.median(values), "p99": percentile(values, 99),
                             "p99.9": percentile(values, 99.9), "max": values[-1]}
                for metric, value in stats[op].items():
                    csv.append(["fig12", n, d, v, f"{op}_{metric}_us", round(value, 3)])
            results.append({"n": n, "d": d, "variant": v, "samples": len(samples[v]), "us": stats})
            for op in OPS:
                s = stats[op]
                rows.append([d, v, op, s["min"], s["median"], s["p99"], s["p99.9"], s["max"]])
    run.table(f"Fig. 12: latency (us) per round and per operation, n = {pow2(n)}",
              ["d", "variant", "op", "min", "median", "p99", "p99.9", "max"], rows,
              note=f"{chunks * per_chunk} rounds per variant and d, alternated in chunks of {per_chunk}; "
                   f"one perf_counter_ns (~0.05-0.1 us) around each operation; round = their sum.")
    if not args.no_plot:
        groups = [f"{r['variant']}\nd={pow2(r['d']) if r['d'] else 0}" for r in results]
        common.plot_bars(run.path("_fig12.png"), groups,
                         {m: [r["us"]["round"][m] for r in results] for m in ("min", "median", "p99", "p99.9", "max")},
                         title=f"Fig. 12: round latency, n = {pow2(n)}", ylabel="us (log)")
    return {"params": {"n": n, "rounds": chunks * per_chunk, "chunk": per_chunk, "variants": list(variants)},
            "results": results, "targets": [], "csv": csv}


# --------------------------------------------------------------------------- fig 13

def fig13(run: common.Run, args: Any) -> dict[str, Any]:
    ns = [2 ** k for k in ((4, 6, 8) if args.quick else range(4, 21, 2))]
    steps, reps = (100, 3) if args.quick else (args.steps, args.reps)
    ordered = ordered_variants(args.arities, args.btree_arities[-1:])
    baselines = args.algorithms or ["amta", "two_stacks", "daba", "flatfat"]
    names = list(ordered) + [label(a) for a in baselines]
    fibas = [v for v in ordered if v.startswith("FiBA")]

    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    for n in ns:
        timed = {v: _build_one(v, ordered, baselines, Sum(), n) for v in names}
        counters = {v: CountingMonoid(Sum()) for v in names}
        counted = {v: _build_one(v, ordered, baselines, counters[v], n) for v in names}
        times = alternate({v: timed[v].rounds for v in names}, steps, reps)
        for w in timed.values():
            w.check()
        us = {v: common.median(t) for v, t in times.items()}
        cpr = {v: combines(counted[v].rounds, counters[v], steps) for v in names}
        results.append({"n": n, "us_per_round": us, "runs_us": times, "combines_per_round": cpr})
        daba = us.get("DABA")
        rows.append([pow2(n)] + [us[v] for v in names]
                    + ([fmt_ratio(ratio(daba, min(us[v] for v in fibas)))] if daba else [])
                    + [round(cpr[v], 1) for v in names])
        for v in names:
            csv.append(["fig13", n, 0, v, "us_per_round", round(us[v], 3)])
            csv.append(["fig13", n, 0, v, "combines_per_round", round(cpr[v], 2)])
        run.log(f"fig13 n={pow2(n)}: " + ", ".join(f"{v} {us[v]:.2f}" for v in names))
        del timed, counted
        gc.collect()  # the trees' parent pointers are cycles; the GC is off
    run.table("Fig. 13: in-order rounds (d = 0), us per round", ["n"] + [f"{v} us" for v in names]
              + (["best FiBA / DABA throughput"] if "DABA" in names else []) + [f"{v} combines" for v in names], rows,
              note=f"Median of {reps} alternated runs of {steps} rounds; combines per round counted over {steps} "
                   f"rounds on a twin over a counting monoid.")
    targets = []
    for v in fibas:
        series = [e["us_per_round"][v] for e in results]
        spread = max(series) / min(series)
        targets.append([f"{v} flat in n: slowest / fastest <= 1.5", f"{spread:.2f}", spread <= 1.5])
    if "DABA" in names:
        for v in fibas:
            worst = min(e["us_per_round"]["DABA"] / e["us_per_round"][v] for e in results)
            targets.append([f"{v} >= 0.5x DABA's throughput at every n", f"worst {worst:.2f}x", worst >= 0.5])
    run.table("Fig. 13 targets", ["target", "measured", "met"], [[t, m, "yes" if ok else "NO"] for t, m, ok in targets])
    if not args.no_plot:
        common.plot_lines(run.path("_fig13.png"),
                          {v: (ns, [e["us_per_round"][v] for e in results]) for v in names},
                          title="Fig. 13: in-order rounds against window size", xlabel="window size n",
                          ylabel="us per round (log)")
    return {"params": {"ns": ns, "steps": steps, "reps": reps, "variants": names},
            "results": results, "targets": _targets(targets), "csv": csv}


def _build_one(name: str, ordered: dict[str, Callable[[Monoid], Any]], baselines: list[str], monoid: Monoid,
               n: int) -> Any:
    """The window of n entries of the variant called ``name`` (a tree, or an in-order SWAG)."""
    if name in ordered:
        return Distanced(ordered[name](monoid), n)
    return InOrder(ALGORITHMS[next(a for a in baselines if label(a) == name)](monoid), n)


# --------------------------------------------------------------------------- fig 14

def shared_rounds(big: Distanced, small_size: int) -> Callable[[int], None]:
    """Rounds on one tree serving both windows: ``query()`` for the big one, and
    ``query_range`` over the ``small_size`` newest entries (the d high keys and the
    ``small_size - d`` newest regular keys) for the small one."""
    tree = big.tree
    width = small_size - big.d
    top = HIGH + big.d

    def rounds(count: int) -> None:
        evict, insert, query, query_range = tree.evict, tree.insert, tree.query, tree.query_range
        lo, nxt = big.lo, big.next
        for _ in range(count):
            evict(lo)
            insert(nxt, 1)
            query()
            query_range(nxt - width + 1, top)
            lo += 1
            nxt += 1
        big.lo, big.next = lo, nxt

    return rounds


def twin_rounds(big: Distanced, small: Distanced) -> Callable[[int], None]:
    """Rounds on two trees, one per window, each getting every update (at distance d)."""

    def rounds(count: int) -> None:
        b, s = big.tree, small.tree
        b_evict, b_insert, b_query = b.evict, b.insert, b.query
        s_evict, s_insert, s_query = s.evict, s.insert, s.query
        b_lo, b_next, s_lo, s_next = big.lo, big.next, small.lo, small.next
        for _ in range(count):
            b_evict(b_lo)
            b_insert(b_next, 1)
            b_query()
            s_evict(s_lo)
            s_insert(s_next, 1)
            s_query()
            b_lo += 1
            b_next += 1
            s_lo += 1
            s_next += 1
        big.lo, big.next, small.lo, small.next = b_lo, b_next, s_lo, s_next

    return rounds


def fig14(run: common.Run, args: Any) -> dict[str, Any]:
    n = 2 ** 10 if args.quick else 2 ** 16
    smalls = [2 ** k for k in ((2, 5) if args.quick else (2, 4, 6, 8, 10, 12, 14))]
    steps, reps = (100, 3) if args.quick else (args.steps, args.reps)
    arities = args.arities
    results: list[dict[str, Any]] = []
    csv: list[list[Any]] = []
    rows = []
    for s in smalls:
        d = s // 2

        def setups(monoid: Callable[[], Monoid]) -> dict[str, tuple[Callable[[int], None], list[Distanced]]]:
            out = {}
            for a in arities:
                shared = Distanced(FiBA(monoid(), min_arity=a), n, d)
                out[f"FiBA-{a} range"] = (shared_rounds(shared, s), [shared])
                m = monoid()  # one counter for both trees of a twin
                big, small = Distanced(FiBA(m, min_arity=a), n, d), Distanced(FiBA(m, min_arity=a), s, d)
                out[f"FiBA-{a} twin"] = (twin_rounds(big, small), [big, small])
            return out

        timed = setups(Sum)
        times = alternate({v: r for v, (r, _) in timed.items()}, steps, reps)
        for v, (_, windows) in timed.items():
            for w in windows:
                w.check()
            if v.endswith("range"):  # the range query answers the small window: s entries of 1
                got = windows[0].tree.query_range(windows[0].next - (s - d), HIGH + d)
                if got != s:
                    raise AssertionError(f"{v}: query_range gave {got}, expected {s}")
        counted = setups(lambda: CountingMonoid(Sum()))
        cpr = {v: combines(r, ws[0].tree.monoid, steps) for v, (r, ws) in counted.items()}
        us = {v: common.median(t) for v, t in times.items()}
        results.append({"n": n, "small": s, "d": d, "us_per_round": us, "runs_us": times, "combines_per_round": cpr})
        rows.append([pow2(s), d] + [us[v] for v in timed]
                    + [fmt_ratio(ratio(us[f"FiBA-{a} twin"], us[f"FiBA-{a} range"])) for a in arities]
                    + [round(cpr[v], 1) for v in timed])
        for v in timed:
            csv.append(["fig14", n, d, v, f"us_per_round_small_{s}", round(us[v], 3)])
            csv.append(["fig14", n, d, v, f"combines_per_round_small_{s}", round(cpr[v], 2)])
        run.log(f"fig14 s={pow2(s)}: " + ", ".join(f"{v} {us[v]:.2f}" for v in timed))
    names = list(results[0]["us_per_round"])
    run.table(f"Fig. 14: window sharing, big window n = {pow2(n)}, small window s, d = s/2 (us per round)",
              ["s", "d"] + [f"{v} us" for v in names] + [f"FiBA-{a} range / twin throughput" for a in arities]
              + [f"{v} combines" for v in names], rows,
              note=f"range: one tree, query() + query_range of the s newest; twin: a tree of n and one of s. "
                   f"Median of {reps} alternated runs of {steps} rounds.")
    if not args.no_plot:
        common.plot_lines(run.path("_fig14.png"), {v: (smalls, [e["us_per_round"][v] for e in results]) for v in names},
                          title=f"Fig. 14: window sharing, n = {pow2(n)}", xlabel="small window size s",
                          ylabel="us per round (log)")
    return {"params": {"n": n, "smalls": smalls, "steps": steps, "reps": reps, "arities": arities},
            "results": results, "targets": [], "csv": csv}


# --------------------------------------------------------------------------- bulk eviction

def refill(window: Distanced, size: int) -> None:
    """Append in order (FiBA's O(1) path) until the in-order window (d = 0) holds ``size``."""
    insert = window.tree.insert
    for key in range(window.next, window.lo + size):
        insert(key, 1)
    window.next = window.lo + size


def bulk_once(window: Distanced, size: int, k: int) -> int:
    """Refill, then time one ``evict_upto`` that evicts the k oldest. Returns ns."""
    refill(window, size)
    t0 = now_ns()
    evicted = window.tree.evict_upto(window.lo + k - 1)
    dt = now_ns() - t0
    if evicted != k:
        raise AssertionError(f"evict_upto evicted {evicted}, expected {k}")
    window.lo += k
    return dt


def one_by_one_once(window: Distanced, size: int, k: int) -> int:
    """Refill, then time k evictions of the oldest entry. Returns ns."""
    refill(window, size)
    evict = window.tree.evict
    lo = window.lo
    t0 = now_ns()
    for key in range(lo, lo + k):
        evict(key)
    dt = now_ns() - t0
    window.lo += k
    if len(window.tree) != size - k:
        raise AssertionError(f"{len(window.tree)} entries left, expected {size - k}")
    return dt


def bulk(run: common.Run, args: Any) -> dict[str, Any]:
    size = 2 ** 12 if args.quick else args.bulk_size
    ks = k_values(size)
    ref_k = size // 2
    obo_max = args.one_by_one_max_k or size
    t_build = now_ns()
    window = Distanced(FiBA(Sum()), size)
    counter = CountingMonoid(Sum())
    counted = Distanced(FiBA(counter), size)
    run.log(f"bulk: built 2 FiBAs of {pow2(size)} in {(now_ns() - t_build) / 1e9:.1f} s")
    results: dict[int, dict[str, Any]] = {}
    csv: list[list[Any]] = []
    for k in ks:
        reps = repetitions(k)
        bulk_ns: list[int] = []
        obo_ns: list[int] = []
        for r in range(max(3, reps)):  # alternated, the order switching; evict_upto >= 3 times (cheap)
            first, second = (bulk_once, one_by_one_once) if r % 2 == 0 else (one_by_one_once, bulk_once)
            for f in (first, second):
                if f is bulk_once:
                    bulk_ns.append(bulk_once(window, size, k))
                elif k <= obo_max and r < reps:
                    obo_ns.append(one_by_one_once(window, size, k))
        refill(counted, size)
        before = counter.calls
        counted.tree.evict_upto(counted.lo + k - 1)
        counted.lo += k
        entry: dict[str, Any] = {"k": k, "reps": reps, "bulk_ns": bulk_ns, "bulk_median_ns": common.median(bulk_ns),
                                 "bulk_combines": counter.calls - before}
        if obo_ns:
            entry["one_by_one_ns"] = obo_ns
            entry["one_by_one_median_ns"] = common.median(obo_ns)
        if k <= 2 ** 16:
            refill(counted, size)
            before = counter.calls
            for key in range(counted.lo, counted.lo + k):
                counted.tree.evict(key)
            counted.lo += k
            entry["one_by_one_combines"] = counter.calls - before
        results[k] = entry
        if k >= 2 ** 10 or k in (1, 16, 256):
            run.log(f"bulk k={pow2(k):>7}: evict_upto {entry['bulk_median_ns'] / 1e3:,.1f} us, one by one "
                    f"{entry.get('one_by_one_median_ns', math.nan) / 1e3:,.1f} us")
    # one by one beyond --one-by-one-max-k: k times the measured cost per eviction at the largest measured k
    measured = [k for k in ks if "one_by_one_median_ns" in results[k]]
    per_evict = results[measured[-1]]["one_by_one_median_ns"] / measured[-1] if measured else None
    for k in ks:
        if "one_by_one_median_ns" not in results[k] and per_evict is not None:
            results[k]["one_by_one_estimated_ns"] = per_evict * k
    rows = []
    for k in ks:
        e = results[k]
        obo = e.get("one_by_one_median_ns")
        est = obo is None
        obo = e.get("one_by_one_estimated_ns") if est else obo
        rows.append([pow2(k), e["bulk_median_ns"] / 1e3, (f"~{obo / 1e3:,.0f} (estimated)" if est else obo / 1e3)
                     if obo is not None else None, fmt_ratio(ratio(obo, e["bulk_median_ns"])),
                     e["bulk_combines"], e.get("one_by_one_combines")])
        csv.append(["bulk", size, 0, "FiBA evict_upto", f"ns_k_{k}", e["bulk_median_ns"]])
        csv.append(["bulk", size, 0, "FiBA evict_upto", f"combines_k_{k}", e["bulk_combines"]])
        if obo is not None:
            csv.append(["bulk", size, 0, "FiBA one by one" + (" (estimated)" if est else ""), f"ns_k_{k}", obo])
    run.table(f"Bulk eviction: latency (us) evicting k of a FiBA of {pow2(size)}",
              ["k", "evict_upto us", "one by one us", "one by one / evict_upto", "evict_upto combines",
               "one by one combines"], rows,
              note="Median of the repetitions (7 for k <= 2^10, 3 for k <= 2^16, 1 above; evict_upto at least 3), "
                   "alternated; "
                   "combines counted once on a twin FiBA over a counting monoid.")
    fits = {"log2": fit_log({k: e["bulk_median_ns"] for k, e in results.items()}),
            "linear": fit_linear({k: e["bulk_median_ns"] for k, e in results.items()})}
    targets = []
    # logarithmic: the slowest evict_upto of k >= 2^10 against k = 2^10 (k = size - 1 leaves one
    # entry, a degenerate cut, so the largest k alone would flatter)
    lo_k = 2 ** 10 if 2 ** 10 in results else ks[0]
    above = [k for k in ks if k >= lo_k]
    worst = max(above, key=lambda k: results[k]["bulk_median_ns"])
    growth = ratio(results[worst]["bulk_median_ns"], results[lo_k]["bulk_median_ns"])
    targets.append([f"evict_upto logarithmic: slowest latency over k >= {pow2(lo_k)} (at k={pow2(worst)}) / "
                    f"latency(k={pow2(lo_k)}) < 10 (k up to {ks[-1] / lo_k:,.0f}x larger)", fmt_ratio(growth),
                    bool(growth and growth < 10)])
    most = max(above, key=lambda k: results[k]["bulk_combines"])
    c_growth = ratio(results[most]["bulk_combines"], max(1, results[lo_k]["bulk_combines"]))
    targets.append([f"evict_upto combines: most over k >= {pow2(lo_k)} (at k={pow2(most)}) / k={pow2(lo_k)} < 10",
                    f"{results[most]['bulk_combines']} / {results[lo_k]['bulk_combines']} = {c_growth:.2f}x",
                    c_growth < 10])
    ref = results[ref_k]
    obo_ref = ref.get("one_by_one_median_ns", ref.get("one_by_one_estimated_ns"))
    speedup = ratio(obo_ref, ref["bulk_median_ns"])
    targets.append([f">= 1000x faster than one by one at k={pow2(ref_k)}"
                    + (" (one by one estimated)" if "one_by_one_median_ns" not in ref else ""),
                    f"{speedup:,.0f}x", speedup >= 1000])
    run.table("Bulk eviction targets", ["target", "measured", "met"],
              [[t, m, "yes" if ok else "NO"] for t, m, ok in targets],
              note=f"Fits of evict_upto latency: {json.dumps(fits)}")
    if not args.no_plot:
        series = {"FiBA evict_upto": (ks, [results[k]["bulk_median_ns"] / 1e3 for k in ks]),
                  "FiBA one by one": (measured, [results[k]["one_by_one_median_ns"] / 1e3 for k in measured])}
        common.plot_lines(run.path("_bulk.png"), series, title=f"Bulk eviction of k from a FiBA of {pow2(size)}",
                          xlabel="k (entries evicted)", ylabel="latency, us (log)")
    return {"params": {"size": size, "ks": ks, "reference_k": ref_k, "one_by_one_max_k": obo_max,
                       "one_by_one_ns_per_eviction_for_estimates": per_evict},
            "results": list(results.values()), "fits": fits, "targets": _targets(targets), "csv": csv}


# --------------------------------------------------------------------------- main

def _targets(rows: list[list[Any]]) -> list[dict[str, Any]]:
    return [{"target": t, "measured": m, "met": bool(ok)} for t, m, ok in rows]


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


RUNS: dict[str, Callable[[common.Run, Any], dict[str, Any]]] = {
    "fig11": fig11, "fig12": fig12, "fig13": fig13, "fig14": fig14, "bulk": bulk}


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--exp", choices=EXPERIMENTS + ["all"], default="all")
    p.add_argument("--arities", type=int_list, default=[2, 4, 8, 16], help="FiBA min arities")
    p.add_argument("--btree-arities", type=int_list, default=[2, 4], help="B-tree min arities")
    p.add_argument("--steps", type=int, default=2000, help="rounds per timed run")
    p.add_argument("--reps", type=int, default=5, help="timed runs per competitor (median reported)")
    p.add_argument("--bulk-size", type=common.power_of_two, default=2 ** 22)
    p.add_argument("--one-by-one-max-k", type=common.power_of_two, default=None,
                   help="largest k evicted one by one (beyond: estimated from the cost per eviction there)")
    args = p.parse_args(argv)
    exps = EXPERIMENTS if args.exp == "all" else [args.exp]
    run = common.Run(NAME, args, {"experiments": exps, "monoid": "Sum of 1s"})
    done: dict[str, Any] = {}
    for exp in exps:
        # The cyclic GC stays off through the experiment (a collection over millions of
        # tree nodes takes seconds); it runs once before, and after (trees hold cycles).
        with common.gc_paused():
            done[exp] = run.experiment(exp, lambda: RUNS[exp](run, args))
    experiments = run.keep_experiments(done, EXPERIMENTS)
    csv = [row for e in experiments.values() for row in e["csv"]]
    run.finish(CSV_HEADERS, csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
