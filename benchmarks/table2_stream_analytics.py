"""Paper Experiment 3 / Table 2 (section 5.6): stream analytics over memory telemetry.

The stream is :func:`mta.telemetry.readings` (one reading per second; the paper
used 62 million real readings, two years). Every update goes through
``mta.Window`` (so lifting, timestamps and policies are included) and is
followed by a ``query()``: the timed unit is ``w.insert(t, v); w.query()``, the
mean is over every update of the run (the first 2^20 fill the window).

Monoids and policies (as in the paper):

- sum, mean, stddev: ``MaxSize(2^20)`` (a constant-size window);
- max: ``any_of(MaxSize(2^20), lambda total, old: old.value < total.value)``:
  the older updates that can no longer be the max are evicted (in bulk by the
  MTAs, one by one by the others). Its average window length is reported.

What runs how long (the full defaults fit in ~25 minutes on a slow 2-core box):

- AMTA, TwoStacks, DABA: the whole stream (``--updates``, 10 million);
- SubtractOnEvict: the whole stream, invertible monoids only (not max);
- LogMTA, FlatFAT (``--prefix-algorithms``, 4-5x slower in pure Python): the
  first ``--prefix-updates`` (2 million) updates. Every algorithm's mean over
  the same prefix is reported too, so that the prefix numbers compare like for like;
- Naive: its query folds the whole window (O(n) per update). sum/mean/stddev:
  the window is filled with the first 2^20 updates without queries (untimed),
  then ``--naive-updates`` steady-state updates are timed; max: the first
  ``--naive-max-updates`` updates of the stream are timed (the max policy keeps
  its window short at first).

    python -m benchmarks.table2_stream_analytics            # full (~25 min)
    python -m benchmarks.table2_stream_analytics --quick    # smoke run
"""

from __future__ import annotations

import math
import sys
from array import array
from itertools import islice
from typing import Any, Callable

from benchmarks import common
from benchmarks.common import label, now_ns, num, pow2
from mta import Max, MaxSize, Mean, StdDev, Sum, Window, any_of
from mta.algorithms import ALGORITHMS
from mta.telemetry import readings

NAME = "table2_stream_analytics"
BLOCK = 1024  # updates per timed block; the window length is sampled after each


def max_keeps_what_can_matter(total: Any, old: Any) -> bool:
    """An older run whose max is below the window's max can never be the max again."""
    return old.value < total.value


def monoids(window: int) -> dict[str, tuple[Any, Callable[[], Any], str]]:
    """name -> (monoid, policy factory, policy description)."""
    return {
        "sum": (Sum(), lambda: MaxSize(window), f"MaxSize({pow2(window)})"),
        "mean": (Mean(), lambda: MaxSize(window), f"MaxSize({pow2(window)})"),
        "stddev": (StdDev(), lambda: MaxSize(window), f"MaxSize({pow2(window)})"),
        "max": (Max(), lambda: any_of(MaxSize(window), max_keeps_what_can_matter),
                f"any_of(MaxSize({pow2(window)}), old.value < total.value)"),
    }


def generate(n: int, seed: int) -> tuple[array, array]:
    ts, vs = array("q"), array("d")
    stream = readings(n, seed=seed)
    while True:
        chunk = list(islice(stream, 1 << 16))
        if not chunk:
            return ts, vs
        t, v = zip(*chunk)
        ts.extend(t)
        vs.extend(v)


def run_stream(w: Window, ts: array, vs: array, start: int, stop: int, checkpoint: int | None = None
               ) -> dict[str, Any]:
    """Time insert + query for updates [start, stop). Sample len(w) after each block."""
    ins, q = w.insert, w.query
    elapsed = 0
    len_sum = 0
    samples = 0
    at_checkpoint = None
    with common.gc_paused():
        for i in range(start, stop, BLOCK):
            j = min(stop, i + BLOCK)
            block = list(zip(ts[i:j], vs[i:j]))
            t0 = now_ns()
            for t, v in block:
                ins(t, v)
                q()
            elapsed += now_ns() - t0
            len_sum += len(w)
            samples += 1
            if checkpoint is not None and j == checkpoint:
                at_checkpoint = {"updates": j - start, "ns": elapsed, "result": q(),
                                 "avg_window_len": len_sum / samples}
    n = stop - start
    return {"updates": n, "ns": elapsed, "ns_per_update": elapsed / n if n else None,
            "avg_window_len": len_sum / samples if samples else 0, "final_len": len(w), "result": q(),
            "checkpoint": at_checkpoint}


def run_naive_steady(monoid: Any, policy: Any, ts: array, vs: array, window: int, count: int) -> dict[str, Any]:
    """Fill a naive window with ``window`` updates (no queries, untimed), then time ``count`` updates."""
    w = Window(monoid, policy, algorithm="naive")
    ins, q = w.insert, w.query
    with common.gc_paused():
        for t, v in zip(ts[:window], vs[:window]):
            ins(t, v)
        q()  # the first fold is not part of a step
        times = []
        for t, v in zip(ts[window:window + count], vs[window:window + count]):
            t0 = now_ns()
            ins(t, v)
            q()
            times.append(now_ns() - t0)
    return {"updates": len(times), "ns": sum(times), "ns_per_update": sum(times) / len(times),
            "avg_window_len": len(w), "final_len": len(w), "result": q(), "first_update": window,
            "checkpoint": None}


