"""Issue 20: Record windows on typed cores (mta.algorithms.typed_record) against the object path.

The window aggregates ``Record(count=Count(), sum=Sum(), max=Max(), mean=Mean())`` of n
floats (2^16; quick 2^12), halves ``k + 0.5`` scrambled so that every sum is exact. In one
process, each round runs every competitor once, the order rotated every round; the tables
give medians over rounds, absolute and as ratios, and whether every competitor's results
were equal (they must be: the typed cores give the object algorithm's results bit for bit).

1. **Per event** ``Window.insert(t, x)`` + ``Window.query()`` on a full window, policy
   ``MaxSize(n)`` and ``TimeRange(n)`` (timestamps one apart: the window keeps n), for each
   typed core's algorithm: the typed Record core (``typed.USE`` True) against the object
   algorithm (False).
2. **Batches** ``Window.insert_many(timestamps, values)`` of numpy arrays (float64 values:
   each field's core takes them in a C loop), 1,000 a batch, ``TimeRange(n)``, against the
   per-event loop ``insert(t, x)``, typed and object.

    python -m benchmarks.typed_record            # full (about a minute per algorithm)
    python -m benchmarks.typed_record --quick    # smoke run (seconds)
    python -m benchmarks.typed_record --algorithms amta
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import mta
from benchmarks.common import Run, gc_paused, label, median, now_ns, num, parser, pow2
from benchmarks.compiled_core import alternate, core_of, loop_run, values, window, window_run
from mta import Count, Max, MaxSize, Mean, Sum, TimeRange
from mta.algorithms import TYPED_ALGORITHMS, typed_record
from mta.monoid import Record

NAME = "typed_record"
BATCH = 1000


def record() -> Record:
    return Record(count=Count(), sum=Sum(), max=Max(), mean=Mean())


def batch_run(w: mta.Window, times: range, xs: np.ndarray) -> tuple[int, Any]:
    insert_many = w.insert_many
    ts = np.arange(times.start, times.stop, dtype=np.int64)
    with gc_paused():
        began = now_ns()
        for s in range(0, len(xs), BATCH):
            insert_many(ts[s:s + BATCH], xs[s:s + BATCH])
        return now_ns() - began, w.query()


def filled(policy: Any, algorithm: str, typed_core: bool, n: int) -> mta.Window:
    w = window(record(), policy, algorithm, typed_core)
    w.insert_many(list(range(n)), values(n))
    return w


def equal(got: list[dict[str, Any]]) -> bool:
    return all(repr(x) == repr(next(iter(r.values()))) for r in got for x in r.values())


def per_event(run: Run, cores: list[str], n: int, steps: int, rounds: int) -> dict[str, Any]:
    rows, results = [], []
    xs = values(steps, start=n)
    for policy in (MaxSize(n), TimeRange(n)):
        for name in cores:
            windows = {path: filled(policy, name, path == "typed", n) for path in ("typed", "object")}
            runners: dict[str, Callable[[int], tuple[int, Any]]] = {
                path: (lambda r, w=w: window_run(w, range(n + r * steps, n + (r + 1) * steps), xs))
                for path, w in windows.items()}
            ns, got = alternate(runners, rounds)
            typed_ns, object_ns = median(ns["typed"]) / steps, median(ns["object"]) / steps
            entry = {"policy": repr(policy), "algorithm": name, "n": n, "steps": steps, "typed_ns": typed_ns,
                     "object_ns": object_ns, "speedup": object_ns / typed_ns, "equal": equal(got),
                     "typed_core": core_of(windows["typed"]), "object_core": core_of(windows["object"]),
                     "rounds": rounds}
            results.append(entry)
            rows.append([repr(policy), label(name), num(typed_ns), num(object_ns), f"{entry['speedup']:.2f}x",
                         entry["typed_core"], "yes" if entry["equal"] else "NO"])
    run.table(f"1. Per event: Window.insert(t, x) + query(), Record(count, sum, max, mean), n = {pow2(n)}, "
              f"median of {rounds} rounds",
              ["policy", "algorithm", "typed ns/event", "object ns/event", "object / typed", "typed window's core",
               "equal"], rows)
    return {"results": results}


def batches(run: Run, cores: list[str], n: int, events: int, rounds: int) -> dict[str, Any]:
    rows, results = [], []
    xs = values(events, start=n)
    arr = np.array(xs)
    for name in cores:
        runners: dict[str, Callable[[int], tuple[int, Any]]] = {}
        windows = {}
        for path in ("typed", "object"):
            for how, run_one, data in (("batch", batch_run, arr), ("loop", loop_run, xs)):
                w = windows[f"{path}/{how}"] = filled(TimeRange(n), name, path == "typed", n)
                runners[f"{path}/{how}"] = (lambda r, w=w, f=run_one, d=data:
                                            f(w, range(n + r * events, n + (r + 1) * events), d))
        ns, got = alternate(runners, rounds)
        per = {key: median(v) / events for key, v in ns.items()}
        entry = {"algorithm": name, "n": n, "events": events, **{f"{k.replace('/', '_')}_ns": v for k, v in per.items()},
                 "typed_core": core_of(windows["typed/batch"]), "equal": equal(got), "rounds": rounds}
        results.append(entry)
        rows.append([label(name), num(per["typed/batch"]), num(per["typed/loop"]), num(per["object/batch"]),
                     num(per["object/loop"]), f"{per['typed/loop'] / per['typed/batch']:.2f}x",
                     f"{per['object/batch'] / per['typed/batch']:.2f}x", entry["typed_core"],
                     "yes" if entry["equal"] else "NO"])
    run.table(f"2. Batches: Window.insert_many(numpy timestamps, numpy values), {BATCH} a batch, TimeRange(n), "
              f"n = {pow2(n)}, median of {rounds} rounds",
              ["algorithm", "typed batch ns/update", "typed loop ns/update", "object batch ns/update",
               "object loop ns/update", "typed loop / batch", "object batch / typed batch", "typed window's core",
               "equal"], rows,
              "A typed Record window takes float64 columns of finite values in C loops, one per field's core "
              "(Count: a column of ones); other columns (int64, NaN, out of order) go the general path "
              "(each value lifted in Python).")
    return {"results": results}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 7; quick 3)")
    args = p.parse_args(argv)
    params = ({"n": 2**12, "steps": 2**12, "batch_events": 8 * BATCH, "rounds": 3} if args.quick
              else {"n": 2**16, "steps": 2**15, "batch_events": 64 * BATCH, "rounds": 7})
    if args.rounds:
        params["rounds"] = args.rounds
    cores = [name for name in TYPED_ALGORITHMS if not args.algorithms or name in args.algorithms]
    if not cores:
        p.error(f"no typed core among {', '.join(args.algorithms)}; typed cores: {', '.join(TYPED_ALGORITHMS)}")
    params["typed_algorithms"] = cores
    params["mta_compiled"] = mta.COMPILED
    params["typed_record_compiled"] = typed_record.COMPILED
    run = Run(NAME, args, params)
    rounds = params["rounds"]
    cells = {"per_event": run.experiment("per_event", lambda: per_event(run, cores, params["n"], params["steps"],
                                                                         rounds)),
             "batches": run.experiment("batches", lambda: batches(run, cores, params["n"], params["batch_events"],
                                                                   rounds))}
    run.data["cells"] = cells
    csv_rows = ([["per_event", e["algorithm"], e["policy"], e["n"], e["typed_ns"], e["object_ns"]]
                 for e in cells["per_event"]["results"]]
                + [["batches", e["algorithm"], "TimeRange batch", e["n"], e["typed_batch_ns"], e["object_batch_ns"]]
                   for e in cells["batches"]["results"]])
    run.finish(["cell", "algorithm", "measure", "n", "typed_ns", "object_ns"], csv_rows)
    run.write_markdown(f"mta.COMPILED = {params['mta_compiled']}; typed_record compiled = "
                       f"{params['typed_record_compiled']}.")
    return run.data


if __name__ == "__main__":
    main()
