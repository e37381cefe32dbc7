"""Issue 20: out-of-order windows (``Window(..., algorithm="fiba")``) on the typed FiBA
(:mod:`mta.typed_ordered`) against the same window on the object TimeOrdered + FiBA.

A step is ``w.insert(t, x); w.query()`` through ``mta.Window``, policy ``MaxSize(n)``
(n = 2^16; quick 2^10), Sum over floats (halves ``k + 0.5``, k < 1000, scrambled: every
sum is exact), min_arity 16. Two competitors, each its own window filled in order with the
same n updates: the typed window (built with ``typed.USE`` on: compiled when the modules
are built) and the object one (built with it off). Within a round each runs ``steps``
steps (2^14; quick 2^9) continuing its own stream, the order alternated every round;
the table gives the median ns per step over rounds and the ratio. The windows' results
after every round are compared bit for bit (``equal``).

Orders: *in order* (timestamp i at step i) and *out of order at distance d = n/4*: odd
steps insert timestamp ``i - d`` (d even: timestamps stay distinct, and newer than the
frontier), even ones timestamp i; the policy evicts the oldest after each insertion.
Timestamps: the ints i, and epoch seconds ``1.7e9 + i / 4`` (floats; their bit codes span
far more than 2^34 steps, which demoted the typed window before it had pair keys).

Batches: the same streams (epoch seconds, in order and at d = n/4) given to three windows
(``typed.USE`` on) as ``insert_many(timestamps, values)`` of numpy columns (``batch`` updates
each: the typed FiBA's C loops), as ``insert_many`` of (timestamp, value) pairs, and as a
loop of ``Window.insert`` (the per-event path); ns per update, median over rounds, and the
ratio of the per-event loop to the numpy columns; ``equal``: the two batch forms' results
bit for bit, and the windows' lengths (the per-event loop evicts after every update, which
shapes the tree otherwise: a Variance may round otherwise, as on the object FiBA). For Sum and for the monoids whose columns
took the general path before (:data:`BATCH_MONOIDS`: MinCount, First, Variance, ArgMin, whose
column is a structured array of ``(key, value)`` records with int keys, and a Record).

    python -m benchmarks.ooo_window            # full (about a minute)
    python -m benchmarks.ooo_window --quick    # smoke run (seconds)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import mta
from benchmarks.common import Run, gc_paused, median, now_ns, num, parser, pow2
from mta import ArgMin, Count, First, MaxSize, Mean, MinCount, Record, StdDev, Sum, Variance, Window
from mta.algorithms import typed

NAME = "ooo_window"


def value(i: int) -> float:
    """Scrambled k + 0.5 (k < 1000): every sum of them is exact."""
    return (i * 7919) % 1000 + 0.5


STAMPS: dict[str, Callable[[int], Any]] = {"int": lambda i: i, "epoch float": lambda i: 1.7e9 + i / 4}


#: The batches' monoids, by name.
BATCH_MONOIDS: dict[str, Callable[[], Any]] = {
    "Sum": Sum, "MinCount": MinCount, "First": First, "Variance": Variance, "ArgMin": ArgMin,
    "Record(Count, Sum, Mean, StdDev)": lambda: Record(n=Count(), s=Sum(), m=Mean(), sd=StdDev())}


def update(monoid: str, i: int) -> Any:
    """The value of update i: ArgMin's a (key, value) pair (key i)."""
    return (i, value(i)) if monoid == "ArgMin" else value(i)


def value_column(monoid: str, updates: list[Any]) -> np.ndarray:
    """The numpy column of these updates' values: ArgMin's (key, value) records."""
    if monoid != "ArgMin":
        return np.array(updates)
    return np.array(updates, dtype=[("key", np.int64), ("value", np.float64)])


