"""The sidecar's memory with many windows on the Redis store (issue #4).

A `mta serve` child process on a local Redis hosts W windows (`Sum`, `MaxSize(n)`).
Windows are filled through the Ingest stream (batches in columns, round robin)
doubling n at each stage; after each stage the server's RSS (``VmRSS``) and
Redis' ``used_memory`` are read. The levels live in Redis, so the server's
memory per window should grow with log n, not n: it is the buffers and per-level caches.

The default plan is a quick stand-in for the issue's case: 1000 windows up to 2^12
and 10 windows up to 2^20, with an estimate for 1000 x 2^20 (the server's empty RSS
plus 1000 times the per-window memory at 2^20). The issue's case itself (2^30
updates, ~11 GB in Redis) is one series, ~85 min here:
``--windows 1000 --exponents 16 18 20``.

    python -m benchmarks.server_memory            # ~3 min
    python -m benchmarks.server_memory --quick    # smoke run
    python -m benchmarks.server_memory --windows 1000 --exponents 13 15 17   # one series (~25 min)
"""

from __future__ import annotations

import sys
from typing import Any

import grpc
import redis

from benchmarks import common
from benchmarks.server_ingest import start_server
from kvs.servers import RedisProcess
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc

BATCH = 1000
#: In-memory Amortized MTA, bytes per element of a Sum window (exp4_memory, BENCHMARKS.md).
IN_MEMORY_BYTES_PER_ELEMENT = 34.7


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def spec(name: str, n: int) -> pb.WindowSpec:
    out = pb.WindowSpec(name=name, monoid=pb.Component(name="sum"))
    out.policy.name = "max_size"
    out.policy.params["n"].int_value = n
    return out


def fill(stub: pb_grpc.AggregationStub, names: list[str], start: int, stop: int) -> int:
    """Updates ``start`` .. ``stop`` - 1 (as timestamps) into every window, round robin."""
    def batches() -> Any:
        for low in range(start, stop, BATCH):
            high = min(stop, low + BATCH)
            for name in names:
                yield pb.InsertRequest(window=name, batch_id=f"{name}-{low}",
                                       columns=pb.Columns(ts=range(low, high), values=[1.0] * (high - low)))
    return sum(reply.inserted for reply in stub.Ingest(batches()))


def series(redis_url: str, windows: int, sizes: list[int], run_: common.Run) -> list[dict[str, Any]]:
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    proc, address = start_server(redis_url)
    rows = []
    try:
        channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)])
        stub = pb_grpc.AggregationStub(channel)
        started = rss_mib(proc.pid)
        names = [f"m{i}" for i in range(windows)]
        for name in names:
            stub.CreateWindow(pb.CreateWindowRequest(spec=spec(name, sizes[-1])))
        empty = rss_mib(proc.pid)
        filled = 0
        for n in sizes:
            inserted = fill(stub, names, filled, n)
            assert inserted == windows * (n - filled), (inserted, windows, n, filled)
            filled = n
            lengths = {r.length for r in stub.Query(pb.QueryRequest()).results}
            assert lengths == {n}, lengths
            rss = rss_mib(proc.pid)
            row = {"windows": windows, "n": n, "server_start_mib": started, "server_empty_windows_mib": empty,
                   "server_rss_mib": rss, "per_window_kib": (rss - started) * 1024 / windows,
                   "redis_used_mib": client.info("memory")["used_memory"] / 2**20,
                   "in_memory_estimate_mib": windows * n * IN_MEMORY_BYTES_PER_ELEMENT / 2**20}
            run_.log(f"{windows:>5} windows of {n:>8}: server {rss:7.1f} MiB "
                     f"({row['per_window_kib']:7.1f} KiB/window), Redis {row['redis_used_mib']:8.1f} MiB")
            rows.append(row)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=120)
        client.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--windows", type=int, help="one series of this many windows instead (with --exponents)")
    p.add_argument("--exponents", type=int, nargs="+", help="its sizes, as powers of two (e.g. 13 15 17)")
    args = p.parse_args(argv)
    if (args.windows is None) != (args.exponents is None):
        p.error("--windows and --exponents go together")
    plan = [(20, [2**6, 2**8]), (2, [2**10, 2**12])] if args.quick else \
        [(1000, [2**8, 2**10, 2**12]), (10, [2**14, 2**16, 2**18, 2**20])]
    if args.windows is not None:
        plan = [(args.windows, [2**e for e in sorted(args.exponents)])]
    run_ = common.Run("server_memory", args, {"plan": plan, "batch": BATCH})
    rows = []
    with RedisProcess() as redis_server:
        for windows, sizes in plan:
            rows += series(redis_server.url, windows, sizes, run_)
    run_.table("Sidecar memory, windows on Redis (Sum, MaxSize(n); RSS of the server process)",
               ["windows", "n per window", "server RSS MiB", "above start, KiB per window", "Redis used MiB",
                "the same windows in memory, MiB (34.7 B/element)", "server / in-memory"],
               [[r["windows"], r["n"], r["server_rss_mib"], r["per_window_kib"], r["redis_used_mib"],
                 r["in_memory_estimate_mib"], r["server_rss_mib"] / r["in_memory_estimate_mib"]] for r in rows])
    big = [r for r in rows if r["windows"] == plan[-1][0]]
    largest, smallest = big[-1], big[0]
    estimate = largest["server_start_mib"] + 1000 * largest["per_window_kib"] / 1024
    run_.table("1000 windows of 2^20 (upper-bound estimate: fixed costs are shared out over few windows)", ["quantity", "value"], [
        ["per-window memory at the largest n / at the smallest n of its series",
         f"{largest['per_window_kib'] / smallest['per_window_kib']:.2f}"],
        [f"estimated server RSS for 1000 windows of {largest['n']:,}",
         f"{estimate:,.0f} MiB"],
        ["the same in memory (34.7 B/element)", f"{1000 * largest['n'] * IN_MEMORY_BYTES_PER_ELEMENT / 2**30:,.1f} GiB"],
    ])
    run_.data["results"] = rows
    run_.finish(list(rows[0]), [list(r.values()) for r in rows])
    if not args.no_plot:
        lines: dict[str, tuple[list[float], list[float]]] = {}
        for r in rows:
            xs, ys = lines.setdefault(f"server, {r['windows']} windows (KiB per window)", ([], []))
            xs.append(r["n"])
            ys.append(r["per_window_kib"])
            xs, ys = lines.setdefault("in memory, per window (KiB, 34.7 B/element)", ([], []))
            xs.append(r["n"])
            ys.append(r["n"] * IN_MEMORY_BYTES_PER_ELEMENT / 1024)
        common.plot_lines(run_.path(".png"), lines, title="mta serve on Redis: memory per window",
                          xlabel="elements per window", ylabel="KiB per window")
    return 0


if __name__ == "__main__":
    sys.exit(main())
