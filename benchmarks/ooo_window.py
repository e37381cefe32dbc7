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

    python -m benchmarks.ooo_window            # full (about a minute)
    python -m benchmarks.ooo_window --quick    # smoke run (seconds)
"""

from __future__ import annotations

from typing import Any

import mta
from benchmarks.common import Run, gc_paused, median, now_ns, num, parser, pow2
from mta import MaxSize, Sum, Window
from mta.algorithms import typed

NAME = "ooo_window"


def value(i: int) -> float:
    """Scrambled k + 0.5 (k < 1000): every sum of them is exact."""
    return (i * 7919) % 1000 + 0.5


def window(n: int, use_typed: bool) -> Window:
    saved = typed.USE
    typed.USE = use_typed
    try:
        w = Window(Sum(), MaxSize(n), algorithm="fiba")
    finally:
        typed.USE = saved
    assert w._typed == use_typed
    for i in range(n):
        w.insert(i, value(i))
    return w


def steps_run(w: Window, start: int, steps: int, d: int) -> tuple[int, Any]:
    """Timed: steps ``start ..`` of the stream; ns and the last query."""
    insert, query = w.insert, w.query
    stamps = [i - d if d and i % 2 else i for i in range(start, start + steps)]
    values = [value(i) for i in range(start, start + steps)]
    result = None
    with gc_paused():
        begin = now_ns()
        for t, x in zip(stamps, values):
            insert(t, x)
            result = query()
        return now_ns() - begin, result


def cell(run: Run, d: int, n: int, steps: int, rounds: int) -> dict[str, Any]:
    label = "typed FiBA (compiled)" if typed.COMPILED else "typed FiBA (pure)"
    windows = {label: window(n, True), "object FiBA": window(n, False)}
    names = list(windows)
    ns: dict[str, list[int]] = {name: [] for name in names}
    equal = True
    start = n
    for r in range(rounds):
        got = {}
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            elapsed, got[name] = steps_run(windows[name], start, steps, d)
            ns[name].append(elapsed)
        equal &= len({x.hex() for x in got.values()}) == 1 and len({len(w) for w in windows.values()}) == 1
        start += steps
    equal &= all(w._typed == (name == label) for name, w in windows.items())  # no demotion
    per = {name: median(ns[name]) / steps for name in names}
    typed_ns, object_ns = per[label], per["object FiBA"]
    entry = {"d": d, "n": n, "steps": steps, "rounds": rounds, "competitors": names, "ns_per_step": per,
             "typed_vs_object": object_ns / typed_ns, "equal": equal}
    run.log(f"d {d}: " + ", ".join(f"{k} {v:.0f} ns" for k, v in per.items()))
    return entry


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 5; quick 3)")
    args = p.parse_args(argv)
    params = {"n": 2**10, "steps": 2**9, "rounds": 3} if args.quick else {"n": 2**16, "steps": 2**14, "rounds": 5}
    if args.rounds:
        params["rounds"] = args.rounds
    params["distances"] = [0, params["n"] // 4]
    params["typed_compiled"] = typed.COMPILED
    params["mta_compiled"] = mta.COMPILED
    run = Run(NAME, args, params)

    def per_event() -> dict[str, Any]:
        results = [cell(run, d, params["n"], params["steps"], params["rounds"]) for d in params["distances"]]
        names = results[0]["competitors"]
        rows = [["in order" if not e["d"] else f"d = {pow2(e['d'])}", *(num(e["ns_per_step"][k]) for k in names),
                 f"{e['typed_vs_object']:.2f}x", "yes" if e["equal"] else "NO"] for e in results]
        run.table(f"Window.insert + Window.query, algorithm=\"fiba\", MaxSize({pow2(params['n'])}), Sum of floats, "
                  f"{pow2(params['steps'])} steps a round, median of {params['rounds']} rounds (ns per step)",
                  ["order", *names, "typed vs object", "equal"], rows,
                  "Out of order, half the insertions are older than the newest: they take the window's checked "
                  "path (typed.Events serves in-order ones only).")
        return {"results": results}

    cells = {"per_event": run.experiment("per_event", per_event)}
    run.data["cells"] = cells
    rows = [[e["d"], e["n"], *e["ns_per_step"].values(), e["typed_vs_object"]] for e in cells["per_event"]["results"]]
    run.finish(["d", "n", "typed_ns", "object_ns", "typed_vs_object"], rows)
    run.write_markdown(f"typed cores compiled: {typed.COMPILED}.")
    return run.data


if __name__ == "__main__":
    main()
