"""Issue 20: TypedFiBA (compiled and pure) against the object FiBA, bare steps at the algorithm level.

A step is ``insert(key, x); evict(oldest key); query()`` on a tree of n entries (2^20;
quick 2^12), Sum over floats (halves ``k + 0.5``, k < 1000, scrambled: every sum is exact,
so the three must agree, and do bit for bit anyway) and Mean over floats, min_arity 16
(FiBA's default) and 4 (the C++ reference's FiBA(4)). Three competitors, each with its
own tree filled with the same n entries: ``TypedFiBA`` as imported (compiled when built),
its pure-Python twin (``mta._extensions.load_pure``) and the object ``FiBA``. Within a
round each runs ``steps`` steps (2^15; quick 2^10) continuing its own stream, the order
rotated every round; the tables give the median ns per step over rounds and the ratios.
The results after every round are compared (``equal``).

Orders: *in order* (key i at step i, the evicted key known: FiBA's two finger fast
paths), and *out of order at distance d*: odd steps insert key ``i - d`` (d entries back
from the newest; d even, so keys stay distinct), even ones key i, and each step evicts
the oldest, found with ``oldest()``. The C++ column is the issue's figure for IBM's
sliding-window-aggregators FiBA(4) on this machine, not measured here.

Memory: tracemalloc (every allocation through Python's allocators: the typed nodes and
their lists, the object tree's nodes, lists and number objects) of each tree, Sum of
floats, min_arity 16, after an in-order fill of n and after n/4 more steps (insert +
evict of the oldest); the values are made while tracing, so the object tree's floats count.

    python -m benchmarks.typed_fiba            # full (a few minutes)
    python -m benchmarks.typed_fiba --quick    # smoke run (seconds)
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any, Callable

import mta
from benchmarks.common import Run, gc_paused, median, now_ns, num, parser, pow2
from mta import Mean, Sum
from mta._extensions import load_pure
from mta.algorithms import typed_fiba
from mta.algorithms.fiba import FiBA
from mta.monoid import Monoid

NAME = "typed_fiba"
CPP_REFERENCE = "31-50 (FiBA(4))"
MONOIDS: dict[str, Callable[[], Monoid]] = {"Sum, float": Sum, "Mean, float": Mean}


def value(monoid: Monoid, i: int) -> Any:
    """Scrambled k + 0.5 (k < 1000), lifted: every sum of them is exact."""
    return monoid.lift((i * 7919) % 1000 + 0.5)


def competitors(monoid: Monoid, min_arity: int) -> dict[str, Any]:
    pure = load_pure("mta.algorithms.typed_fiba")
    label = "TypedFiBA (compiled)" if typed_fiba.COMPILED else "TypedFiBA (imported, not compiled)"
    return {label: typed_fiba.TypedFiBA(monoid, min_arity=min_arity),
            "TypedFiBA (pure)": pure.TypedFiBA(monoid, min_arity=min_arity),
            "FiBA (object)": FiBA(monoid, min_arity=min_arity)}


def steps_run(tree: Any, partials: list[Any], start: int, d: int) -> tuple[int, Any]:
    """Timed: steps ``start ..`` of the stream; ns and the last query."""
    ins, ev, q = tree.insert, tree.evict, tree.query
    n = len(tree)
    result = None
    if not d:
        with gc_paused():
            begin = now_ns()
            for i, p in enumerate(partials, start):
                ins(i, p)
                ev(i - n)
                result = q()
            return now_ns() - begin, result
    oldest = tree.oldest
    with gc_paused():
        begin = now_ns()
        for i, p in enumerate(partials, start):
            ins(i - d if i % 2 else i, p)
            ev(oldest()[0])
            result = q()
        return now_ns() - begin, result


def cell(run: Run, kind: str, min_arity: int, d: int, n: int, steps: int, rounds: int) -> dict[str, Any]:
    monoid = MONOIDS[kind]()
    trees = competitors(monoid, min_arity)
    fill = [value(monoid, i) for i in range(n)]
    for tree in trees.values():
        for i, p in enumerate(fill):
            tree.insert(i, p)
    names = list(trees)
    ns: dict[str, list[int]] = {name: [] for name in names}
    equal = True
    start = n
    for r in range(rounds):
        partials = [value(monoid, i) for i in range(start, start + steps)]
        got = {}
        k = r % len(names)
        for name in names[k:] + names[:k]:
            elapsed, got[name] = steps_run(trees[name], partials, start, d)
            ns[name].append(elapsed)
        first = next(iter(got.values()))
        equal &= all(repr(x) == repr(first) for x in got.values()) and len({len(t) for t in trees.values()}) == 1
        start += steps
    per = {name: median(ns[name]) / steps for name in names}
    compiled, pure, obj = (per[name] for name in names)
    entry = {"kind": kind, "min_arity": min_arity, "d": d, "n": n, "steps": steps, "rounds": rounds,
             "competitors": names, "ns_per_step": per, "compiled_steps_per_s": 1e9 / compiled,
             "compiled_vs_object": obj / compiled, "compiled_vs_pure": pure / compiled,
             "pure_vs_object": obj / pure, "equal": equal}
    run.log(f"{kind} min_arity {min_arity} d {d}: " + ", ".join(f"{k} {v:.0f} ns" for k, v in per.items()))
    return entry


def traced(tree: Any, n: int) -> tuple[int, int]:
    """Bytes traced while filling ``tree`` with n floats in order, and after n/4 more steps."""
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(n):
            tree.insert(i, (i * 7919) % 1000 + 0.5)
        filled = tracemalloc.get_traced_memory()[0]
        for i in range(n, n + n // 4):
            tree.insert(i, (i * 7919) % 1000 + 0.5)
            tree.evict(i - n)
        return filled, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def memory(run: Run, n: int) -> dict[str, Any]:
    results = {}
    for name, make in (("TypedFiBA", lambda: typed_fiba.TypedFiBA(Sum())), ("FiBA (object)", lambda: FiBA(Sum()))):
        filled, slid = traced(make(), n)
        results[name] = {"filled_bytes_per_entry": filled / n, "slid_bytes_per_entry": slid / n}
    typed_, object_ = results["TypedFiBA"], results["FiBA (object)"]
    ratio = typed_["filled_bytes_per_entry"] / object_["filled_bytes_per_entry"]
    run.table(f"Memory of a tree of {pow2(n)} floats (Sum, min_arity 16), bytes per entry (tracemalloc)",
              ["tree", "after the fill", "after n/4 more steps"],
              [[name, num(e["filled_bytes_per_entry"]), num(e["slid_bytes_per_entry"])] for name, e in results.items()],
              f"TypedFiBA / FiBA after the fill: {ratio:.2f}. A typed node has room for 33 entries in each of "
              "three int64 arrays (keys, values, Mean counts: unused here); in-order splits leave nodes half full.")
    return {"n": n, "results": results, "typed_over_object": ratio}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 5; quick 3)")
    args = p.parse_args(argv)
    if args.quick:
        params = {"n": 2**12, "steps": 2**10, "rounds": 3, "distances": [0, 64]}
    else:
        params = {"n": 2**20, "steps": 2**15, "rounds": 5, "distances": [0, 1024, 2**18]}
    if args.rounds:
        params["rounds"] = args.rounds
    params["typed_fiba_compiled"] = typed_fiba.COMPILED
    params["mta_compiled"] = mta.COMPILED
    run = Run(NAME, args, params)

    def bare() -> dict[str, Any]:
        results = []
        for kind in MONOIDS:
            for min_arity in (16, 4):
                for d in params["distances"]:
                    if d and kind != "Sum, float":
                        continue  # out of order: Sum only
                    results.append(cell(run, kind, min_arity, d, params["n"], params["steps"], params["rounds"]))
        names = results[0]["competitors"]
        rows = [[e["kind"], e["min_arity"], "in order" if not e["d"] else f"d = {pow2(e['d'])}",
                 *(num(e["ns_per_step"][name]) for name in names), num(e["compiled_steps_per_s"]),
                 f"{e['compiled_vs_object']:.1f}x", f"{e['compiled_vs_pure']:.1f}x",
                 CPP_REFERENCE if e["min_arity"] == 4 and not e["d"] else "–", "yes" if e["equal"] else "NO"]
                for e in results]
        run.table(f"Bare insert + evict + query, window {pow2(params['n'])}, {pow2(params['steps'])} steps a round, "
                  f"median of {params['rounds']} rounds (ns per step)",
                  ["kind", "min_arity", "order", *names, "compiled steps/s", "compiled vs object",
                   "compiled vs pure", "C++ ns/step (issue's)", "equal"], rows,
                  "Each step is three Python-level calls into the tree (the C++ figure has none). Out of "
                  "order: half the inserts d entries back from the newest, and every eviction first asks "
                  "for the oldest key (one more call).")
        return {"results": results}

    cells = {"bare": run.experiment("bare", bare), "memory": run.experiment("memory", lambda: memory(run, params["n"]))}
    run.data["cells"] = cells
    rows = [[e["kind"], e["min_arity"], e["d"], e["n"], *e["ns_per_step"].values(), e["compiled_vs_object"]]
            for e in cells["bare"]["results"]]
    run.finish(["kind", "min_arity", "d", "n", "compiled_ns", "pure_ns", "object_ns", "compiled_vs_object"], rows)
    run.write_markdown(f"mta.algorithms.typed_fiba compiled: {typed_fiba.COMPILED}.")
    return run.data


if __name__ == "__main__":
    main()