def close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    return a == b


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__.split("\n\n")[0])
    p.add_argument("--updates", type=common.power_of_two, default=None,
                   help="stream length for the full-length algorithms (full: 10_000_000, quick: 8192)")
    p.add_argument("--window", type=common.power_of_two, default=None, help="MaxSize (full: 2**20, quick: 2**10)")
    p.add_argument("--prefix-updates", type=common.power_of_two, default=None,
                   help="updates for the prefix algorithms (full: 2_000_000, quick: 4096)")
    p.add_argument("--prefix-algorithms", type=common.algorithm_list, default=["log_mta", "flatfat"],
                   help="algorithms run on the prefix only")
    p.add_argument("--naive-updates", type=int, default=None,
                   help="timed steady-state updates for Naive sum/mean/stddev (full: 32, quick: 8)")
    p.add_argument("--naive-max-updates", type=common.power_of_two, default=None,
                   help="timed first updates for Naive max (full: 8192, quick: 1024)")
    p.add_argument("--monoids", type=str, default="sum,mean,stddev,max", help="comma-separated subset")
    p.add_argument("--seed", type=int, default=1, help="telemetry seed")
    args = p.parse_args(argv)
    quick = args.quick
    updates = args.updates or (8192 if quick else 10_000_000)
    window = args.window or (2 ** 10 if quick else 2 ** 20)
    prefix = min(updates, args.prefix_updates or (4096 if quick else 2_000_000))
    prefix -= prefix % BLOCK if prefix >= BLOCK else 0
    naive_updates = args.naive_updates or (8 if quick else 32)
    naive_max_updates = args.naive_max_updates or (1024 if quick else 8192)
    algorithms = args.algorithms or common.ORDER
    all_monoids = monoids(window)
    chosen = [m.strip() for m in args.monoids.split(",") if m.strip()]
    bad = [m for m in chosen if m not in all_monoids]
    if bad or not chosen:
        p.error(f"unknown monoid {', '.join(bad) or repr(args.monoids)}; choose from {', '.join(all_monoids)}")
    if window >= updates:
        p.error("--window must be smaller than --updates")

    plan: dict[str, int] = {}
    for a in algorithms:
        if a == "naive":
            continue
        plan[a] = prefix if a in args.prefix_algorithms else updates
    run = common.Run(NAME, args, {
        "stream": f"mta.telemetry.readings(seed={args.seed}), one reading per second",
        "updates": updates, "window": window, "prefix_updates": prefix,
        "updates_per_algorithm": plan, "naive": {
            "sum/mean/stddev": f"fill {window} untimed, then time {naive_updates} steady-state updates",
            "max": f"the first {naive_max_updates} updates"},
        "monoids": {m: all_monoids[m][2] for m in chosen},
        "timed": "w.insert(t, v); w.query() per update, through mta.Window; GC off; mean over all updates",
    })
    need = max([updates if plan else 0] + [window + naive_updates, naive_max_updates])
    run.log(f"generating {need:,} readings ...")
    t0 = now_ns()
    ts, vs = generate(need, args.seed)
    run.log(f"generated in {(now_ns() - t0) / 1e9:.1f} s")

    results: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in chosen}
    skipped: list[str] = []
    for m in chosen:
        monoid, policy, _ = all_monoids[m]
        for a in algorithms:
            try:
                ALGORITHMS[a].check_monoid(monoid)
            except TypeError:
                skipped.append(f"{label(a)} / {m}: monoid not invertible")
                continue
            if a == "subtract_on_evict" and m == "max":
                skipped.append(f"{label(a)} / {m}: the max policy needs a non-invertible monoid")
                continue
            t_run = now_ns()
            if a == "naive":
                if m == "max":
                    w = Window(monoid, policy(), algorithm=a)
                    r = run_stream(w, ts, vs, 0, naive_max_updates)
                    r["note"] = f"first {naive_max_updates:,} updates"
                else:
                    r = run_naive_steady(monoid, policy(), ts, vs, window, naive_updates)
                    r["note"] = f"{naive_updates} updates after an untimed fill of {pow2(window)}"
            else:
                w = Window(monoid, policy(), algorithm=a)
                n = plan[a]
                r = run_stream(w, ts, vs, 0, n, checkpoint=prefix if prefix < n else None)
                if prefix == n:
                    r["checkpoint"] = {"updates": n, "ns": r["ns"], "result": r["result"],
                                       "avg_window_len": r["avg_window_len"]}
                r["note"] = f"{n:,} updates" + (" (prefix)" if n < updates else "")
                del w
            results[m][a] = r
            run.log(f"{m:>6} {a:>17}: {r['ns_per_update']:>14,.0f} ns/update over {r['updates']:,} updates "
                    f"(avg len {r['avg_window_len']:,.0f}) in {(now_ns() - t_run) / 1e9:.1f} s")

    # ---- consistency: every algorithm must agree on the results
    mismatches = []
    for m in chosen:
        full = {a: r for a, r in results[m].items() if a != "naive"}
        ref_final = next((r["result"] for a, r in full.items() if r["updates"] == updates), None)
        ref_prefix = next((r["checkpoint"]["result"] for r in full.values() if r.get("checkpoint")), None)
        for a, r in full.items():
            if r["updates"] == updates and ref_final is not None and not close(r["result"], ref_final):
                mismatches.append(f"{m}/{a}: final {r['result']!r} != {ref_final!r}")
            cp = r.get("checkpoint")
            if cp and ref_prefix is not None and not close(cp["result"], ref_prefix):
                mismatches.append(f"{m}/{a}: prefix {cp['result']!r} != {ref_prefix!r}")
    if mismatches:
        run.log("RESULT MISMATCH: " + "; ".join(mismatches))

    # ---- Table 2 (main): mean ns per update
    cols = [a for a in algorithms if any(a in results[m] for m in chosen)]

    def main_cell(m: str, a: str) -> Any:
        r = results[m].get(a)
        if r is None:
            return None
        mark = "" if (a != "naive" and r["updates"] == updates) else (" †" if a != "naive" else " ‡")
        return f"{num(r['ns_per_update'])}{mark}"

    rows = [[m] + [main_cell(m, a) for a in cols] for m in chosen]
    note = (f"Mean ns per update (insert + query through mta.Window), {updates:,} updates of the "
            f"telemetry stream unless marked. † = first {prefix:,} updates only (--prefix-updates). "
            f"‡ = Naive: sum/mean/stddev {naive_updates} steady-state updates at window {pow2(window)}, "
            f"max the first {naive_max_updates:,} updates. '–' = not applicable "
            f"(SubtractOnEvict needs an invertible monoid).")
    run.table(f"Table 2: stream analytics latency, ns per update (window {pow2(window)})",
              ["monoid"] + [label(a) for a in cols], rows, note=note)

    # ---- like-for-like on the prefix
    pcols = [a for a in cols if a != "naive"]
    rows = []
    for m in chosen:
        row: list[Any] = [m]
        for a in pcols:
            cp = results[m].get(a, {}).get("checkpoint") if a in results[m] else None
            row.append(cp["ns"] / cp["updates"] if cp else None)
        rows.append(row)
    amta_ref = {m: (results[m]["amta"]["checkpoint"]["ns"] / results[m]["amta"]["checkpoint"]["updates"])
                for m in chosen if "amta" in results[m] and results[m]["amta"].get("checkpoint")}
    if amta_ref:
        for row in rows:
            m = row[0]
            others = [(a, v) for a, v in zip(pcols, row[1:]) if v is not None and a != "amta"]
            if m in amta_ref and others:
                best = min(others, key=lambda x: x[1])
                row.append(f"{amta_ref[m] / best[1]:.2f}x vs {label(best[0])}")
            else:
                row.append(None)
    run.table(f"Same prefix for everyone: mean ns per update over the first {prefix:,} updates",
              ["monoid"] + [label(a) for a in pcols] + (["AMTA / best other"] if amta_ref else []), rows,
              note="Measured inside the same runs (cumulative time at the prefix mark). "
                   "AMTA / best other < 1 means AMTA is faster than every other algorithm.")

    # ---- window lengths of the max policy
    summary: dict[str, Any] = {"mismatches": mismatches, "skipped": skipped}
    if "max" in chosen and results["max"]:
        rows = []
        for a, r in results["max"].items():
            rows.append([label(a), r["updates"], round(r["avg_window_len"]), r["final_len"]])
        run.table("max with the evict-what-cannot-matter policy: window length",
                  ["algorithm", "updates", "average window length", "final length"], rows,
                  note=f"Sampled after every {BLOCK} updates. A MaxSize({pow2(window)}) window alone would hold "
                       f"{window:,} updates.")
        full_max = [r for a, r in results["max"].items() if r["updates"] == updates]
        if full_max:
            summary["max_avg_window_len"] = round(full_max[0]["avg_window_len"], 1)
    if skipped:
        print("\nnot run: " + "; ".join(skipped))
    if mismatches:
        print("\nRESULT MISMATCH: " + "; ".join(mismatches))
    else:
        print("\nall algorithms agree on the final (and prefix) results")

    run.data["results"] = results
    run.data["summary"] = summary
    csv_rows = [[m, a, r["updates"], round(r["ns_per_update"], 1), round(r["avg_window_len"], 1), r["note"]]
                for m in chosen for a, r in results[m].items()]
    run.finish(["monoid", "algorithm", "updates", "ns_per_update", "avg_window_len", "note"], csv_rows)
    if not args.no_plot:
        common.plot_bars(run.path(".png"), chosen,
                         {label(a): [results[m][a]["ns_per_update"] if a in results[m] else None for m in chosen]
                          for a in cols},
                         title=f"Table 2: ns per update, telemetry stream, window {pow2(window)} "
                               f"(prefix/naive runs: see table notes)",
                         ylabel="mean ns per update (log)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
