"""Out-of-order ingest through the gRPC server (issue #16): a "fiba" window against an
"amta" window, in-order and out-of-order batches.

A `mta serve` child process (memory store, then a local Redis) gets batches of 1,000
updates (`Sum`, `TimeRange(3600)`, one update per second of event time) through the
`Ingest` stream as Columns, into one window per setup:

- amta, in order (the MTAs take nothing else);
- fiba, in order;
- fiba, each batch shuffled (an update is at most 999 s from its place);
- fiba, every update delayed by 0-3,000 s at random (arrival order is the undelayed
  time: an update lands up to 3,000 s, most of the window, behind the newest).

No update is late (the delays stay under the window's width), so every batch is taken.
Every batch is acknowledged once durable: the Redis numbers include the commits.

    python -m benchmarks.server_out_of_order            # ~1.5 min
    python -m benchmarks.server_out_of_order --quick    # smoke run
"""

from __future__ import annotations

import random
import sys
import time
import uuid
from typing import Any

import grpc

from benchmarks import common
from benchmarks.server_ingest import spec, start_server
from kvs.servers import RedisProcess
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc

BATCH = 1000
#: Largest delay of the "delayed" order, in seconds of event time (the window is 3,600).
DELAY = 3000
#: (label, algorithm, order) of each setup; the first is the baseline of the ratios.
SETUPS = [("amta, in order", "amta", "in order"), ("fiba, in order", "fiba", "in order"),
          ("fiba, batches shuffled", "fiba", "shuffled"), (f"fiba, delays 0-{DELAY} s", "fiba", "delayed")]


def timestamps(order: str, n: int, seed: int) -> list[int]:
    """``n`` timestamps in arrival order: 0..n-1 in order, shuffled within each batch, or
    each one delayed by a random 0..DELAY seconds."""
    rng = random.Random(seed)
    if order == "in order":
        return list(range(n))
    if order == "shuffled":
        out = []
        for start in range(0, n, BATCH):
            chunk = list(range(start, min(n, start + BATCH)))
            rng.shuffle(chunk)
            out.extend(chunk)
        return out
    return [max(0, t - rng.randint(0, DELAY)) for t in range(n)]


def ingest(stub: pb_grpc.AggregationStub, algorithm: str, order: str, batches: int, seed: int) -> dict[str, Any]:
    """Create a window, stream ``batches`` batches into it; updates/s and the final result."""
    name = f"ooo-{uuid.uuid4().hex[:8]}"  # rounds share one Redis
    window = spec(name)
    window.algorithm = algorithm
    stub.CreateWindow(pb.CreateWindowRequest(spec=window))
    times = timestamps(order, batches * BATCH, seed)
    work = [pb.InsertRequest(window=name, batch_id=f"{name}-{b}",
                             columns=pb.Columns(ts=times[b * BATCH:(b + 1) * BATCH], values=[1.0] * BATCH))
            for b in range(batches)]
    t0 = time.perf_counter()
    acked = sum(r.inserted for r in stub.Ingest(iter(work)))
    elapsed = time.perf_counter() - t0
    length = stub.Query(pb.QueryRequest(windows=[name])).results[0].length
    stub.DeleteWindow(pb.DeleteWindowRequest(name=name))
    return {"updates": acked, "seconds": elapsed, "updates_per_s": acked / elapsed, "length": length}


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--batches", type=int, default=None, help="batches of 1000 per run (full: 300, quick: 8)")
    p.add_argument("--repeat", type=int, default=None, help="rounds over every setup (full: 3, quick: 1)")
    args = p.parse_args(argv)
    batches = args.batches or (8 if args.quick else 300)
    repeat = args.repeat or (1 if args.quick else 3)
    run_ = common.Run("server_out_of_order", args, {"batches": batches, "batch_size": BATCH, "repeat": repeat,
                                                    "policy": "time_range 3600", "delay": DELAY})
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with RedisProcess() as redis_server:
        for store in ("memory://", redis_server.url):
            kind = store.split(":")[0]
            proc, address = start_server(store)
            try:
                channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)])
                stub = pb_grpc.AggregationStub(channel)
                for round_ in range(repeat):  # rounds, so that the machine's slow spells hit every setup alike
                    for label, algorithm, order in SETUPS:
                        result = ingest(stub, algorithm, order, batches, seed=round_)
                        result.update(store=kind, setup=label)
                        run_.log(f"{kind:>6} {label:>24}: {result['updates_per_s']:>10,.0f} updates/s "
                                 f"(window of {result['length']:,})")
                        runs.setdefault((kind, label), []).append(result)
                channel.close()
            finally:
                proc.terminate()
                proc.wait(timeout=60)
    rows = []
    for (kind, label), group in runs.items():  # the median round by throughput
        ordered = sorted(group, key=lambda r: r["updates_per_s"])
        row = dict(ordered[len(ordered) // 2])
        row["range"] = (ordered[0]["updates_per_s"], ordered[-1]["updates_per_s"])
        row["vs_amta"] = row["updates_per_s"] / next(
            sorted(g, key=lambda r: r["updates_per_s"])[len(g) // 2]["updates_per_s"]
            for (k, lab), g in runs.items() if k == kind and lab == SETUPS[0][0])
        rows.append(row)
    run_.table(f"Ingest into one window through the gRPC server (Ingest stream, columns, batches of {BATCH}, "
               f"Sum, TimeRange(3600), acknowledged when durable; median of {repeat} rounds)",
               ["store", "window, order", "updates per run", "updates/s", "range over rounds", "vs amta in order"],
               [[r["store"], r["setup"], r["updates"], r["updates_per_s"],
                 "{:,.0f}-{:,.0f}".format(*r["range"]), r["vs_amta"]] for r in rows])
    run_.data["results"] = rows
    run_.data["runs"] = [r for group in runs.values() for r in group]
    run_.finish(["store", "setup", "updates", "seconds", "updates_per_s", "vs_amta"],
                [[r["store"], r["setup"], r["updates"], r["seconds"], r["updates_per_s"], r["vs_amta"]]
                 for r in rows])
    if not args.no_plot:
        common.plot_bars(run_.path(".png"), [label for label, _, _ in SETUPS],
                         {kind: [r["updates_per_s"] for r in rows if r["store"] == kind]
                          for kind in dict.fromkeys(r["store"] for r in rows)},
                         title="mta serve: in-order and out-of-order ingest (batches of 1000)",
                         ylabel="updates/s", logy=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
