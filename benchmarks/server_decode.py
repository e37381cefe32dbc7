"""The server's per-batch work in process (issue 20): a batch in columns read into numpy
arrays and checked in numpy, against the same batch read into lists and checked in C loops.

What the gRPC server does with each InsertRequest of an unkeyed window, minus gRPC and
asyncio: ``read_batch`` (the columns decoded), ``Window.check`` (timestamps in order,
values lifted), ``insert_slices`` in slices of the server's ``SLICE``, and the commit that
notes the batch id. Batches of 1,000 updates (``Sum``, ``TimeRange(3600)``, one update per
second, as in ``server_ingest``), into a window on the memory store. The two ways alternate
within every round on windows of their own, which must end equal; the cells are the
decode + check alone, and the whole path.

    python -m benchmarks.server_decode            # ~20 s
    python -m benchmarks.server_decode --quick    # smoke run
"""

from __future__ import annotations

import time
from typing import Any

import kvs
from benchmarks.common import Run, gc_paused, median, num, parser, ratio
from mta import Sum, TimeRange, Window
from mta.service.requests import read_batch
from mta.service.servicer import SLICE, AggregationServicer
from mta.v1 import aggregation_pb2 as pb

NAME = "server_decode"
WAYS = {"arrays": True, "lists": False}


def requests(start: int, batches: int, size: int) -> list[pb.InsertRequest]:
    return [pb.InsertRequest(window="w", batch_id=f"w-{start + b}", columns=pb.Columns(
        ts=range((start + b) * size, (start + b + 1) * size), values=[(i % 7) * 0.5 for i in range(size)]))
        for b in range(batches)]


def decode_and_check(window: Window, batch: list[pb.InsertRequest], arrays: bool) -> float:
    """ns per update of read_batch + Window.check (the window does not change)."""
    started = time.perf_counter_ns()
    for request in batch:
        _, ts, values, _ = read_batch(request, window.monoid, False, "window 'w'", arrays=arrays)
        window.check(ts, values)
    return (time.perf_counter_ns() - started) / (len(batch) * len(batch[0].columns.ts))


def ingest(window: Window, batch: list[pb.InsertRequest], arrays: bool) -> float:
    """ns per update of the server's whole per-batch path."""
    started = time.perf_counter_ns()
    for request in batch:
        _, ts, values, _ = read_batch(request, window.monoid, False, "window 'w'", arrays=arrays)
        for _ in window.insert_slices(window.check(ts, values), SLICE):
            pass
        AggregationServicer._commit(window, request.batch_id)
    return (time.perf_counter_ns() - started) / (len(batch) * len(batch[0].columns.ts))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    args = p.parse_args(argv)
    params = {"batch_size": 1000, "batches": 20 if args.quick else 300, "rounds": 3 if args.quick else 7}
    run = Run(NAME, args, params)
    backend = kvs.connect("memory://")
    windows = {way: Window(Sum(), TimeRange(3600), store=backend, window_id=way) for way in WAYS}
    times: dict[str, dict[str, list[float]]] = {cell: {way: [] for way in WAYS} for cell in ("decode", "ingest")}
    sent = 0
    with gc_paused():
        for r in range(params["rounds"]):
            batch = requests(sent, params["batches"], params["batch_size"])
            sent += params["batches"]
            order = list(WAYS) if r % 2 == 0 else list(reversed(WAYS))
            for way in order:
                times["decode"][way].append(decode_and_check(windows[way], batch, WAYS[way]))
            for way in order:
                times["ingest"][way].append(ingest(windows[way], batch, WAYS[way]))
    first, second = (windows[way] for way in WAYS)
    equal = repr(list(first)) == repr(list(second)) and first.query() == second.query()
    cells = {cell: {way: median(ts) for way, ts in by_way.items()} for cell, by_way in times.items()}
    rows = [[cell, num(c["arrays"]), num(c["lists"]), f"{ratio(c['lists'], c['arrays']):.2f}x"]
            for cell, c in cells.items()]
    run.table(f"The server's per-batch path in process, batches of {params['batch_size']}, "
              f"median of {params['rounds']} rounds (ns per update)",
              ["cell", "columns as arrays", "columns as lists", "lists / arrays"], rows,
              f"decode: read_batch + Window.check; ingest: the whole path (+ insert_slices in slices of {SLICE}, "
              f"the commit), into a window on the memory store. Windows equal at the end: {equal}.")
    run.data.update({"cells": cells, "rounds": times, "equal": equal})
    run.finish(["cell", "arrays_ns", "lists_ns"], [[cell, c["arrays"], c["lists"]] for cell, c in cells.items()])
    run.write_markdown()
    return run.data


if __name__ == "__main__":
    main()
