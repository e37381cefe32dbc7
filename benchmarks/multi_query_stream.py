"""``Stream(final="shared")`` with the typed multi-query twins against the object aggregators (issue 20).

The shared final aggregation runs the optimizer's plan: each group inserts one partial per
edge into a multi-query aggregator (``mta.algorithms.multi_query_aggregator``) and asks it
for every window that ends. With the compiled core that aggregator is the typed twin
(``mta.algorithms.typed_mq``); with ``typed.USE`` off it is the object one. Two streams,
one per setting, get the same tuples (one per tick, ints, seeded) in chunks that alternate
within rounds; each chunk inserts its tuples and advances the watermark to its end (every
window ending there is reported). Results are checked equal, bit for bit, every chunk.

Workload: ``--queries`` sliding windows, sizes uniform in [2, ``--max-size``] ticks, slides
1 or 2 (so the windows are answered by the groups' aggregators, not folded), Sum and Max.

    python -m benchmarks.multi_query_stream            # full: ~4 minutes
    python -m benchmarks.multi_query_stream --quick    # smoke run, seconds
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from benchmarks.common import Run, gc_paused, num, parser
from mta import Max, Stream, Sum
from mta.algorithms import typed, typed_mq
from mta.monoid import Monoid
from mta.windows import Sliding

NAME = "multi_query_stream"
MONOIDS: dict[str, Callable[[], Monoid]] = {"sum": Sum, "max": Max}
SETTINGS = {"typed": True, "object": False}


def make_stream(make: Callable[[], Monoid], windows: list[tuple[int, int]]) -> Stream:
    s = Stream(make(), final="shared")
    for k, (size, slide) in enumerate(windows):
        s.add(f"q{k}", Sliding(size, slide))
    return s


def chunk(s: Stream, use: bool, tuples: list[tuple[int, int]]) -> tuple[int, list]:
    """Nanoseconds to insert ``tuples`` and advance to the last one's time (``typed.USE`` is
    ``use`` while the plan is made: the first advance), and the results."""
    typed.USE = use
    with gc_paused():
        start = time.perf_counter_ns()
        s.insert_many(tuples)
        out = s.advance(tuples[-1][0])
        elapsed = time.perf_counter_ns() - start
    return elapsed, [(r.query, r.start, r.end, repr(r.value)) for r in out]


def finals(s: Stream) -> list[str]:
    """The groups' aggregators' classes at the end (a typed twin stays typed unless demoted)."""
    return sorted({type(g.mq).__name__ for g in s.final.groups.values()})


def point(monoid: str, windows: list[tuple[int, int]], values: list[int], rounds: int, warmup: int) -> dict[str, Any]:
    streams = {name: make_stream(MONOIDS[monoid], windows) for name in SETTINGS}
    tuples = list(enumerate(values))
    for name, s in streams.items():  # the plan, and the windows filled once
        chunk(s, SETTINGS[name], tuples[:warmup])
    timed = tuples[warmup:]
    size = -(-len(timed) // rounds)
    ns = dict.fromkeys(SETTINGS, 0)
    results = 0
    for start in range(0, len(timed), size):
        part = timed[start:start + size]
        outs = {}
        for name, s in streams.items():
            elapsed, outs[name] = chunk(s, SETTINGS[name], part)
            ns[name] += elapsed
        if outs["typed"] != outs["object"]:
            raise AssertionError(f"results differ: {outs['typed'][:3]} vs {outs['object'][:3]}")
        results += len(outs["object"])
    typed.USE = typed.COMPILED
    out = {name: {"tuples_per_s": len(timed) / (ns[name] / 1e9), "results_per_s": results / (ns[name] / 1e9),
                  "aggregators": finals(s)} for name, s in streams.items()}
    out["ratio"] = out["typed"]["tuples_per_s"] / out["object"]["tuples_per_s"]
    out["plan_finals"] = sorted({g.final for g in streams["typed"].plan().groups})
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--queries", default=None, help="comma-separated query counts (default 1,8,32)")
    p.add_argument("--max-size", type=int, default=None, help="largest window size in ticks (default 4096)")
    p.add_argument("--seed", type=int, default=2020)
    args = p.parse_args(argv)
    if args.quick:
        queries, max_size, tuples, rounds = [1, 8], 256, 3000, 3
    else:
        queries, max_size, tuples, rounds = [1, 8, 32], 4096, 60000, 6
    if args.queries:
        queries = [int(q) for q in args.queries.split(",")]
    max_size = args.max_size or max_size
    params = {"queries": queries, "max_size": max_size, "tuples": tuples, "rounds": rounds, "seed": args.seed,
              "typed_mq_compiled": typed_mq.COMPILED}
    run = Run(NAME, args, params)
    rng = random.Random(args.seed)
    draw = [(rng.randint(2, max_size), rng.choice((1, 2))) for _ in range(max(queries))]
    values = [rng.randint(0, 10 ** 6) for _ in range(max_size + tuples)]
    rows, csv_rows, results = [], [], []
    for monoid in MONOIDS:
        for q in queries:
            windows = draw[:q]
            res = point(monoid, windows, values, rounds, max_size)
            results.append({"monoid": monoid, "queries": q, **res})
            rows.append([monoid, q, ", ".join(res["plan_finals"]), num(res["typed"]["tuples_per_s"]),
                         num(res["object"]["tuples_per_s"]), f"{res['ratio']:.2f}x",
                         num(res["typed"]["results_per_s"]), ", ".join(res["typed"]["aggregators"])])
            csv_rows.append([monoid, q, res["typed"]["tuples_per_s"], res["object"]["tuples_per_s"], res["ratio"]])
            run.log(f"{monoid}: {q} queries done")
    how = "compiled" if typed_mq.COMPILED else "pure"
    run.table(f"Stream(final='shared'), sliding windows of [2, {max_size:,}] ticks, slides 1-2, one int per tick",
              ["monoid", "queries", "plan's finals", f"tuples/s, twins ({how})", "tuples/s, object",
               "twins / object", "results/s, twins", "aggregators at the end (twins)"], rows,
              "Tuples inserted and every window reported (advance per chunk); results checked equal every chunk.")
    run.data["results"] = results
    run.finish(["monoid", "queries", "typed_tuples_per_s", "object_tuples_per_s", "ratio"], csv_rows)
    run.write_markdown(f"mta.algorithms.typed_mq compiled: {typed_mq.COMPILED}.")
    return run.data


if __name__ == "__main__":
    main()
