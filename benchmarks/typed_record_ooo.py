"""Issue 20: out-of-order Record windows on typed FiBA trees (mta.algorithms.typed_record_fiba,
one TypedFiBA per field in lockstep) against the object TimeOrdered + FiBA over the Record.

Per event ``Window.insert(t, x)`` + ``Window.query()`` on a full out-of-order window
(``algorithm="fiba"``, ``late="include"``, ``TimeRange(n)``): timestamps ``i - d_i`` with
``d_i`` scrambled in ``[0, 64)`` (each update up to 63 behind the newest), values
``k + 0.5`` scrambled (every sum exact). Monoids: ``Record(count, sum, max, mean)``,
``Record(first, last, min, variance)`` and, for scale, ``Sum()`` alone (one TypedFiBA).
In one process, each round runs every competitor once, the order rotated every round;
medians over rounds, absolute and as ratios, and whether the typed and object windows'
results were equal (they must be, bit for bit).

    python -m benchmarks.typed_record_ooo            # full (about a minute)
    python -m benchmarks.typed_record_ooo --quick    # smoke run (seconds)
"""

from __future__ import annotations

from typing import Any, Callable

import mta
from benchmarks.common import Run, gc_paused, median, now_ns, num, parser, pow2
from benchmarks.compiled_core import alternate, core_of, values
from mta import Count, First, Last, Max, Mean, Min, Sum, TimeRange, Variance
from mta.algorithms import typed, typed_fiba
from mta.monoid import Monoid, Record

NAME = "typed_record_ooo"
#: How far behind the newest an update may come.
LAG = 64

MONOIDS: dict[str, Callable[[], Monoid]] = {
    "Record(count, sum, max, mean)": lambda: Record(count=Count(), sum=Sum(), max=Max(), mean=Mean()),
    "Record(first, last, min, variance)": lambda: Record(first=First(), last=Last(), min=Min(), var=Variance()),
    "Sum()": Sum,
}


def stamps(start: int, count: int) -> list[int]:
    """``i - d_i`` for i in ``[start, start + count)``, ``d_i`` scrambled in ``[0, LAG)``."""
    return [i - (i * 7919) % LAG for i in range(start, start + count)]


def window(monoid: Monoid, n: int, typed_core: bool) -> mta.Window:
    saved = typed.USE
    typed.USE = typed_core
    try:
        w = mta.Window(monoid, TimeRange(n), algorithm="fiba", late="include")
    finally:
        typed.USE = saved
    if w._typed != typed_core:
        raise AssertionError(f"typed={typed_core} asked, got {core_of(w)}")
    return w


def run_events(w: mta.Window, ts: list[int], xs: list[float]) -> tuple[int, Any]:
    ins, q = w.insert, w.query
    result = None
    with gc_paused():
        began = now_ns()
        for t, x in zip(ts, xs):
            ins(t, x)
            result = q()
        return now_ns() - began, result


def per_event(run: Run, n: int, steps: int, rounds: int) -> dict[str, Any]:
    rows, results = [], []
    for label, make in MONOIDS.items():
        windows = {}
        for path in ("typed", "object"):
            w = windows[path] = window(make(), n, path == "typed")
            for t, x in zip(stamps(0, n), values(n)):
                w.insert(t, x)
        runners: dict[str, Callable[[int], tuple[int, Any]]] = {
            path: (lambda r, w=w: run_events(w, stamps(n + r * steps, steps), values(steps, start=n + r * steps)))
            for path, w in windows.items()}
        ns, got = alternate(runners, rounds)
        typed_ns, object_ns = median(ns["typed"]) / steps, median(ns["object"]) / steps
        equal = all(repr(g["typed"]) == repr(g["object"]) for g in got)
        entry = {"monoid": label, "n": n, "steps": steps, "typed_ns": typed_ns, "object_ns": object_ns,
                 "speedup": object_ns / typed_ns, "equal": equal,
                 "typed_core": type(windows["typed"]._algorithm.tree).__name__,
                 "object_core": core_of(windows["object"]), "typed_still": windows["typed"]._typed, "rounds": rounds}
        results.append(entry)
        rows.append([label, num(typed_ns), num(object_ns), f"{entry['speedup']:.2f}x", entry["typed_core"],
                     "yes" if equal and entry["typed_still"] else "NO"])
    run.table(f"Per event, out of order (up to {LAG - 1} behind): Window.insert(t, x) + query(), fiba, "
              f"late='include', TimeRange(n), n = {pow2(n)}, median of {rounds} rounds",
              ["monoid", "typed ns/event", "object ns/event", "object / typed", "typed window's tree",
               "equal (typed to the end)"], rows)
    return {"results": results}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 7; quick 3)")
    args = p.parse_args(argv)
    params = ({"n": 2**10, "steps": 2**11, "rounds": 3} if args.quick else {"n": 2**16, "steps": 2**14, "rounds": 7})
    if args.rounds:
        params["rounds"] = args.rounds
    params["mta_compiled"] = mta.COMPILED
    params["typed_fiba_compiled"] = typed_fiba.COMPILED
    run = Run(NAME, args, params)
    cells = {"per_event": run.experiment("per_event", lambda: per_event(run, params["n"], params["steps"],
                                                                         params["rounds"]))}
    run.data["cells"] = cells
    run.finish(["cell", "monoid", "n", "typed_ns", "object_ns"],
               [["per_event", e["monoid"], e["n"], e["typed_ns"], e["object_ns"]]
                for e in cells["per_event"]["results"]])
    run.write_markdown(f"mta.COMPILED = {params['mta_compiled']}; typed_fiba compiled = "
                       f"{params['typed_fiba_compiled']}.")
    return run.data


if __name__ == "__main__":
    main()
