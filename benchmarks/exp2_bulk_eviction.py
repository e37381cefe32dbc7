"""Paper Experiment 2 (section 5.5, Fig. 7): latency of one bulk eviction of k updates.

A window of ``--size`` updates (full: 2^22; the paper: 2^23) gets one insertion,
then ``enforce(wsp)`` must evict exactly k of them. Each algorithm does its own
policy enforcement (the MTAs search the tree in O(log n); the others test and
evict the oldest element one by one, as in the paper). Only the ``enforce`` call
is timed (``perf_counter_ns``, GC off); the window is refilled back to
``--size`` (untimed) before every measurement.

Monoid: ``Sum`` of 1s, so a partial is a count (the paper's Listing 2 ``count``);
policy ``wsp(total, old) = total - old >= keep`` with ``keep = len - k`` (Listing 3
with maxSize = keep): the longest condemned prefix is exactly k.

k = 2^i and 2^i - 1 up to size - 1. Repetitions (median reported): 7 for k <= 2^10,
3 for k <= 2^16, 1 above (a one-by-one eviction of 2^21 already takes seconds,
which is the point). FlatFAT evicts one by one at O(log n) each and is measured
only up to k = 2^16 (``--flatfat-max-k``); Naive folds the whole window once per
enforce (O(n), ~constant in k) and is measured for every k with one repetition.

    python -m benchmarks.exp2_bulk_eviction            # full (~10-15 min)
    python -m benchmarks.exp2_bulk_eviction --quick    # smoke run
"""

from __future__ import annotations

import math
import sys
from typing import Any

from benchmarks import common
from benchmarks.common import label, now_ns, pow2, ratio
from mta.algorithms import ALGORITHMS
from mta.monoid import Sum

NAME = "exp2_bulk_eviction"


def k_values(size: int) -> list[int]:
    ks = set()
    for i in range(size.bit_length() + 1):
        for k in (2 ** i, 2 ** i - 1):
            if 1 <= k <= size - 1:
                ks.add(k)
    return sorted(ks)


def repetitions(k: int) -> int:
    if k <= 2 ** 10:
        return 7
    if k <= 2 ** 16:
        return 3
    return 1


def make_wsp(keep: int):
    def wsp(total: int, old: int) -> bool:
        return total - old >= keep
    return wsp


def refill(agg: Any, size: int) -> None:
    ins = agg.insert
    for _ in range(size - len(agg)):
        ins(1)


def measure_once(agg: Any, size: int, k: int) -> int:
    """Refill to ``size``, insert one, time the enforce that evicts k. Returns ns."""
    refill(agg, size)
    agg.insert(1)
    wsp = make_wsp(len(agg) - k)
    t0 = now_ns()
    evicted = agg.enforce(wsp)
    dt = now_ns() - t0
    if evicted != k:
        raise AssertionError(f"{agg.name}: enforce evicted {evicted}, expected {k}")
    return dt


def fit_log(points: dict[int, float], k_min: int = 64) -> dict[str, float] | None:
    """Least squares latency ~ a + b * log2(k) over k >= k_min: b in ns per doubling of k, and R^2."""
    return _fit({k: v for k, v in points.items() if k >= k_min}, lambda k: math.log2(k))


def fit_linear(points: dict[int, float], k_min: int = 1024) -> dict[str, float] | None:
    """Least squares latency ~ a + b * k over k >= k_min: b in ns per evicted update, and R^2."""
    return _fit({k: v for k, v in points.items() if k >= k_min}, float)