def hexed(x: Any) -> Any:
    """A result with its floats as hex: compared bit for bit."""
    if isinstance(x, float):
        return x.hex()
    if isinstance(x, dict):
        return {k: hexed(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return tuple(map(hexed, x))
    return x


def window(n: int, use_typed: bool, at: Callable[[int], Any], monoid: str = "Sum") -> Window:
    saved = typed.USE
    typed.USE = use_typed
    try:
        w = Window(BATCH_MONOIDS[monoid](), MaxSize(n), algorithm="fiba")
    finally:
        typed.USE = saved
    assert w._typed == use_typed
    for i in range(n):
        w.insert(at(i), update(monoid, i))
    return w


def stream(start: int, steps: int, d: int, at: Callable[[int], Any]) -> list[Any]:
    return [at(i - d if d and i % 2 else i) for i in range(start, start + steps)]


def steps_run(w: Window, start: int, steps: int, d: int, at: Callable[[int], Any]) -> tuple[int, Any]:
    """Timed: steps ``start ..`` of the stream; ns and the last query."""
    insert, query = w.insert, w.query
    stamps = stream(start, steps, d, at)
    values = [value(i) for i in range(start, start + steps)]
    result = None
    with gc_paused():
        begin = now_ns()
        for t, x in zip(stamps, values):
            insert(t, x)
            result = query()
        return now_ns() - begin, result


def cell(run: Run, d: int, n: int, steps: int, rounds: int, stamps: str = "int") -> dict[str, Any]:
    label = "typed FiBA (compiled)" if typed.COMPILED else "typed FiBA (pure)"
    at = STAMPS[stamps]
    windows = {label: window(n, True, at), "object FiBA": window(n, False, at)}
    names = list(windows)
    ns: dict[str, list[int]] = {name: [] for name in names}
    equal = True
    start = n
    for r in range(rounds):
        got = {}
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            elapsed, got[name] = steps_run(windows[name], start, steps, d, at)
            ns[name].append(elapsed)
        equal &= len({x.hex() for x in got.values()}) == 1 and len({len(w) for w in windows.values()}) == 1
        start += steps
    equal &= all(w._typed == (name == label) for name, w in windows.items())  # no demotion
    per = {name: median(ns[name]) / steps for name in names}
    typed_ns, object_ns = per[label], per["object FiBA"]
    entry = {"d": d, "n": n, "stamps": stamps, "steps": steps, "rounds": rounds, "competitors": names,
             "ns_per_step": per, "typed_vs_object": object_ns / typed_ns, "equal": equal}
    run.log(f"{stamps} d {d}: " + ", ".join(f"{k} {v:.0f} ns" for k, v in per.items()))
    return entry


def batch_run(w: Window, form: str, stamps: list[Any], values: list[Any], batch: int,
              monoid: str = "Sum") -> tuple[int, Any]:
    """Timed: the updates in ``form`` (numpy columns, pairs, per event); ns and the last query."""
    if form == "per event":
        insert = w.insert
        with gc_paused():
            begin = now_ns()
            for t, x in zip(stamps, values):
                insert(t, x)
            return now_ns() - begin, w.query()
    if form == "numpy columns":
        chunks = [(np.array(stamps[j:j + batch]), value_column(monoid, values[j:j + batch]))
                  for j in range(0, len(stamps), batch)]
    else:
        chunks = [(list(zip(stamps[j:j + batch], values[j:j + batch])),) for j in range(0, len(stamps), batch)]
    insert_many = w.insert_many
    with gc_paused():
        begin = now_ns()
        for chunk in chunks:
            insert_many(*chunk)
        return now_ns() - begin, w.query()


def batch_cell(run: Run, d: int, n: int, steps: int, rounds: int, batch: int, monoid: str = "Sum") -> dict[str, Any]:
    at = STAMPS["epoch float"]
    names = ["numpy columns", "pairs", "per event"]
    windows = {name: window(n, True, at, monoid) for name in names}
    ns: dict[str, list[int]] = {name: [] for name in names}
    equal = True
    start = n
    for r in range(rounds):
        stamps, values = stream(start, steps, d, at), [update(monoid, i) for i in range(start, start + steps)]
        got = {}
        k = r % len(names)
        for name in names[k:] + names[:k]:
            elapsed, got[name] = batch_run(windows[name], name, stamps, values, batch, monoid)
            ns[name].append(elapsed)
        # bit for bit: the two batch forms (the per-event loop enforces MaxSize after every
        # update: the same updates, but FiBA's shape, so Variance's rounding, may differ)
        equal &= hexed(got["numpy columns"]) == hexed(got["pairs"]) and len({len(w) for w in windows.values()}) == 1
        start += steps
    equal &= all(w._typed for w in windows.values())
    per = {name: median(ns[name]) / steps for name in names}
    entry = {"monoid": monoid, "d": d, "n": n, "batch": batch, "steps": steps, "rounds": rounds, "competitors": names,
             "ns_per_update": per, "columns_vs_per_event": per["per event"] / per["numpy columns"],
             "columns_vs_pairs": per["pairs"] / per["numpy columns"], "equal": equal}
    run.log(f"batches {monoid} d {d}: " + ", ".join(f"{k} {v:.0f} ns" for k, v in per.items()))
    return entry


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 5; quick 3)")
    args = p.parse_args(argv)
    params = ({"n": 2**10, "steps": 2**9, "rounds": 3, "batch": 256, "batch_steps": 2**10} if args.quick
              else {"n": 2**16, "steps": 2**14, "rounds": 5, "batch": 1024, "batch_steps": 2**16})
    if args.rounds:
        params["rounds"] = args.rounds
    params["distances"] = [0, params["n"] // 4]
    params["typed_compiled"] = typed.COMPILED
    params["mta_compiled"] = mta.COMPILED
    run = Run(NAME, args, params)

    def per_event() -> dict[str, Any]:
        results = [cell(run, d, params["n"], params["steps"], params["rounds"], stamps)
                   for stamps in STAMPS for d in params["distances"]]
        names = results[0]["competitors"]
        rows = [[e["stamps"], "in order" if not e["d"] else f"d = {pow2(e['d'])}",
                 *(num(e["ns_per_step"][k]) for k in names), f"{e['typed_vs_object']:.2f}x",
                 "yes" if e["equal"] else "NO"] for e in results]
        run.table(f"Window.insert + Window.query, algorithm=\"fiba\", MaxSize({pow2(params['n'])}), Sum of floats, "
                  f"{pow2(params['steps'])} steps a round, median of {params['rounds']} rounds (ns per step)",
                  ["timestamps", "order", *names, "typed vs object", "equal"], rows,
                  "Out of order, half the insertions are older than the newest: they take the window's checked "
                  "path (typed.Events serves in-order ones only).")
        return {"results": results}

    def batches() -> dict[str, Any]:
        results = [batch_cell(run, d, params["n"], params["batch_steps"], params["rounds"], params["batch"], monoid)
                   for monoid in BATCH_MONOIDS for d in params["distances"]]
        names = results[0]["competitors"]
        run.table(f"Window.insert_many, algorithm=\"fiba\", MaxSize({pow2(params['n'])}), floats, epoch-second "
                  f"timestamps, batches of {params['batch']}, {pow2(params['batch_steps'])} updates a round, median of "
                  f"{params['rounds']} rounds (ns per update)",
                  ["monoid", "order", *names, "per event / numpy", "pairs / numpy", "equal"],
                  [[e["monoid"], "in order" if not e["d"] else f"d = {pow2(e['d'])}",
                    *(num(e["ns_per_update"][k]) for k in names),
                    f"{e['columns_vs_per_event']:.1f}x", f"{e['columns_vs_pairs']:.1f}x", "yes" if e["equal"] else "NO"]
                   for e in results])
        return {"results": results}

    cells = {"per_event": run.experiment("per_event", per_event), "batches": run.experiment("batches", batches)}
    run.data["cells"] = cells
    rows = [[e["stamps"], e["d"], e["n"], *e["ns_per_step"].values(), e["typed_vs_object"]]
            for e in cells["per_event"]["results"]]
    run.finish(["stamps", "d", "n", "typed_ns", "object_ns", "typed_vs_object"], rows)
    run.write_markdown(f"typed cores compiled: {typed.COMPILED}.")
    return run.data


if __name__ == "__main__":
    main()
