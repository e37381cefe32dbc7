"""Issue 20: stored windows (``memory://``, a file, Redis) per event and in batches, on this
checkout compiled, on it compiled but on the object AmortizedMTA, on it pure
(``MTA_NO_EXTENSIONS=1``) and on another checkout (``--before``, e.g. main before the change).

    python -m benchmarks.stored_windows [--quick] [--rounds 5] [--before /work/main] [--out DIR]

``Window(Sum(), TimeRange(w))`` over one update per time unit, at steady state (filled with
``w`` updates first, not timed), for windows of ``w`` = 1,000 and 40,000 updates (past the
typed core's ``LOCAL_LIMIT``): ``per_event`` times ``insert(t, x); query()``; ``batches``
times what the gRPC server does with a batch of 1,000 (``check``, ``insert_slices`` in
slices of 256, ``flush(wait=False)``, ``query()``), per update, the commits sent in the
background included (``wait_durable`` at the end); ``reopened`` times ``per_event`` on a
window of 1,000 closed and reopened (``Window.open``) after its fill. ``in memory`` (no
store: the typed core when compiled) is the reference. The ``object`` competitor is this
checkout compiled with ``buffer_size=512`` given explicitly (AmortizedMTA's default), which
makes a stored window run the object AmortizedMTA. The table also gives the algorithm a
compiled window ran and the store calls it made per 1,000 updates (commits that queue up
behind one in flight are merged: their number depends on the writer thread's turns).

Each competitor is a worker process (different code cannot share one), kept for the whole
run; rounds alternate the competitors (the first one changes every round) and a cell's
time is the process's CPU time (the machine is shared: wall time swings with its load;
Redis's own work is not in it), median over rounds and best round; the JSON has the wall
times too. Every worker reports the final result of each cell, which
must agree between competitors (floats by ``hex``). Writes ``stored_windows[_quick].md``
and ``.json`` under ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, machine_info
from kvs.servers import RedisProcess

ROOT = Path(__file__).resolve().parent.parent

# A worker: reads "cell store n size" lines, answers {"us": wall and "cpu_us": CPU microseconds per update,
# "result": hex, ...}; OPTIONS (the environment's MTA_BENCH_OPTIONS) go to every stored window.
WORKER = r"""
import gc, json, os, sys, tempfile, time, uuid
import mta
from mta import Window, TimeRange
from mta.monoid import Sum
print(json.dumps({"compiled": mta.COMPILED, "file": mta.__file__}), flush=True)
FILE = os.path.join(tempfile.mkdtemp(prefix="mta-stored-windows-"), "windows.db")
OPTIONS = json.loads(os.environ.get("MTA_BENCH_OPTIONS", "{}"))
for line in sys.stdin:
    cell, store, n, size = line.split()
    n, size = int(n), int(size)
    store = FILE if store == "file" else store
    window_id = uuid.uuid4().hex
    if store == "none":
        w = Window(Sum(), TimeRange(size))
    else:
        w = Window(Sum(), TimeRange(size), store=store, window_id=window_id, **OPTIONS)
    values = [float(i % 1000) * 0.1 for i in range(size + n)]
    for start in range(0, size, 1000):  # the fill: a window of `size` at steady state
        w.insert_many(list(range(start, min(start + 1000, size))), values[start:min(start + 1000, size)])
    w.flush()
    if cell == "reopened":
        backend = w.backend  # (a bare memory:// URL would name a new, empty store)
        w.close()
        w = Window.open(backend, window_id, Sum(), TimeRange(size))
        cell = "per_event"
    values = values[size:]
    trips = w.backend.round_trips if w.backend is not None else None
    before = (trips.reads, trips.writes) if trips is not None else (0, 0)
    gc.collect(); gc.disable()
    if cell == "per_event":
        insert, query = w.insert, w.query
        c0, t0 = time.process_time(), time.perf_counter()
        for i, x in enumerate(values, size):
            insert(i, x)
            query()
    else:
        c0, t0 = time.process_time(), time.perf_counter()
        for start in range(0, n, 1000):
            checked = w.check(list(range(size + start, size + start + 1000)), values[start:start + 1000])
            for _ in w.insert_slices(checked, 256):
                pass
            w.flush(wait=False)
            w.query()
    w.wait_durable()  # the commits sent in the background are done (their CPU time counted)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    gc.enable()
    reads, writes = (trips.reads - before[0], trips.writes - before[1]) if trips is not None else (0, 0)
    result = w.query()
    kind = type(w._algorithm).__name__
    if store != "none":
        w.close()
    print(json.dumps({"us": elapsed / n * 1e6, "cpu_us": cpu / n * 1e6, "result": result.hex(), "len": len(w),
                      "reads": reads, "writes": writes, "algorithm": kind}), flush=True)