def _fit(points: dict[int, float], f) -> dict[str, float] | None:
    if len(points) < 3:
        return None
    xs = [f(k) for k in points]
    ys = list(points.values())
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return {"intercept_ns": round(a, 1), "slope_ns": round(b, 3),
            "r2": round(1 - ss_res / ss_tot, 4) if ss_tot else 1.0}


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__.split("\n\n")[0])
    p.add_argument("--size", type=common.power_of_two, default=None, help="window size (full: 2**22, quick: 2**12)")
    p.add_argument("--flatfat-max-k", type=common.power_of_two, default=2 ** 16,
                   help="largest k measured for FlatFAT (one-by-one O(log n) evictions)")
    p.add_argument("--naive-max-k", type=common.power_of_two, default=None,
                   help="largest k measured for Naive (default: all)")
    args = p.parse_args(argv)
    size = args.size or (2 ** 12 if args.quick else 2 ** 22)
    if size < 4:
        p.error("--size must be at least 4")
    algorithms = args.algorithms or ["amta", "log_mta", "two_stacks", "daba", "flatfat", "naive"]
    ks = k_values(size)
    ref_k = size // 2  # 2^21 for the full size 2^22
    limits = {"flatfat": args.flatfat_max_k, "naive": args.naive_max_k or size}

    run = common.Run(NAME, args, {
        "size": size, "k_values": ks, "algorithms": algorithms, "reference_k": ref_k,
        "monoid": "Sum of 1s (a count)", "wsp": "total - old >= len - k",
        "repetitions": "7 for k <= 2^10, 3 for k <= 2^16, 1 above; Naive at most 1",
        "max_k": {a: limits.get(a, size) for a in algorithms},
        "timed": "agg.enforce(wsp) only; refill + the one insertion untimed",
    })

    results: dict[str, dict[int, dict[str, Any]]] = {}
    for name in algorithms:
        agg = ALGORITHMS[name](Sum())
        results[name] = {}
        t_alg = now_ns()
        with common.gc_paused():
            refill(agg, size)
            for k in ks:
                if k > limits.get(name, size):
                    continue
                reps = 1 if name == "naive" else repetitions(k)
                times = [measure_once(agg, size, k) for _ in range(reps)]
                med = common.median(times)
                results[name][k] = {"k": k, "reps": reps, "ns": times, "median_ns": med}
                if k >= 2 ** 10 or k in (1, 16, 256):
                    run.log(f"{name:>11} k={pow2(k):>7}: {med / 1e3:>12,.1f} us")
        run.log(f"{name}: {(now_ns() - t_alg) / 1e9:.1f} s in all (refills included)")
        del agg

    # ---- latency table
    def us(a: str, k: int) -> float | None:
        r = results[a].get(k)
        return r["median_ns"] / 1e3 if r else None

    has = {a: a in results for a in ("amta", "log_mta", "two_stacks", "daba")}
    headers = ["k"] + [f"{label(a)} (us)" for a in algorithms]
    extra = []
    if has["amta"] and has["two_stacks"]:
        extra.append(("TwoStacks/AMTA", "two_stacks", "amta"))
    if has["amta"] and has["daba"]:
        extra.append(("DABA/AMTA", "daba", "amta"))
    headers += [e[0] for e in extra]
    rows = []
    for k in ks:
        row: list[Any] = [pow2(k)] + [us(a, k) for a in algorithms]
        for _, top, bottom in extra:
            x = ratio(us(top, k), us(bottom, k))
            row.append(f"{x:,.1f}x" if x is not None else None)
        rows.append(row)
    run.table(f"Experiment 2: enforce latency (us) evicting k of a {pow2(size)} window", headers, rows,
              note="Median of the repetitions; '–' = not measured (see --flatfat-max-k / --naive-max-k).")

    # ---- growth fits
    fits: dict[str, Any] = {}
    fit_rows = []
    for a in algorithms:
        pts = {k: r["median_ns"] for k, r in results[a].items()}
        lg = fit_log(pts)
        ln = fit_linear(pts)
        fits[a] = {"log2": lg, "linear": ln}
        fit_rows.append([label(a),
                         f"{lg['slope_ns'] / 1e3:,.2f} (R² {lg['r2']:.2f})" if lg else None,
                         f"{ln['slope_ns']:,.1f} (R² {ln['r2']:.2f})" if ln else None])
    run.table("Growth: least-squares fits of latency against log2(k) (k >= 64) and against k (k >= 1024)",
              ["algorithm", "us per doubling of k", "ns per evicted update"], fit_rows,
              note="Logarithmic growth: a good log2 fit with a small slope and a ~0 linear slope; "
                   "linear growth: a good linear fit with a constant ns per evicted update.")

    # ---- targets at k = size / 2 (2^21 in the full run)
    targets = []
    summary: dict[str, Any] = {"reference_k": ref_k}
    for mta_alg in ("amta", "log_mta"):
        for slow in ("two_stacks", "daba"):
            if mta_alg in results and slow in results and ref_k in results[mta_alg] and ref_k in results[slow]:
                x = ratio(results[slow][ref_k]["median_ns"], results[mta_alg][ref_k]["median_ns"])
                summary[f"{slow}_over_{mta_alg}_at_ref_k"] = round(x, 1)
                targets.append([f"{label(mta_alg)} >= 1000x faster than {label(slow)} at k={pow2(ref_k)}",
                                f"{x:,.0f}x", x >= 1000])
    for a in ("amta", "log_mta"):
        if a in results and results[a]:
            worst = max(r["median_ns"] for r in results[a].values())
            summary[f"{a}_worst_us"] = round(worst / 1e3, 1)
            ln = fits[a]["linear"]
            lg = fits[a]["log2"]
            if lg and ln:
                # logarithmic: latency at the largest k is within a small factor of the latency at k=2^10
                lo = us(a, 2 ** 10) if 2 ** 10 in results[a] else None
                hi = us(a, ks[-1])
                growth = ratio(hi, lo)
                summary[f"{a}_growth_2^10_to_max"] = round(growth, 2) if growth else None
                targets.append([f"{label(a)} logarithmic: latency(k={pow2(ks[-1])}) / latency(k=2^10)",
                                f"{growth:,.2f}x" if growth else "–",
                                bool(growth and growth < 10)])
    if targets:
        run.table("Targets", ["target", "measured", "met"], [[t, m, "yes" if ok else "NO"] for t, m, ok in targets],
                  note=f"'logarithmic' is judged as: a {ks[-1] / 2 ** 10:,.0f}-fold larger k than 2^10 costs "
                       f"< 10x more (linear growth would cost about that factor more).")
    summary["targets"] = [{"target": t, "measured": m, "met": ok} for t, m, ok in targets]
    summary["fits"] = fits

    run.data["results"] = {a: list(r.values()) for a, r in results.items()}
    run.data["summary"] = summary
    csv_rows = [[a, r["k"], r["reps"], r["median_ns"], min(r["ns"]), max(r["ns"])]
                for a in algorithms for r in results[a].values()]
    run.finish(["algorithm", "k", "reps", "median_ns", "min_ns", "max_ns"], csv_rows)
    if not args.no_plot:
        common.plot_lines(
            run.path(".png"),
            {label(a): (list(results[a]), [r["median_ns"] / 1e3 for r in results[a].values()]) for a in algorithms},
            title=f"Experiment 2: enforce latency evicting k of {pow2(size)} (Sum of 1s)",
            xlabel="k (updates evicted by one enforce)", ylabel="latency, us (log)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
