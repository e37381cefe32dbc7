"""Issue 20: bare insert + evict + query steps of the typed AMTA against the object AMTA.

    python -m benchmarks.typed_amta [--quick] [--rounds 7] [--steps 200000] [--window 1048576]

One process: a window of ``--window`` partials, then ``--steps`` steps of ``insert(x);
evict(); query()`` from a Python loop, for each case (Sum of floats, Sum of ints, Min of
floats, Mean of floats) and each competitor: :class:`mta.algorithms.typed_amta.TypedAMTA`
as imported (compiled when the build had a compiler), its pure-Python twin
(``load_pure``, only with ``--pure-twin``: it is slow) and the object
:class:`mta.algorithms.amta.AmortizedMTA`. Competitors alternate within each round (the
first one changes every round); a step's time is the median over rounds. Writes
``benchmarks/results/typed_amta.md`` (``typed_amta_quick.md`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from benchmarks.common import RESULTS, gc_paused, machine_info
from mta import _extensions
from mta.algorithms.amta import AmortizedMTA
from mta.algorithms import typed_amta
from mta.monoid import Max, Mean, Min, Monoid, Sum

CASES: dict[str, tuple[Monoid, Callable[[int], Any]]] = {
    "Sum float": (Sum(), lambda i: float(i % 1000) * 0.25),
    "Sum int": (Sum(), lambda i: i % 1000),
    "Min float": (Min(), lambda i: float((i * 7919) % 1000)),
    "Max int": (Max(), lambda i: (i * 7919) % 1000),
    "Mean float": (Mean(), lambda i: (float(i % 1000), 1)),
}


def _steps(make: Callable[[], Any], fill: list[Any], xs: list[Any]) -> float:
    """ns per insert + evict + query step over a window of ``len(fill)``."""
    algorithm = make()
    algorithm.insert_many(fill)
    insert, evict, query = algorithm.insert, algorithm.evict, algorithm.query
    with gc_paused():
        t0 = time.perf_counter_ns()
        for x in xs:
            insert(x)
            evict()
            query()
        elapsed = time.perf_counter_ns() - t0
    return elapsed / len(xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--window", type=int, default=1 << 20)
    parser.add_argument("--pure-twin", action="store_true", help="also time TypedAMTA's pure-Python twin")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps, args.window = 2, 2_000, 1 << 10
    competitors: dict[str, Callable[[Monoid], Any]] = {"typed": typed_amta.TypedAMTA}
    if args.pure_twin:
        competitors["typed (pure twin)"] = _extensions.load_pure("mta.algorithms.typed_amta").TypedAMTA
    competitors["object AMTA"] = AmortizedMTA
    names = list(competitors)
    rows = []
    for case, (monoid, value) in CASES.items():
        fill = [value(i) for i in range(args.window)]
        xs = [value(args.window + i) for i in range(args.steps)]
        times: dict[str, list[float]] = {name: [] for name in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                times[name].append(_steps(lambda: competitors[name](monoid), fill, xs))
        ns = {name: statistics.median(times[name]) for name in names}
        rows.append((case, ns))
        print(f"{case}: " + ", ".join(f"{name} {ns[name]:.1f} ns" for name in names), flush=True)
    m = machine_info()
    header = "| case | " + " | ".join(f"{name} ns/step" for name in names) + " | typed M steps/s | object / typed |"
    lines = [
        f"# Typed AMTA: bare insert + evict + query (issue 20){' (quick)' if args.quick else ''}",
        "",
        f"Command: `{' '.join(['python -m benchmarks.typed_amta', *sys.argv[1:]])}`; commit {m['git_commit']}; "
        f"{m['cpu_model']} x{m['cpu_count']}, Python {m['python']}, load {m['loadavg_start']}; "
        f"typed_amta compiled: {typed_amta.COMPILED}.",
        "",
        f"Window {args.window}, {args.steps} steps per run, median of {args.rounds} rounds "
        "(competitors alternate, the first changes every round; cyclic GC off while timed).",
        "",
        header,
        "|" + "---|" * (len(names) + 3),
    ]
    for case, ns in rows:
        cells = " | ".join(f"{ns[name]:.1f}" for name in names)
        lines.append(f"| {case} | {cells} | {1e3 / ns['typed']:.2f} | {ns['object AMTA'] / ns['typed']:.1f}x |")
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"typed_amta{'_quick' if args.quick else ''}.md").write_text(text)


if __name__ == "__main__":
    main()
