"""Issue 20's per-event cell counted in machine instructions instead of timed.

``Window.insert(t, x)`` + ``query()`` against river's ``update(x)`` + ``get()``
(``benchmarks.compiled_core``, cell 2) swings by 2x on this VM within seconds, river
as much as mta, and the ratio with them. Instructions executed per event do not depend
on the neighbours: each competitor runs in a child Python under valgrind's cachegrind,
once filling its window of n and sliding it once (steady state), and once doing that
and then ``steps`` more events; the difference divided by ``steps`` is its
instructions per event. Instructions are not time (memory stalls are not counted), but
both competitors are Python calling into C, so the ratio is what the clock would show on
a quiet machine, give or take the caches.

Competitors per monoid (Sum, Mean, Max) and n: river (``utils.Rolling`` of ``stats.Sum``
or ``stats.Mean``, ``stats.RollingMax``), and ``mta.Window(monoid, MaxSize(n))`` on the
typed core (compiled when built) and on the object path, for each algorithm named
(``--algorithms``; default amta, the default algorithm).
Needs ``valgrind`` on the PATH (not a project dependency: ``apt install valgrind``).

    python -m benchmarks.per_event_instructions           # ~15 min
    python -m benchmarks.per_event_instructions --quick   # smoke run
"""

from __future__ import annotations

import gc
import shutil
import sys
from typing import Any

from benchmarks import common
from benchmarks.common import label, pow2
from benchmarks.compiled_core import PER_EVENT_MONOIDS, TARGETS, river_model, values, window
from mta import MaxSize

NAME = "per_event_instructions"


def child(competitor: str, monoid: str, n: int, steps: int, counted: bool) -> None:
    """Fill a window of n and slide it by n (steady state); then, if ``counted``, ``steps`` events."""
    gc.disable()
    warm = values(2 * n)
    xs = values(steps, start=2 * n)
    if competitor == "river":
        model = river_model(monoid, n)
        update, get = model.update, model.get
        for x in warm:
            update(x)
            get()
        if counted:
            for x in xs:
                update(x)
                get()
        return
    algorithm, path = competitor.split("/")
    w = window(PER_EVENT_MONOIDS[monoid](), MaxSize(n), algorithm, path == "typed")
    insert, query = w.insert, w.query
    for t, x in enumerate(warm):
        insert(t, x)
        query()
    if counted:
        for t, x in enumerate(xs, start=2 * n):
            insert(t, x)
            query()


def per_event(competitor: str, monoid: str, n: int, steps: int) -> float:
    """Instructions per event of ``competitor``: counted run minus uncounted, over the steps."""
    def count(counted: bool) -> int:
        return common.cachegrind_instructions(f"benchmarks.{NAME}", ["--child", competitor, monoid, str(n),
                                                                     str(steps), str(int(counted))])
    return (count(True) - count(False)) / steps


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5] == "1")
        return 0
    p = common.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=None, help="window sizes (full: 1000 65536; quick: 1000)")
    p.add_argument("--steps", type=int, default=None, help="counted events (full: 20000; quick: 2000)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        p.error("valgrind is not on the PATH (apt install valgrind)")
    sizes = args.sizes or ([1000] if args.quick else [1000, 65536])
    steps = args.steps or (2000 if args.quick else 20000)
    algorithms = args.algorithms or ["amta"]
    monoids = ["Sum"] if args.quick else list(PER_EVENT_MONOIDS)
    run = common.Run(NAME, args, {"sizes": sizes, "steps": steps, "algorithms": algorithms, "monoids": monoids,
                                  "event": "Window.insert(t, x) + query(), MaxSize(n) / river update(x) + get()"})
    rows: list[list[Any]] = []
    results = []
    for n in sizes:
        for monoid in monoids:
            river = per_event("river", monoid, n, steps)
            run.log(f"n={pow2(n)} {monoid}: river {river:,.0f} instructions/event")
            for algorithm in algorithms:
                typed_i = per_event(f"{algorithm}/typed", monoid, n, steps)
                object_i = per_event(f"{algorithm}/object", monoid, n, steps)
                entry = {"n": n, "monoid": monoid, "algorithm": algorithm, "river": river, "typed": typed_i,
                         "object": object_i, "river_over_typed": river / typed_i, "river_over_object": river / object_i}
                results.append(entry)
                rows.append([pow2(n), monoid, label(algorithm), f"{river:,.0f}", f"{typed_i:,.0f}", f"{object_i:,.0f}",
                             f"{entry['river_over_typed']:.2f}x", f"{entry['river_over_object']:.2f}x"])
                run.log(f"  {algorithm}: typed {typed_i:,.0f}, object {object_i:,.0f}")
    headers = ["n", "monoid", "algorithm", "river instr/event", "mta typed instr/event", "mta object instr/event",
               "river / typed", "river / object"]
    run.table(f"Per event, instructions (valgrind cachegrind), {steps:,} counted events", headers, rows,
              f"Lower is better; river / mta is mta's speed relative to river's if time followed instructions. "
              f"Issue target: >= {TARGETS['vs_river']:g}x river.")
    run.data["results"] = results
    run.finish(headers, rows)
    run.write_markdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
