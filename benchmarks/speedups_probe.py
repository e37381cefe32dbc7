"""Issue 20's probe of the compiled core: ns per insert + evict + query step from a Python loop.

    python -m benchmarks.speedups_probe [--rounds 7] [--steps 200000] [--window 1024]

Each round runs one subprocess on the compiled path and one with MTA_NO_EXTENSIONS=1 (the
pure path), alternating which goes first; each subprocess reports the best of 3 timed
passes. Printed: the median over rounds of each path, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import mta
from mta._speedups_probe import RunningSum
steps, window = int(sys.argv[1]), int(sys.argv[2])
xs = [float(i % 1000) for i in range(steps)]
best = float("inf")
for _ in range(3):
    r = RunningSum(window)
    for x in xs[:window - 1]:
        r.insert(x)
    insert, evict, query = r.insert, r.evict, r.query
    t0 = time.perf_counter_ns()
    for x in xs:
        insert(x)
        evict()
        query()
    best = min(best, (time.perf_counter_ns() - t0) / steps)
t0 = time.perf_counter_ns()
for x in xs:
    pass
loop = (time.perf_counter_ns() - t0) / steps
print(json.dumps({"compiled": mta.COMPILED, "ns": best, "loop_ns": loop}))
"""


def _child(pure: bool, steps: int, window: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MTA_NO_EXTENSIONS"}
    if pure:
        env["MTA_NO_EXTENSIONS"] = "1"
    out = subprocess.run([sys.executable, "-c", CHILD, str(steps), str(window)], env=env, check=True,
                         capture_output=True, text=True).stdout
    result = json.loads(out)
    assert result["compiled"] is (not pure) or pure, result
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--window", type=int, default=1024)
    args = parser.parse_args()
    runs: dict[bool, list[float]] = {True: [], False: []}
    compiled_seen = None
    for i in range(args.rounds):
        for pure in ((False, True) if i % 2 == 0 else (True, False)):
            result = _child(pure, args.steps, args.window)
            if not pure:
                compiled_seen = result["compiled"]
            runs[pure].append(result["ns"])
            print(f"round {i} {'pure    ' if pure else 'compiled'} {result['ns']:7.1f} ns/step "
                  f"(empty loop {result['loop_ns']:.1f} ns)", flush=True)
    pure, comp = statistics.median(runs[True]), statistics.median(runs[False])
    print(f"median over {args.rounds} rounds: compiled {comp:.1f} ns/step (mta.COMPILED={compiled_seen}), "
          f"pure {pure:.1f} ns/step, ratio {pure / comp:.2f}x")


if __name__ == "__main__":
    main()
