"""`mta serve` and the one-writer rule: real server processes on a private Redis.

A second server on the same store leaves the first one's windows alone; a server
whose window another writer took over answers FAILED_PRECONDITION and lands nothing;
a server restarted after a crash reclaims its windows at once with a stable
``--owner``, and without one once the dead process's leases expire.
"""

from __future__ import annotations

import signal

import grpc
import pytest

import kvs
from kvs.servers import RedisProcess
from mta import TimeRange, Window
from mta.monoid import Sum
from mta.v1 import aggregation_pb2 as pb
from test_server import Server, batch, by_key, error_of, keyed_batch, spec


@pytest.fixture
def redis_store():
    with RedisProcess() as server:
        yield server.url
        kvs.disconnect(server.url)


def value(stub, name: str) -> float:
    return stub.Query(pb.QueryRequest(windows=[name])).results[0].values["value"]


def test_a_second_server_on_the_same_store_leaves_the_first_ones_windows_alone(redis_store) -> None:
    first = Server(redis_store, "--lease-ttl", "3", owner=None)
    try:
        first.stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w")))
        first.stub.Insert(batch("w", [(1, 5)]))
        first.stub.CreateWindow(pb.CreateWindowRequest(spec=spec("k", keyed=True)))
        first.stub.Insert(keyed_batch("k", [(1, 2, "a"), (1, 3, "b")]))
        second = Server(redis_store, "--lease-ttl", "3", owner=None)  # waits out one lease, then leaves "w" to its writer
        try:
            assert not second.stub.ListWindows(pb.ListWindowsRequest()).windows
            assert error_of(second.stub.Insert, batch("w", [(2, 1)])).code() == grpc.StatusCode.NOT_FOUND
            exists = error_of(second.stub.CreateWindow, pb.CreateWindowRequest(spec=spec("w")))
            assert exists.code() == grpc.StatusCode.ALREADY_EXISTS
        finally:
            second.stop()
        first.stub.Insert(batch("w", [(3, 7)]))
        assert value(first.stub, "w") == 12
        first.stub.Insert(keyed_batch("k", [(2, 10, "a")]))  # its keys were left alone too
        assert by_key(first.stub.Query(pb.QueryRequest(windows=["k"])).results) == {"a": (2, 12), "b": (1, 3)}
    finally:
        first.stop()


def test_a_server_whose_window_was_taken_over_refuses_batches_and_lands_none(redis_store) -> None:
    server = Server(redis_store)
    try:
        server.stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w")))
        server.stub.Insert(batch("w", [(1, 5)]))
        taker = Window.open(redis_store, "w", Sum(), TimeRange(10.0), take_over=True)
        taker.insert(2, 100)
        taker.flush()
        refused = error_of(server.stub.Insert, batch("w", [(3, 1)]))
        assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "'w'" in refused.details() and "another writer took it over" in refused.details()
        taker.close()
        assert Window.open(redis_store, "w", Sum(), TimeRange(10.0)).query() == 105  # nothing of the server's
    finally:
        server.stop()


def test_a_server_restarted_after_a_crash_reclaims_its_windows(redis_store) -> None:
    """With ``--owner``, at once: a writer of the same name takes the lease back; another
    name must wait for the lease (here 600 s) or take over."""
    import redis

    server = Server(redis_store, "--lease-ttl", "600", owner="sidecar-1")
    try:
        server.stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w")))
        server.stub.Insert(batch("w", [(1, 5)], batch_id="b1"))
        assert redis.Redis.from_url(redis_store).get("mta:{w}:lease") == b"600000:sidecar-1"
        server.stop(signal.SIGKILL)
        with pytest.raises(kvs.WindowBusy, match="sidecar-1"):
            Window.open(kvs.RedisBackend(redis_store), "w", Sum(), TimeRange(10.0))
        server.start()  # its load() opens "w" at once (a wait would take 600 s)
        assert value(server.stub, "w") == 5
        assert server.stub.Insert(batch("w", [(1, 5)], batch_id="b1")).duplicate
        server.stub.Insert(batch("w", [(2, 1)]))
        assert value(server.stub, "w") == 6
    finally:
        server.stop()


def test_without_an_owner_a_restart_after_a_crash_waits_for_the_old_leases(redis_store) -> None:
    server = Server(redis_store, "--lease-ttl", "1", owner=None)
    try:
        server.stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w")))
        server.stub.Insert(batch("w", [(1, 5)]))
        server.restart(signal.SIGKILL)
        assert value(server.stub, "w") == 5
        server.stub.Insert(batch("w", [(2, 1)]))
        assert value(server.stub, "w") == 6
    finally:
        server.stop()
