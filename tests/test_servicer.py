"""The servicer in process, for failures a real server cannot be made to hit on cue."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kvs
from mta.service.registry import builtin_registry
from mta.monoid import Record
from mta.service.servicer import AggregationServicer
from mta.v1 import aggregation_pb2 as pb
from conftest import hsettings
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
        # a policy of ours: searched on counts and times (the typed core: on its timestamp column)
        name = "condemned_in_order" if hasattr(algorithm, "condemned_in_order") else "enforce"
        search = getattr(algorithm, name)
        setattr(algorithm, name, lambda *args: searches.append(1) or search(*args))
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

# -- every refusal names the field by its path in the request, and changes nothing -----------

def _params(**params) -> dict[str, pb.Param]:
    field = {int: "int_value", float: "float_value", str: "string_value", bool: "bool_value"}
    return {k: pb.Param(**{field[type(v)]: v}) if v is not None else pb.Param() for k, v in params.items()}


def _dims(*pairs, **monoid_params) -> pb.WindowSpec:
    return pb.WindowSpec(name="x", dimensions=[pb.Dimension(name=n, monoid=pb.Component(name=m, params=monoid_params))
                                               for n, m in pairs])


def _create(spec_: pb.WindowSpec, **kw) -> tuple[str, pb.CreateWindowRequest]:
    return "CreateWindow", pb.CreateWindowRequest(spec=spec_, **kw)


def _rows(window: str, *updates: pb.Update) -> tuple[str, pb.InsertRequest]:
    return "Insert", pb.InsertRequest(window=window, updates=updates)


def _cols(window: str, **columns) -> tuple[str, pb.InsertRequest]:
    return "Insert", pb.InsertRequest(window=window, columns=pb.Columns(**columns))


NAN, INF = float("nan"), float("inf")
AVG, PEAK = pb.Doubles(values=[1, 2]), pb.Doubles(values=[1, NAN])
BAD_REQUESTS = [
    # window specs: the component, the parameter (a JSON string in brackets), the dimension
    (_create(spec("x", monoid="median")), "INVALID_ARGUMENT", "spec.monoid.name"),
    (_create(spec("x", policy=("nope", {}))), "INVALID_ARGUMENT", "spec.policy.name"),
    (_create(spec("x", policy=("max_size", {"n": "3"}))), "INVALID_ARGUMENT", 'spec.policy.params["n"]'),
    (_create(spec("x", policy=("max_size", {}))), "INVALID_ARGUMENT", 'spec.policy.params["n"]'),
    (_create(spec("x", policy=("max_size", {"n": -1}))), "INVALID_ARGUMENT", 'spec.policy.params["n"]'),
    (_create(spec("x", policy=("time_range", {"width": NAN}))), "INVALID_ARGUMENT", 'spec.policy.params["width"]'),
    (_create(spec("x", policy=("time_range", {"width": 1.0, 'we"ird': 1}))), "INVALID_ARGUMENT",
     'spec.policy.params["we\\"ird"]'),
    (_create(pb.WindowSpec(name="x", monoid=pb.Component(name="sum"),
                           policy=pb.Component(name="time_range", params=_params(width=None)))),
     "INVALID_ARGUMENT", 'spec.policy.params["width"]'),
    (_create(_dims(("a", "sum"), ("b", "median"))), "INVALID_ARGUMENT", "spec.dimensions[1].monoid.name"),
    (_create(_dims(("a", "sum"), ("b", "variance"), ddof=pb.Param(int_value=1))), "INVALID_ARGUMENT",
     'spec.dimensions[0].monoid.params["ddof"]'),  # sum has no ddof: the first dimension is at fault
    (_create(_dims(("a", "variance"), ("b", "stddev"), ddof=pb.Param(int_value=2))), "INVALID_ARGUMENT",
     'spec.dimensions[0].monoid.params["ddof"]'),  # Variance(ddof=2) refuses its one parameter
    (_create(_dims(("a", "variance"), ("b", "stddev"), ddof=pb.Param(string_value="1"))), "INVALID_ARGUMENT",
     'spec.dimensions[0].monoid.params["ddof"]'),
    (_create(_dims(("a", "sum"), ("a", "max"))), "INVALID_ARGUMENT", "spec.dimensions[1].name"),
    (_create(_dims(("a", "sum"), ("_b", "max"))), "INVALID_ARGUMENT", "spec.dimensions[1].name"),
    (_create(pb.WindowSpec(name="x", monoid=pb.Component(name="sum"), dimensions=_dims(("a", "max")).dimensions)),
     "INVALID_ARGUMENT", "spec.monoid, spec.dimensions"),
    (_create(pb.WindowSpec(name="x")), "INVALID_ARGUMENT", "spec.monoid"),
    (_create(spec("x", algorithm="two_stacks")), "INVALID_ARGUMENT", "spec.algorithm"),
    (_create(spec("a b")), "INVALID_ARGUMENT", "spec.name"),
    (_create(spec("w")), "ALREADY_EXISTS", "spec.name"),
    (_create(spec("w", policy=None), if_not_exists=True), "ALREADY_EXISTS", "spec.name"),
    # updates as messages: the timestamp, the value, the dimension, the payload
    (_rows("w", pb.Update(ts=6, value=1), pb.Update(ts=4, value=1)), "INVALID_ARGUMENT", "updates[1].ts"),
    (_rows("w", pb.Update(ts_float=NAN, value=1)), "INVALID_ARGUMENT", "updates[0].ts_float"),
    (_rows("w", pb.Update(ts=6, value=1), pb.Update(ts=7, value=NAN)), "INVALID_ARGUMENT", "updates[1].value"),
    (_rows("w", pb.Update(value=1)), "INVALID_ARGUMENT", "updates[0].ts"),
    (_rows("w", pb.Update(ts=6, dimensions={"a": 1})), "INVALID_ARGUMENT", "updates[0].dimensions"),
    (_rows("w", pb.Update(ts=6, value=2), pb.Update(ts=7, value=0, dimensions={"a": 1})), "INVALID_ARGUMENT",
     "updates[1].dimensions"),
    (_rows("w", pb.Update(ts=6, payload=b"\xc1")), "INVALID_ARGUMENT", "updates[0].payload"),
    (_rows("w", pb.Update(ts=6, payload=b"\xa3abc")), "INVALID_ARGUMENT", "updates[0].payload"),  # "abc"
    (_rows("d", pb.Update(ts=6, dimensions={"avg": 1, "peak": 1}), pb.Update(ts=7, dimensions={"avg": 1, "peak": NAN})),
     "INVALID_ARGUMENT", 'updates[1].dimensions["peak"]'),
    (_rows("d", pb.Update(ts=6, dimensions={"avg": 1})), "INVALID_ARGUMENT", "updates[0].dimensions"),
    (_rows("d", pb.Update(ts=6, dimensions={"avg": 1, "peak": 1, "zz": 1})), "INVALID_ARGUMENT",
     'updates[0].dimensions["zz"]'),
    (_rows("k", pb.Update(ts=9, value=1, key="b"), pb.Update(ts=9, value=1)), "INVALID_ARGUMENT", "updates[1].key"),
    (_rows("k", pb.Update(ts=9, value=1, key="b"), pb.Update(ts=6, value=1, key="a"),
           pb.Update(ts=4, value=1, key="a")), "INVALID_ARGUMENT", "updates[2].ts"),
    (_rows("w", pb.Update(ts=6, value=1, key="a")), "INVALID_ARGUMENT", "updates[0].key"),
    # updates in columns
    (_cols("w", ts=[6, 7, 3], values=[1, 1, 1]), "INVALID_ARGUMENT", "columns.ts[2]"),
    (_cols("w", ts_float=[6, INF], values=[1, 1]), "INVALID_ARGUMENT", "columns.ts_float[1]"),
    (_cols("w", ts=[6, 7], values=[1, INF]), "INVALID_ARGUMENT", "columns.values[1]"),
    (_cols("w", ts=[6, 7], values=[1]), "INVALID_ARGUMENT", "columns.values"),
    (_cols("w", ts=[6], ts_float=[7], values=[1]), "INVALID_ARGUMENT", "columns.ts, columns.ts_float"),
    (_cols("w", ts=[6, 7], payloads=[b"\x01", b"\xc1"]), "INVALID_ARGUMENT", "columns.payloads[1]"),
    (_cols("w", ts=[6], values=[1], keys=["a"]), "INVALID_ARGUMENT", "columns.keys[0]"),
    (_cols("w", ts=[6, 7], dimensions={"avg": AVG}), "INVALID_ARGUMENT", "columns.dimensions"),
    (_cols("d", ts=[6, 7], dimensions={"avg": AVG, "peak": PEAK}), "INVALID_ARGUMENT",
     'columns.dimensions["peak"].values[1]'),
    (_cols("d", ts=[6, 7], dimensions={"avg": AVG, "peak": AVG, "zz": AVG}), "INVALID_ARGUMENT",
     'columns.dimensions["zz"]'),
    (_cols("d", ts=[6, 7], dimensions={"avg": AVG}), "INVALID_ARGUMENT", "columns.dimensions"),
    (_cols("d", ts=[6, 7], values=[1, 2]), "INVALID_ARGUMENT", "columns.values"),
    (_cols("d", ts=[6, 7], dimensions={"avg": AVG, "peak": pb.Doubles(values=[1])}), "INVALID_ARGUMENT",
     'columns.dimensions["peak"].values'),
    (_cols("w", ts=range(10, 1011), values=[1] * 1001), "RESOURCE_EXHAUSTED", "columns"),
    (("Insert", pb.InsertRequest(window="w", updates=[pb.Update(ts=9, value=1)],
                                 columns=pb.Columns(ts=[9], values=[1]))), "INVALID_ARGUMENT", "updates, columns"),
    (_rows("nope", pb.Update(ts=9, value=1)), "NOT_FOUND", "window"),
    # the other calls
    (("Query", pb.QueryRequest(windows=["w", "nope"])), "NOT_FOUND", "windows[1]"),
    (("Query", pb.QueryRequest(windows=["w"], keys=["a"])), "INVALID_ARGUMENT", "keys"),
    (("Flush", pb.FlushRequest(windows=["nope"])), "NOT_FOUND", "windows[0]"),
    (("GetWindow", pb.GetWindowRequest(name="nope")), "NOT_FOUND", "name"),
    (("Evict", pb.EvictRequest(window="k", count=1)), "INVALID_ARGUMENT", "key"),
    (("Evict", pb.EvictRequest(window="w", key="a", count=1)), "INVALID_ARGUMENT", "key"),
    (("Evict", pb.EvictRequest(window="nope", count=1)), "NOT_FOUND", "window"),
]


async def _state(servicer: AggregationServicer) -> tuple:
    """Everything a request could change: the windows, their contents and results, the store."""
    context = Context()
    listed = await servicer.ListWindows(pb.ListWindowsRequest(), context)
    results = await servicer.Query(pb.QueryRequest(), context)
    # the lifted updates, and the newest timestamp that later updates are checked against
    contents = {name: {key: (list(w), w._newest) for key, w in hosted.parts().items()}
                for name, hosted in servicer.windows.items()}
    return listed, results, contents, sorted(servicer.backend.windows())


def test_every_refusal_names_the_field_by_its_path_and_changes_nothing() -> None:
    async def main() -> None:
        from mta.service.registry import builtin_registry as registry

        servicer = AggregationServicer(kvs.connect("memory://"), registry(), max_batch=1000)
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w")), context)
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("k", keyed=True, policy=None)), context)
        dims = _dims(("avg", "mean"), ("peak", "max"))
        dims.name = "d"
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=dims), context)
        await servicer.Insert(pb.InsertRequest(window="w", columns=pb.Columns(ts=[5], values=[1])), context)
        await servicer.Insert(keyed_batch("k", [(5, 1, "a")]), context)
        await servicer.Insert(pb.InsertRequest(window="d", updates=[pb.Update(ts=5, dimensions={"avg": 1, "peak": 1})]),
                              context)
        before = await _state(servicer)
        for (method, request), code, path in BAD_REQUESTS:
            with pytest.raises(Aborted) as refused:
                await getattr(servicer, method)(request, context)
            got_code, message = refused.value.args
            assert (got_code.name, message.partition(": ")[0]) == (code, path), message
            assert await _state(servicer) == before, message

    asyncio.run(main())


# -- the documentation of results and status codes is what the server does ---------------------

def test_emptied_windows_and_keys_without_updates_have_the_results_the_readme_says() -> None:
    from test_registry import readme_table

    empty = {row["monoid"].strip("`"): row["`values` when empty"] for row in readme_table("monoid")}

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        for name in builtin_registry().names("monoid"):
            for keyed in (False, True):
                window = f"{name}-keyed" if keyed else name
                await servicer.CreateWindow(
                    pb.CreateWindowRequest(spec=spec(window, monoid=name, policy=None, keyed=keyed)), context)
                key = "a" if keyed else ""
                await servicer.Insert(keyed_batch(window, [(1, 2.0, key), (2, 3.0, key)]), context)
                await servicer.Evict(pb.EvictRequest(window=window, count=2, key=key), context)
        expected = {name: {} if empty[name] == "absent" else {"value": float(empty[name])} for name in empty}
        for name in empty:
            emptied = (await servicer.Query(pb.QueryRequest(windows=[name]), context)).results[0]
            keys = (await servicer.Query(pb.QueryRequest(windows=[f"{name}-keyed"], keys=["a", "nobody"]),
                                         context)).results
            for result in (emptied, *keys):
                assert (result.length, dict(result.values), result.payload) == (0, expected[name], b""), name
        # and no windows named: every window
        every = (await servicer.Query(pb.QueryRequest(), context)).results
        assert {r.window for r in every} == set(servicer.windows)

    asyncio.run(main())


def test_the_readme_lists_every_status_code_the_server_sends() -> None:
    import re
    from pathlib import Path

    from test_registry import readme_table

    source = "".join(p.read_text() for p in (Path(__file__).parent.parent / "mta" / "service").glob("*.py"))
    sent = set(re.findall(r"grpc\.StatusCode\.([A-Z_]+)", source)) - {"OK"}
    listed = {code.strip(" `") for row in readme_table("code") for code in row["code"].split(",")}
    assert sent and sent <= listed, sent - listed
    assert listed <= {code.name for code in grpc.StatusCode}


def test_a_window_stored_with_both_monoid_and_dimensions_by_an_older_server_still_loads(tmp_path) -> None:
    from mta.monoid import Max
    from mta.window import Window

    url = str(tmp_path / "w.db")
    both = pb.WindowSpec(name="old", monoid=pb.Component(name="sum"),
                         dimensions=[pb.Dimension(name="peak", monoid=pb.Component(name="max"))])
    try:
        old = Window(Record(peak=Max()), store=kvs.connect(url), window_id="old",
                     labels={"spec": both.SerializeToString()})
        old.insert(1, {"peak": 4.0})
        old.close()

        async def main() -> None:
            servicer = AggregationServicer(kvs.connect(url), builtin_registry())
            await servicer.load()
            result = (await servicer.Query(pb.QueryRequest(windows=["old"]), Context())).results[0]
            assert (result.length, dict(result.values)) == (1, {"peak": 4.0})  # the dimensions, as before

        asyncio.run(main())
    finally:
        kvs.disconnect(url)


@hsettings(max_examples=60)
@given(n=st.integers(1, 40), data=st.data(), as_columns=st.booleans(),
       fault=st.sampled_from(["older", "nan_time", "nan_value", "inf_value"]))
def test_the_path_names_the_first_bad_update_of_any_batch(n, data, as_columns, fault) -> None:
    """Any batch with bad updates is refused naming the first one's field, and the
    window is as before (a policy window with updates in it already)."""
    bad = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=3)))
    times = [100.0 + i for i in range(n)]
    values = [float(i % 7) for i in range(n)]
    for i in bad:
        if fault == "older":
            times[i] = 1.0  # older than the window's newest (50) and than its predecessor
        elif fault == "nan_time":
            times[i] = float("nan")
        else:
            values[i] = float("nan") if fault == "nan_value" else float("inf")
    part = "ts_float" if fault in ("older", "nan_time") else "value"
    if as_columns:
        request = pb.InsertRequest(window="w", columns=pb.Columns(ts_float=times, values=values))
        expected = f"columns.{part if part == 'ts_float' else 'values'}[{bad[0]}]"
    else:
        request = pb.InsertRequest(window="w", updates=[pb.Update(ts_float=t, value=v) for t, v in zip(times, values)])
        expected = f"updates[{bad[0]}].{part}"

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=("max_size", {"n": 5}))), context)
        await servicer.Insert(pb.InsertRequest(window="w", columns=pb.Columns(ts_float=range(51), values=[1] * 51)),
                              context)
        before = await _state(servicer)
        with pytest.raises(Aborted) as refused:
            await servicer.Insert(request, context)
        assert refused.value.args[1].partition(": ")[0] == expected, refused.value.args[1]
        assert await _state(servicer) == before

    asyncio.run(main())


# -- out-of-order windows (algorithm "fiba", issue #16) ----------------------------------------


def test_a_range_query_waits_for_the_batch_being_applied() -> None:
    """A plain query reads the last complete results; a range query reads the window
    itself, so it waits for the batch in progress and sees all of it, never a slice."""
    from mta.service import servicer as module

    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=None, algorithm="fiba")), context)
        n = module.SLICE * 8
        times = [(i * 7919) % n for i in range(n)]  # a permutation of 0..n-1
        call = asyncio.ensure_future(servicer.Insert(
            pb.InsertRequest(window="w", columns=pb.Columns(ts=times, values=[1.0] * n)), context))
        window = servicer.windows["w"].window
        await _until(lambda: 0 < len(window) < n)  # the batch is being applied, slice by slice
        plain = (await servicer.Query(pb.QueryRequest(windows=["w"]), context)).results[0]
        ranged = await servicer.Query(pb.QueryRequest(windows=["w"], range=pb.TimeInterval(to_ts=n // 2 - 1)),
                                      context)
        ranged = ranged.results[0]
        assert not call.done()
        await call
        assert plain.length == 0  # before the batch
        assert (ranged.length, ranged.values["value"]) == (n // 2, n // 2)  # after all of it

    asyncio.run(main())


def test_out_of_order_batches_and_retractions_while_the_store_is_down_count_once(flaky) -> None:
    """A fiba window (keyed, tiny cache: its nodes are read back from the store) whose store
    goes down: calls fail with UNAVAILABLE, retries under the same batch id once it is back
    count once, and the windows are the sorted-list oracle's."""
    from test_server_out_of_order import Oracle

    async def main() -> None:
        flaky.down = False
        servicer = AggregationServicer(flaky, builtin_registry())
        context = Context()
        window_spec = spec("ooo-flaky", policy=("max_size", {"n": 30}), algorithm="fiba", keyed=True)
        window_spec.store.cache_size, window_spec.store.buffer_size = 2, 4
        await servicer.CreateWindow(pb.CreateWindowRequest(spec=window_spec, if_not_exists=True), context)
        oracles = {key: Oracle(("max_size", {"n": 30})) for key in "ab"}
        for b in range(6):  # each batch a permutation of its 20 timestamps: none is late
            triples = [(b * 20 + i * 7 % 20, float(i % 5), "ab"[i % 2]) for i in range(20)]
            request = keyed_batch("ooo-flaky", triples, batch_id=f"b{b}")
            if b % 2:
                flaky.down = True
                with pytest.raises(Aborted) as failed:
                    await servicer.Insert(request, context)
                assert failed.value.args[0] == grpc.StatusCode.UNAVAILABLE, failed.value.args
                flaky.down = False
            await servicer.Insert(request, context)
            for key in "ab":
                oracles[key].insert([(ts, v) for ts, v, k in triples if k == key])
        flaky.down = True
        with pytest.raises(Aborted) as failed:
            await servicer.Retract(pb.RetractRequest(window="ooo-flaky", key="a", ts=104), context)
        assert failed.value.args[0] == grpc.StatusCode.UNAVAILABLE
        flaky.down = False
        await servicer.Retract(pb.RetractRequest(window="ooo-flaky", key="a", ts=104), context)
        assert oracles["a"].retract(104) == 1
        for low, high in [(None, None), (70, 100), (105, None)]:
            request = pb.QueryRequest(windows=["ooo-flaky"])
            if low is not None or high is not None:
                request.range.CopyFrom(pb.TimeInterval(**{k: v for k, v in (("from_ts", low), ("to_ts", high))
                                                          if v is not None}))
            results = (await servicer.Query(request, context)).results
            assert {r.key: (r.length, r.values["value"]) for r in results} == \
                {k: (o.result(low, high)[0], o.result(low, high)[1]["total"]) for k, o in oracles.items()}

    asyncio.run(main())


