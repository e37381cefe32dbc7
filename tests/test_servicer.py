"""The servicer in process, for failures a real server cannot be made to hit on cue."""

from __future__ import annotations

import asyncio

import grpc
import pytest

import kvs
from mta.service.registry import builtin_registry
from mta.service.servicer import AggregationServicer
from mta.v1 import aggregation_pb2 as pb
from test_server import batch, keyed_batch, spec


class Aborted(Exception):
    pass


class Context:
    """What the servicer uses of a grpc.aio context."""

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


def test_a_keyed_batch_cut_short_by_the_store_is_applied_once_per_key_when_retried(tmp_path) -> None:
    async def main() -> None:
        url = str(tmp_path / "w.db")
        servicer = AggregationServicer(kvs.connect(url), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("k", keyed=True, policy=None)), context)
        new_key = servicer._new_key

        def store_down_for_b(name, hosted, key):
            if key == "b":
                raise kvs.StoreError("connection refused")
            return new_key(name, hosted, key)

        servicer._new_key = store_down_for_b
        request = keyed_batch("k", [(1, 1, "a"), (1, 2, "b"), (2, 3, "a")], batch_id="x")
        with pytest.raises(Aborted) as failed:
            await servicer.Insert(request, context)
        assert failed.value.args[0] == grpc.StatusCode.UNAVAILABLE and "connection refused" in failed.value.args[1]
        servicer._new_key = new_key
        retry = await servicer.Insert(request, context)
        assert (retry.inserted, retry.duplicate) == (1, False)  # only "b" still needed the batch
        again = await servicer.Insert(request, context)
        assert (again.inserted, again.duplicate) == (0, True)
        results = (await servicer.Query(pb.QueryRequest(windows=["k"]), context)).results
        assert {r.key: (r.length, r.values["value"]) for r in results} == {"a": (2, 4), "b": (1, 2)}
        # and the same after a restart: every key's checkpoint holds the batch id
        await servicer.flush_all()
        kvs.disconnect(url)  # the first server stops: its windows' leases are released
        reloaded = AggregationServicer(kvs.connect(url), builtin_registry())
        await reloaded.load()
        assert (await reloaded.Insert(request, context)).duplicate
        results = (await reloaded.Query(pb.QueryRequest(windows=["k"]), context)).results
        assert {r.key: r.values["value"] for r in results} == {"a": 4, "b": 2}

    try:
        asyncio.run(main())
    finally:
        kvs.disconnect(str(tmp_path / "w.db"))


def test_a_call_cancelled_mid_batch_leaves_the_batch_whole(tmp_path) -> None:
    from mta.service import servicer as module

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=None)), context)
        n = module.SLICE * 8
        request = pb.InsertRequest(window="w", batch_id="big", columns=pb.Columns(ts=range(n), values=[1.0] * n))
        call = asyncio.ensure_future(servicer.Insert(request, context))
        seen = []
        for _ in range(4):  # the batch is applied in slices, queries get in between
            await asyncio.sleep(0)
            seen.append((await servicer.Query(pb.QueryRequest(windows=["w"]), context)).results[0].length)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        window = servicer.windows["w"].window
        for _ in range(20):
            await asyncio.sleep(0)
        assert set(seen) == {0} and len(window) == n and "big" in window.notes["batches"]
        result = (await servicer.Query(pb.QueryRequest(windows=["w"]), context)).results[0]
        assert (result.length, result.values["value"]) == (n, n)

    asyncio.run(main())


def test_a_batch_in_slices_is_enforced_once_and_evicts_as_one_by_one() -> None:
    from mta.service import servicer as module

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=("time_range", {"width": 100.0}))),
                                    context)
        window = servicer.windows["w"].window
        algorithm = window._algorithm
        searches = []
        enforce = algorithm.enforce
        algorithm.enforce = lambda wsp: searches.append(1) or enforce(wsp)
        n = module.SLICE * 4 + 7
        for first in (0, n):
            request = pb.InsertRequest(window="w", columns=pb.Columns(ts=range(first, first + n), values=[1.0] * n))
            reply = await servicer.Insert(request, context)
            assert reply.inserted == n
            assert reply.evicted == (n - 100 if first == 0 else n)  # the window is (last - 100, last]
        assert len(searches) == 2  # one policy search per batch, not one per slice
        result = (await servicer.Query(pb.QueryRequest(windows=["w"]), context)).results[0]
        assert (result.length, result.values["value"]) == (100, 100.0)
        assert window.oldest_timestamp() == 2 * n - 100

    asyncio.run(main())


