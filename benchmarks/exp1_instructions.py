"""Experiment 1's step, counted in machine instructions instead of timed.

On a shared VM the speed of every algorithm swings by 2x for minutes at a time
(see BENCHMARKS.md), so small changes to a hot path cannot be seen in steps/s.
Instructions executed per step do not depend on the neighbours: each algorithm
runs Experiment 1's loop (``exp1_constant_window.run_count_steps``: insert, evict
down to n, query; ``Sum``) in a child Python under valgrind's cachegrind, once
without the timed steps and once with them; the difference divided by the steps
is its instructions per step. Instructions are not time (memory stalls are not
counted), but a change that removes instructions from a pure-Python loop makes
it faster.

Needs ``valgrind`` on the PATH (not a project dependency: ``apt install valgrind``).

    python -m benchmarks.exp1_instructions                  # ~12 min
    python -m benchmarks.exp1_instructions --quick          # smoke run
    python -m benchmarks.exp1_instructions --exponents 0 1 2 20
"""

from __future__ import annotations

import gc
import shutil
import sys
from typing import Any

from benchmarks import common
from benchmarks.common import label, pow2
from benchmarks.exp1_constant_window import build_values, fill, run_count_steps
from mta.algorithms import ALGORITHMS
from mta.monoid import Sum

NAME = "exp1_instructions"


def child(name: str, n: int, steps: int, counted: bool) -> None:
    """Fill a window of n, run one whole cycle (steady state), then, if ``counted``, ``steps`` steps."""
    gc.disable()
    agg = ALGORITHMS[name](Sum())
    fill(agg, n)
    run_count_steps(agg, n, build_values(max(n, 2 ** 12)))
    values = build_values(steps)
    if counted:
        run_count_steps(agg, n, values)


def instructions(name: str, n: int, steps: int, counted: bool) -> int:
    """Instructions the whole child executes (cachegrind's ``I refs``)."""
    return common.cachegrind_instructions(f"benchmarks.{NAME}", ["--child", name, str(n), str(steps), str(int(counted))])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]), int(argv[3]), argv[4] == "1")
        return 0
    p = common.parser(__doc__.split("\n\n")[0])
    p.add_argument("--exponents", type=int, nargs="+", default=None,
                   help="window sizes as powers of two (full: 0 1 2 3 4 8 14; quick: 0 4)")
    p.add_argument("--steps", type=int, default=None, help="counted steps per size (full: 32768; quick: 1024)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        p.error("valgrind is not on the PATH (apt install valgrind)")
    exponents = args.exponents or ([0, 4] if args.quick else [0, 1, 2, 3, 4, 8, 14])
    steps = args.steps or (1024 if args.quick else 32768)
    algorithms = args.algorithms or ["amta", "two_stacks"]
    run = common.Run(NAME, args, {"exponents": exponents, "steps": steps, "algorithms": algorithms,
                                  "step": "exp1_constant_window.run_count_steps, Sum"})
    results: dict[str, dict[int, int]] = {name: {} for name in algorithms}
    for e in exponents:
        for name in algorithms:
            per_step = (instructions(name, 2 ** e, steps, True) - instructions(name, 2 ** e, steps, False)) / steps
            results[name][e] = round(per_step)
            run.log(f"{name:>12} n={pow2(2 ** e):>5}: {per_step:,.0f} instructions/step")
    ratio = "amta" in algorithms and "two_stacks" in algorithms
    headers = ["n"] + [label(a) for a in algorithms] + (["TwoStacks / AMTA"] if ratio else [])
    rows: list[list[Any]] = []
    for e in exponents:
        row: list[Any] = [pow2(2 ** e)] + [results[a][e] for a in algorithms]
        if ratio:
            row.append(f"{results['two_stacks'][e] / results['amta'][e]:.2f}x")
        rows.append(row)
    run.table("Experiment 1 step, instructions per step (valgrind cachegrind)", headers, rows,
              note="Lower is better. TwoStacks / AMTA is AMTA's speed relative to TwoStacks if time "
                   "followed instructions.")
    run.data["results"] = results
    run.finish(headers[:-1] if ratio else headers, [r[:len(algorithms) + 1] for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