# -- streams (issue 17) ------------------------------------------------------------------------


def test_a_stream_batch_refused_by_a_down_store_is_acknowledged_once_when_retried(flaky) -> None:
    """The store goes down: the batch fails with UNAVAILABLE; its retry under the same id once
    the store is back is a duplicate (applied once), acknowledged only once durable; a server
    opened on the store afterwards has it, and continues as the library's engine does."""
    from mta import Stream, Sum
    from mta.windows import Tumbling
    from test_server_streams import expected, insert, seen, stream_spec

    async def main() -> None:
        flaky.down = False
        servicer = AggregationServicer(flaky, builtin_registry())
        context = Context()
        await servicer.CreateStream(pb.CreateStreamRequest(spec=stream_spec("flaky-s", queries=["t10"])), context)
        engine = Stream(Sum(), allowed_lateness=5)
        engine.add("t10", Tumbling(10))
        await servicer.StreamInsert(insert("flaky-s", [(1, 1.0), (4, 2.0)], batch_id="a"), context)
        flaky.down = True
        with pytest.raises(Aborted) as failed:
            await servicer.StreamInsert(insert("flaky-s", [(12, 4.0), (3, 8.0)], batch_id="b"), context)
        assert failed.value.args[0] == grpc.StatusCode.UNAVAILABLE
        flaky.down = False
        retry = await servicer.StreamInsert(insert("flaky-s", [(12, 4.0), (3, 8.0)], batch_id="b"), context)
        assert retry.duplicate and retry.inserted == 0
        engine.insert_many([(1, 1.0), (4, 2.0), (12, 4.0), (3, 8.0)])
        hosted = servicer.streams["flaky-s"]
        hosted.store.release()  # as a server that stops: another may open the stream
        reopened = AggregationServicer(flaky, builtin_registry())
        await reopened.load()
        reply = await reopened.Advance(pb.AdvanceRequest(stream="flaky-s", watermark=20), context)
        assert seen(reply.results) == expected(engine.advance(20))
        assert [r.values["value"] for r in reply.results] == [11.0, 4.0]  # each batch once

    asyncio.run(main())


