"""``mta serve``: the aggregation sidecar (grpc.aio) with health checking, reflection
and a graceful shutdown on SIGTERM (NOT_SERVING, end open streams, finish in-flight
calls, flush every window)."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import time

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

import kvs
from mta.service.reflection import enable_reflection
from mta.service.registry import builtin_registry
from mta.service.security import TokenCheck, Tls
from mta.service.servicer import AggregationServicer
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc

log = logging.getLogger("mta.service")

SERVICE = pb.DESCRIPTOR.services_by_name["Aggregation"].full_name
#: The store when none is given: an embedded sqlite file in the working directory.
DEFAULT_STORE = "mta-windows.db"


async def collect_garbage(interval: float) -> None:
    """Run Python's full (oldest generation) collections every ``interval`` seconds
    instead of whenever the collector decides: one traverses every element the
    windows hold in memory (~65 ms per million), which would otherwise land in the
    middle of queries at random. Younger generations are collected as usual."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 2**31 - 1)  # never automatic
    while True:
        await asyncio.sleep(interval)
        started = time.perf_counter()
        found = gc.collect()
        log.debug("full garbage collection: %d objects freed in %.1f ms", found,
                  (time.perf_counter() - started) * 1e3, extra={"event": "gc"})


async def stop_serving(server: grpc.aio.Server, servicer: AggregationServicer, grace: float) -> None:
    """Refuse new calls, end open streams at once (UNAVAILABLE, "server shutting down"),
    let in-flight calls finish (for at most ``grace`` seconds), then stop.

    ``server.stop(grace)`` alone waits for every call, and a stream never ends on its
    own: one open Watch would hold the server for the whole grace period. So the
    servicer ends its own streams first; once its calls are done, what is left (a
    health Watch, a reflection stream of a client that is still connected) is
    cancelled rather than waited for."""
    servicer.end_streams()
    stopping = asyncio.ensure_future(server.stop(grace))  # new calls are refused from here on
    idle = asyncio.ensure_future(servicer.idle())
    await asyncio.wait([stopping, idle], return_when=asyncio.FIRST_COMPLETED)  # or the grace is over
    idle.cancel()
    await server.stop(None)
    await stopping


async def serve(listen: str, store: str = DEFAULT_STORE, plugins: tuple[str, ...] = (), *,
                max_batch: int = 100_000, max_message_mb: int = 64, grace: float = 10.0,
                token: str | None = None, tls: Tls | None = None, metrics_listen: str | None = None,
                gc_interval: float = 60.0) -> None:
    """Run until SIGTERM or SIGINT; with ``token``, calls must carry it; with ``tls``, only TLS;
    full garbage collections every ``gc_interval`` seconds (0: when Python decides)."""
    registry = builtin_registry()
    for plugin in plugins:
        registry.load_plugin(plugin)
    backend = kvs.connect(store)
    servicer = AggregationServicer(backend, registry, max_batch=max_batch)
    await servicer.load()
    if metrics_listen:
        metrics_port = servicer.metrics.serve(metrics_listen)
        print(f"mta serve: metrics on http://{metrics_listen.rpartition(':')[0] or '0.0.0.0'}:{metrics_port}/metrics",
              flush=True)
    size = max_message_mb * 1024 * 1024
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", size),
                                      ("grpc.max_send_message_length", size)],
                             interceptors=[TokenCheck(token)] if token else None)
    pb_grpc.add_AggregationServicer_to_server(servicer, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    enable_reflection(server, (SERVICE, health.SERVICE_NAME))
    port = server.add_secure_port(listen, tls.credentials()) if tls else server.add_insecure_port(listen)
    if not port:
        raise OSError(f"cannot listen on {listen}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before anyone can know the server is up
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    for name in ("", SERVICE):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("listening", extra={"event": "listening", "address": f"{listen.rsplit(':', 1)[0]}:{port}",
                                 "store": store, "plugins": list(plugins), "windows": len(servicer.windows)})
    security = ("mutual TLS" if tls.client_ca else "TLS") if tls else "plaintext"
    print(f"mta serve: listening on {listen.rsplit(':', 1)[0]}:{port}, store {store}, {security}"
          f"{', token required' if token else ''}", flush=True)

    collector = asyncio.create_task(collect_garbage(gc_interval)) if gc_interval else None
    await stop.wait()
    if collector is not None:
        collector.cancel()
    log.info("shutting down", extra={"event": "shutdown"})
    await health_servicer.enter_graceful_shutdown()
    await stop_serving(server, servicer, grace)
    await servicer.flush_all()
    backend.close()
    print("mta serve: stopped, every window flushed", flush=True)
