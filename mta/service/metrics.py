"""Prometheus metrics of the server: requests, updates, evictions, latency, store round trips."""

from __future__ import annotations

from typing import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

import kvs


class _RoundTrips(Collector):
    """Reads the backend's own counters at scrape time."""

    def __init__(self, backend: kvs.Backend) -> None:
        self.backend = backend

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily("mta_store_round_trips", "Round trips to the window store", labels=["kind"])
        family.add_metric(["read"], self.backend.round_trips.reads)
        family.add_metric(["write"], self.backend.round_trips.writes)
        yield family


class Metrics:
    def __init__(self, backend: kvs.Backend) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("mta_requests", "RPCs handled", ["method", "code"], registry=self.registry)
        self.latency = Histogram("mta_request_seconds", "RPC latency", ["method"], registry=self.registry,
                                 buckets=(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10))
        self.updates = Counter("mta_updates", "Updates inserted", registry=self.registry)
        self.evictions = Counter("mta_evictions", "Updates evicted", registry=self.registry)
        self.registry.register(_RoundTrips(backend))

    def serve(self, listen: str) -> int:
        """Expose ``/metrics`` over HTTP on ``host:port``; returns the port."""
        host, _, port = listen.rpartition(":")
        server, _thread = start_http_server(int(port), addr=host or "0.0.0.0", registry=self.registry)
        return server.server_port