@pytest.mark.parametrize("algorithm", ["", "fiba"])
@pytest.mark.parametrize("monoid", ["sum", "mean", "max", "count"])
def test_columns_and_rows_leave_the_same_window(algorithm, monoid) -> None:
    """A batch in columns is read into numpy arrays (and checked in numpy); the window it
    leaves holds Python numbers, the same as the batch sent as Update messages."""
    async def main() -> None:
        servicer = AggregationServicer(kvs.connect("memory://"), builtin_registry())
        context = Context()
        for name in ("cols", "rows"):
            await servicer.CreateWindow(pb.CreateWindowRequest(spec=spec(name, monoid, algorithm=algorithm)), context)
        for ts, values in [([1, 2, 2, 5], [0.5, -0.0, 3.0, 1e300]), ([5, 9, 12], [2.0, 7.25, -1.5]),
                           ([14.5, 15.0], [1.0, 2.0])]:
            floats = any(isinstance(t, float) for t in ts)
            columns = pb.Columns(values=values, **{"ts_float" if floats else "ts": ts})
            await servicer.Insert(pb.InsertRequest(window="cols", columns=columns), context)
            rows = [pb.Update(value=v, **{"ts_float" if floats else "ts": t}) for t, v in zip(ts, values)]
            await servicer.Insert(pb.InsertRequest(window="rows", updates=rows), context)
            cols, rows_ = servicer.windows["cols"].window, servicer.windows["rows"].window
            assert repr(list(cols)) == repr(list(rows_)) and repr(cols._newest) == repr(rows_._newest)
            assert repr(cols.query()) == repr(rows_.query())
        if algorithm and monoid == "count":
            return  # takes any value, and an out-of-order window any timestamp
        # refused in numpy's check, named by the general path: the window unchanged
        before = repr(list(servicer.windows["cols"].window))
        with pytest.raises(Exception, match=r"columns.ts\[1\]" if not algorithm else r"columns.values\[1\]"):
            await servicer.Insert(pb.InsertRequest(window="cols", columns=pb.Columns(
                ts=[20, 19] if not algorithm else [20, 21], values=[1.0, 1.0 if not algorithm else float("nan")])),
                context)
        assert repr(list(servicer.windows["cols"].window)) == before

    asyncio.run(main())