async def _until(condition) -> None:
    """Let the event loop run until ``condition()`` holds (no clock: a bounded number of turns)."""
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


class Producer:
    """An Ingest request stream the test feeds; records what the server has read of it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.read: list[str] = []

    def send(self, request: pb.InsertRequest | None) -> None:  # None: half-close
        self.queue.put_nowait(request)

    async def __aiter__(self):
        while (request := await self.queue.get()) is not None:
            self.read.append(request.batch_id)
            yield request


def test_ingest_pipelines_batches_and_acks_each_once_durable_without_waiting_for_the_next() -> None:
    from mta.service import servicer as module

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=None)), context)
        durable = asyncio.Event()  # the store's acknowledgement, released by the test

        async def wait_durable(windows) -> None:
            await durable.wait()

        servicer._durable = wait_durable
        producer = Producer()
        replies = servicer.Ingest(producer, context)
        first = asyncio.ensure_future(replies.__anext__())
        for b in range(3):
            producer.send(batch("w", [(b, 1)], batch_id=f"b{b}"))
        window = servicer.windows["w"].window
        await _until(lambda: len(window) == module.INGEST_PIPELINE)
        # two batches applied ahead of their acks, the third not read before the first ack
        assert producer.read == ["b0", "b1"] and not first.done()
        durable.set()
        assert (await asyncio.wait_for(first, 10)).batch_id == "b0"
        # the last batch's ack comes while the stream stays open and the producer sends nothing
        for b in (1, 2):
            assert (await asyncio.wait_for(replies.__anext__(), 10)).batch_id == f"b{b}"
        assert producer.read == ["b0", "b1", "b2"] and len(window) == 3
        producer.send(batch("w", [(3, 1)], batch_id="b3"))
        assert (await asyncio.wait_for(replies.__anext__(), 10)).batch_id == "b3"
        producer.send(None)
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(replies.__anext__(), 10)

    asyncio.run(main())


def test_shutdown_ends_open_streams_after_what_they_owe() -> None:
    """end_streams: a Watch sends the results queued before, an Ingest acks the batches it
    read; both then end with UNAVAILABLE, and new streams are refused the same way."""
    from mta.service.servicer import SHUTTING_DOWN

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=None)), context)
        watch = servicer.Watch(pb.WatchRequest(window="w"), context)
        assert (await watch.__anext__()).length == 0
        producer = Producer()
        ingest = servicer.Ingest(producer, context)
        producer.send(batch("w", [(0, 1)], batch_id="b0"))
        assert (await asyncio.wait_for(ingest.__anext__(), 10)).batch_id == "b0"
        producer.send(batch("w", [(1, 1)], batch_id="b1"))
        hosted = servicer.windows["w"]
        await _until(lambda: hosted.results[""].length == 2)  # b1 applied, its ack not yet taken
        assert not servicer._idle.is_set()
        servicer.end_streams()
        assert (await asyncio.wait_for(ingest.__anext__(), 10)).batch_id == "b1"  # read, so acked
        with pytest.raises(Aborted) as ended:
            await asyncio.wait_for(ingest.__anext__(), 10)
        assert ended.value.args == (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        assert [(await watch.__anext__()).length for _ in range(2)] == [1, 2]  # queued before
        with pytest.raises(Aborted) as ended:
            await asyncio.wait_for(watch.__anext__(), 10)
        assert ended.value.args == (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        await asyncio.wait_for(servicer.idle(), 10)
        for stream in (servicer.Watch(pb.WatchRequest(window="w"), context), servicer.Ingest(Producer(), context)):
            with pytest.raises(Aborted) as refused:
                await stream.__anext__()
            assert refused.value.args == (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        result = (await servicer.Query(pb.QueryRequest(windows=["w"]), context)).results[0]
        assert (result.length, result.values["value"]) == (2, 2)

    asyncio.run(main())
