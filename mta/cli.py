"""The ``mta`` command line.

    mta demo                 # generated memory telemetry through a 1-hour window
    mta demo --updates 200000 --window 600 --algorithm two_stacks --every 3600
    mta bench exp1_constant_window --quick     # = python -m benchmarks.exp1_constant_window --quick
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path
from typing import Sequence

from mta.algorithms import ALGORITHMS, ORDERED_ALGORITHMS

BENCHMARKS = ("exp1_constant_window", "exp1_instructions", "exp2_bulk_eviction", "table2_stream_analytics", "exp1_2_redis",
              "exp4_memory", "exp5_dimensions", "server_ingest", "server_memory", "server_out_of_order",
              "spark_windows", "spark_streaming")


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_seconds(text: str, *, zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value > 0 or (zero and value == 0)) or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds {'>=' if zero else '>'} 0, "
                                         f"got {text!r}")
    return int(value) if value.is_integer() else value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mta", description="Sliding-window aggregation with the Monoid Tree Aggregator.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    d = sub.add_parser(
        "demo", help="stream generated memory telemetry through a time window",
        description="Stream generated memory-usage telemetry (one reading per second, "
                    "mta.telemetry) through mta.Window with a time-range window, computing "
                    "mean, max, standard deviation and count of the window at once (one Record "
                    "monoid, one window; subtract_on_evict, which evicts by inverse, leaves out the "
                    "max: Max has no inverse). Prints the window's aggregates every K updates and a summary.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    d.add_argument("--updates", type=_positive_int, default=1_000_000,
                   help="number of readings to stream (one per simulated second)")
    d.add_argument("--window", type=_positive_seconds, default=3600, help="window width in seconds")
    d.add_argument("--algorithm", choices=[*ALGORITHMS, *ORDERED_ALGORITHMS], default="amta", help="sliding-window algorithm")
    d.add_argument("--every", type=_positive_int, default=21_600,
                   help="print the window's aggregates every K updates (21600 = 6 simulated hours)")
    d.add_argument("--seed", type=int, default=1, help="telemetry seed")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    where = d.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="URL", default=argparse.SUPPRESS,
                       help="keep the window's levels in a store: a file path, redis://..., "
                            "redis+cluster://... (default: in memory)")
    where.add_argument("--local-redis", action="store_true",
                       help="start a private redis-server (Debian package redis-server) and keep the window there")
    d.set_defaults(subparser=d)

    v = sub.add_parser("serve", help="run the gRPC aggregation server (a sidecar)",
                       description="Hosts named windows over gRPC (service mta.v1.Aggregation), kept in a store, "
                                   "with health checking and reflection; SIGTERM flushes and stops.")
    v.add_argument("--listen", default="127.0.0.1:50051", help="host:port (port 0: any free port)")
    v.add_argument("--store", default=None,
                   help="where windows live: a file path, redis://..., redis+cluster://... "
                        "(default: mta-windows.db in the working directory)")
    v.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE and call its register(registry) (repeatable)")
    v.add_argument("--max-batch", type=_positive_int, default=100_000, help="most updates in one batch")
    v.add_argument("--token-file", type=Path, help="require `authorization: Bearer <token>` with the token in "
                                                   "this file (or in the environment variable MTA_TOKEN)")
    v.add_argument("--tls-cert", type=Path, help="serve TLS with this certificate (PEM)")
    v.add_argument("--tls-key", type=Path, help="and this private key (PEM)")
    v.add_argument("--tls-client-ca", type=Path, help="mutual TLS: clients need a certificate signed by this CA")
    v.add_argument("--metrics-listen", metavar="HOST:PORT", help="serve Prometheus metrics at /metrics here")
    v.add_argument("--log-format", choices=("text", "json"), default="text", help="stderr log lines")
    v.add_argument("--grace", type=functools.partial(_positive_seconds, zero=True), default=10.0, metavar="SECONDS",
                   help="on SIGTERM, how long in-flight calls may take to finish (open streams end at once)")
    v.add_argument("--gc-interval", type=functools.partial(_positive_seconds, zero=True), default=60.0, metavar="SECONDS",
                   help="run Python's full garbage collections on this timer, not mid-query (0: Python decides)")
    v.add_argument("--owner", metavar="NAME",
                   help="this server's name as the writer of its windows (each stored window has one writer); "
                        "a restart with the same name takes them back at once. Give each server its own "
                        "(e.g. the pod name). Without it, a restart after a crash waits for the old leases "
                        "to expire (--lease-ttl)")
    v.add_argument("--lease-ttl", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="how long a window stays reserved for this server after it stops renewing "
                        "(crashed) (default: 10)")
    v.set_defaults(subparser=v)

    pl = sub.add_parser("pipeline", help="the example Spark job: per-host telemetry windows (the main job)",
                        description="Runs spark_integration.jobs.telemetry_pipeline; its options follow.",
                        add_help=False)
    pl.add_argument("pipeline_args", nargs=argparse.REMAINDER, help="options of the job (--help lists them)")
    pl.set_defaults(subparser=pl)

    b = sub.add_parser("bench", help="run a benchmark script (from a source checkout)",
                       description="Runs `python -m benchmarks.NAME ARGS...` from the repository root "
                                   "(the benchmarks are not installed with the package).")
    b.add_argument("name", choices=BENCHMARKS, help="benchmark to run")
    b.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments for the script, e.g. --quick")
    b.set_defaults(subparser=b)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["pipeline"]:  # the job parses its own options
        from spark_integration.jobs.telemetry_pipeline import main as pipeline

        return pipeline(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args, args.subparser)
    if args.command == "serve":
        return serve(args, args.subparser)
    return bench(args, args.subparser)


def serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import asyncio

    import kvs
    from kvs import StoreError
    from mta.service import logs
    from mta.service.registry import RegistryError
    from mta.service.server import DEFAULT_STORE, serve as run

    from mta.service.security import Tls

    logs.setup(args.log_format)
    token = args.token_file.read_text().strip() if args.token_file else os.environ.get("MTA_TOKEN") or None
    if bool(args.tls_cert) != bool(args.tls_key) or (args.tls_client_ca and not args.tls_cert):
        parser.error("--tls-cert and --tls-key go together (and --tls-client-ca needs them)")
    tls = Tls(args.tls_cert, args.tls_key, args.tls_client_ca) if args.tls_cert else None
    try:
        leases = {k: v for k, v in (("owner", args.owner), ("lease_ttl", args.lease_ttl)) if v is not None}
        if leases:  # the server's kvs.connect(store) then returns this backend
            kvs.connect(args.store or DEFAULT_STORE, **leases)
        asyncio.run(run(args.listen, args.store or DEFAULT_STORE, tuple(args.plugin), max_batch=args.max_batch,
                        token=token, tls=tls, metrics_listen=args.metrics_listen,
                        gc_interval=args.gc_interval, grace=args.grace))
    except (RegistryError, StoreError, OSError, ValueError) as error:
        parser.error(str(error))
    return 0


# --------------------------------------------------------------------------- demo

def _clock(seconds: int) -> str:
    """Simulated time as 'day D HH:MM:SS'."""
    days, rest = divmod(int(seconds), 86_400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"day {days:>3} {h:02d}:{m:02d}:{s:02d}"


def _fmt(value: object) -> str:
    return "–" if value is None else f"{value:,.1f}"


def _line(ts: int, n: int, result: dict) -> str:
    return (f"{_clock(ts)}  window {n:>7,} readings  mean {_fmt(result['mean']):>9} MB  "
            f"max {_fmt(result.get('max')):>9} MB  stddev {_fmt(result['stddev']):>7} MB")


def demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not args.local_redis:
        return _demo(args, parser, getattr(args, "store", None))
    from kvs.servers import RedisProcess

    with RedisProcess() as server:
        return _demo(args, parser, server.url)


def _demo(args: argparse.Namespace, parser: argparse.ArgumentParser, store: str | None) -> int:
    from tqdm import tqdm

    from kvs import StoreError
    from mta import Count, Max, Mean, Record, StdDev, TimeRange, Window
    from mta.telemetry import readings

    fields = {"mean": Mean(), "max": Max(), "stddev": StdDev(), "count": Count()}
    if args.algorithm in ALGORITHMS:
        try:
            ALGORITHMS[args.algorithm].check_monoid(Record(**fields))
        except TypeError:  # an algorithm that evicts by inverse (subtract_on_evict): Max has none
            del fields["max"]
    monoid = Record(**fields)
    try:
        window = Window(monoid, TimeRange(args.window), algorithm=args.algorithm, store=store)
    except (TypeError, ValueError, StoreError) as error:
        parser.error(f"--algorithm {args.algorithm}{f' --store {store}' if store else ''}: {error}")
    where = f", window {window.id} in {store}" if store else ""
    print(f"mta demo: {args.updates:,} memory readings (1/s, seed {args.seed}) through a {args.window} s "
          f"time window, algorithm {window.algorithm}{where}, monoid {monoid!r}", flush=True)

    stream = readings(args.updates, seed=args.seed)
    insert, query = window.insert, window.query
    every = args.every
    done = 0
    ts = 0
    busy_ns = 0
    bar = tqdm(total=args.updates, unit="upd", unit_scale=True, disable=args.no_progress or None,
               mininterval=0.5, smoothing=0.1, file=sys.stderr)
    started = time.perf_counter()
    try:
        while done < args.updates:
            # process up to the next report point in one batch (the progress bar moves per batch)
            batch = list(islice(stream, min(every - done % every, 8192)))
            if not batch:
                break
            t0 = time.perf_counter_ns()
            for ts, value in batch:
                insert(ts, value)
            busy_ns += time.perf_counter_ns() - t0
            done += len(batch)
            bar.update(len(batch))
            if done % every == 0:
                bar.write(_line(ts, len(window), query()))
    except KeyboardInterrupt:
        bar.close()
        print(f"\ninterrupted after {done:,} updates", file=sys.stderr)
        return 130
    bar.close()
    elapsed = time.perf_counter() - started
    result = query()
    print()
    print(f"summary: {done:,} updates in {elapsed:.1f} s = {done / elapsed:,.0f} updates/s "
          f"(window work alone: {done / (busy_ns / 1e9) if busy_ns else 0:,.0f} updates/s, "
          f"{busy_ns / done if done else 0:,.0f} ns/update)")
    print(f"  simulated time {_clock(ts)}; final window: {len(window):,} readings "
          f"(count {result['count']:,}) over the last {args.window} s")
    print(f"  mean {_fmt(result['mean'])} MB, max {_fmt(result.get('max'))} MB, stddev {_fmt(result['stddev'])} MB")
    if store:
        window.close()
        trips = window.backend.round_trips
        print(f"  store {store}: window {window.id} flushed; {trips.writes:,} commits, {trips.reads:,} reads")
    return 0


# --------------------------------------------------------------------------- bench

def bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / f"{args.name}.py").is_file():
        parser.error(f"benchmarks/{args.name}.py not found under {root}: `mta bench` needs a source checkout")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", f"benchmarks.{args.name}", *args.bench_args]
    return subprocess.call(cmd, cwd=root, env=env)


if __name__ == "__main__":
    sys.exit(main())