"""


class Worker:
    """One competitor's process."""

    def __init__(self, name: str, root: Path, pure: bool, options: dict[str, Any] | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=str(root), MTA_BENCH_OPTIONS=json.dumps(options or {}))
        env.pop("MTA_NO_EXTENSIONS", None)
        if pure:
            env["MTA_NO_EXTENSIONS"] = "1"
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=root)
        self.info = json.loads(self.proc.stdout.readline())

    def run(self, cell: str, store: str, n: int, size: int) -> dict[str, Any]:
        self.proc.stdin.write(f"{cell} {store} {n} {size}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} died")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=40_000, help="updates per cell and round")
    parser.add_argument("--before", type=Path, help="another checkout to compare with (run compiled)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rounds, events = (2, 2_000) if args.quick else (args.rounds, args.events)
    sizes = (1_000, 5_000) if args.quick else (1_000, 40_000)

    info = machine_info()
    redis = RedisProcess()
    redis.start()
    competitors = [("compiled", ROOT, False), ("object", ROOT, False, {"buffer_size": 512}), ("pure", ROOT, True)]
    if args.before is not None:
        competitors.insert(1, ("before", args.before.resolve(), False))
    workers = [Worker(*c) for c in competitors]
    stores = {"in memory": "none", "memory://": "memory://", "file": "file", "redis": redis.url}
    cells = [(cell, store, size) for size in sizes for cell in ("per_event", "batches") for store in stores]
    cells += [("reopened", store, sizes[0]) for store in stores if store != "in memory"]
    times: dict[tuple[Any, ...], list[float]] = {}
    walls: dict[tuple[Any, ...], list[float]] = {}
    finals: dict[tuple[Any, ...], set] = {}
    trips: dict[tuple[Any, ...], list[tuple[float, float, str]]] = {}
    try:
        for r in range(rounds):
            order = workers[r % len(workers):] + workers[:r % len(workers)]
            for cell, store, size in cells:
                for worker in order:
                    out = worker.run(cell, stores[store], events, size)
                    times.setdefault((cell, store, size, worker.name), []).append(out["cpu_us"])
                    walls.setdefault((cell, store, size, worker.name), []).append(out["us"])
                    finals.setdefault((cell, store, size), set()).add((out["result"], out["len"]))
                    trips.setdefault((cell, store, size, worker.name), []).append(
                        (out["reads"] * 1000 / events, out["writes"] * 1000 / events, out["algorithm"]))
    finally:
        for worker in workers:
            worker.close()
        redis.stop()

    names = [w.name for w in workers]
    rows = []
    for cell, store, size in cells:
        key = (cell, store, size)
        median = {name: statistics.median(times[(*key, name)]) for name in names}
        best = {name: min(times[(*key, name)]) for name in names}
        wall = {name: statistics.median(walls[(*key, name)]) for name in names}
        # store calls per 1,000 updates (median round) and the algorithm the window ran
        calls = {name: (statistics.median(r for r, _, _ in trips[(*key, name)]),
                        statistics.median(w for _, w, _ in trips[(*key, name)]),
                        trips[(*key, name)][-1][2]) for name in names}
        rows.append({"cell": cell, "store": store, "size": size, "us": median, "best_us": best, "wall_us": wall,
                     "calls": calls, "equal": len(finals[key]) == 1,
                     "vs_object": median["object"] / median["compiled"],
                     "vs_pure": median["pure"] / median["compiled"],
                     **({"vs_before": median["before"] / median["compiled"]} if "before" in median else {})})
    command = "python -m benchmarks.stored_windows" + (" --quick" if args.quick else "") + (
        f" --before {args.before}" if args.before else "")
    data = {"command": command, "machine": info, "rounds": rounds, "events": events,
            "workers": {w.name: w.info for w in workers}, "rows": rows}
    stem = "stored_windows_quick" if args.quick else "stored_windows"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(data, indent=1, default=str))
    lines = [f"# Stored windows, compiled vs object AMTA vs pure{' vs before' if args.before else ''} (issue 20)", "",
             f"`{command}`; {rounds} rounds of {events} updates per cell, median (best); "
             f"commit {info['git_commit']}, load {info['loadavg_start']} at the start, {list(map(round, os.getloadavg(), [2] * 3))} at the end", "",
             f"| cell | store | window | {' | '.join(n + ' CPU µs/update' for n in names)} | object / compiled | "
             f"pure / compiled{' | before / compiled' if args.before else ''} | same results | "
             "compiled: algorithm, store reads + writes per 1,000 updates |",
             "|" + "---|" * (len(names) + 7 + bool(args.before))]
    for row in rows:
        reads, writes, algorithm = row["calls"]["compiled"]
        lines.append(f"| {row['cell']} | {row['store']} | {row['size']:,} | "
                     + " | ".join(f"{row['us'][n]:.2f} ({row['best_us'][n]:.2f})" for n in names)
                     + f" | {row['vs_object']:.2f}x | {row['vs_pure']:.2f}x"
                     + (f" | {row['vs_before']:.2f}x" if args.before else "")
                     + f" | {row['equal']} | {algorithm}, {reads:g} + {writes:g} |")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
