"""Streams in `mta serve` (many window queries over one stream, issue 17), through a real
gRPC channel to a server process. The oracle is the library's own engine (`mta.Stream`,
`mta.KeyedStream`) fed the same batches, watermarks and query changes: the server must
report exactly what the engine reports, durably and across restarts."""

from __future__ import annotations

import json
import math
import random
import signal
import threading

import grpc
import pytest

from mta import KeyedStream, MaxSize, Stream
from mta.monoid import Max, Mean, Record, Sum
from mta.v1 import aggregation_pb2 as pb
from mta.windows import Count, Policy, Punctuation, Session, Sliding, Tumbling
from test_server import Server, error_of

LATENESS = 5


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "windows.db", "--max-batch", "1000")
    yield s
    if s.proc.poll() is None:
        s.stop()


def component(name: str, **params) -> pb.Component:
    out = pb.Component(name=name)
    for key, value in params.items():
        field = {int: "int_value", float: "float_value", str: "string_value", bool: "bool_value"}[type(value)]
        setattr(out.params[key], field, value)
    return out


#: Each query: its proto window and the engine's window type it stands for.
QUERIES = {
    "t10": (pb.StreamWindow(tumbling=pb.TumblingWindow(size=10)), Tumbling(10)),
    "s20": (pb.StreamWindow(sliding=pb.SlidingWindow(size=20, slide=5, offset=1)), Sliding(20, 5, 1)),
    "gap": (pb.StreamWindow(session=pb.SessionWindow(gap=3)), Session(3)),
    "c4": (pb.StreamWindow(count=pb.CountWindow(size=4, slide=2)), Count(4, 2)),
    "last5": (pb.StreamWindow(count=pb.CountWindow(size=5, every=10)), Count(5, every=10)),
    "marks": (pb.StreamWindow(punctuation=pb.PunctuationWindow(predicate=component("above", threshold=8.5))),
              Punctuation(lambda value: value > 8.5)),
    "newest3": (pb.StreamWindow(policy=pb.PolicyWindow(policy=component("max_size", n=3), every=10)),
                Policy(MaxSize(3), every=10)),
}


def query(name: str) -> pb.StreamQuery:
    return pb.StreamQuery(name=name, window=QUERIES[name][0])


def stream_spec(name: str, queries=tuple(QUERIES), **extra) -> pb.StreamSpec:
    extra.setdefault("monoid", pb.Component(name="sum"))
    return pb.StreamSpec(name=name, queries=[query(q) for q in queries], allowed_lateness=LATENESS, **extra)


def local_stream(queries=tuple(QUERIES), keyed: bool = False, monoid=None, **options) -> Stream | KeyedStream:
    engine = (KeyedStream if keyed else Stream)(monoid or Sum(), allowed_lateness=LATENESS, **options)
    for name in queries:
        engine.add(name, QUERIES[name][1])
    return engine


def bounds(b: pb.Bounds) -> tuple:
    return getattr(b, b.WhichOneof("lower")), getattr(b, b.WhichOneof("upper"))


def seen(results) -> list[tuple]:
    """Server results as comparable tuples."""
    return [(r.query, r.key, *bounds(r.window), r.count, dict(r.values), r.final, tuple(map(bounds, r.replaces)))
            for r in results]


def expected(results, record: bool = False) -> list[tuple]:
    """The engine's results as ``seen`` gives the server's."""
    return [(r.query, r.key or "", r.start, r.end, r.count, dict(r.value) if record else {"value": r.value},
             r.final, tuple(r.replaces)) for r in results]


def insert(stream: str, pairs, watermark=None, batch_id: str = "", keys=None) -> pb.StreamInsertRequest:
    request = pb.StreamInsertRequest(stream=stream, batch_id=batch_id,
                                     columns=pb.Columns(ts=[ts for ts, _ in pairs], values=[v for _, v in pairs],
                                                        keys=keys or []))
    if watermark is not None:
        request.watermark = watermark
    return request


def workload(seed: int, n: int = 240, keys: str = "") -> list[tuple[list, int]]:
    """Batches of (ts, value) (or (key, ts, value)) with the watermark after each: a fifth
    of the updates out of order, some within the lateness, some beyond it (dropped)."""
    rng = random.Random(seed)
    out, ts = [], 0
    for _ in range(n // 12):
        batch = []
        for _ in range(12):
            ts += rng.choice((0, 1, 1, 2))
            t = ts - rng.randint(1, 12) if rng.random() < 0.2 else ts
            update = (max(t, 0), float(rng.randint(0, 9)))
            batch.append((rng.choice(keys), *update) if keys else update)
        out.append((batch, ts - 2))
    return out


def late_sessions_merge(engine: Stream, stream: str, stub) -> list[pb.StreamResult]:
    """Two sessions reported, then a late update that joins them: an update with `replaces`."""
    out = []
    for request in [insert(stream, [(1000, 1.0), (1004, 1.0)], watermark=1010), insert(stream, [(1002, 1.0)],
                                                                                          watermark=1011)]:
        engine.insert_many([(ts, v) for ts, v in zip(request.columns.ts, request.columns.values)])
        results = stub.StreamInsert(request).results
        assert seen(results) == expected(engine.advance(request.watermark))
        out.extend(results)
    return out


def test_a_stream_of_many_queries_reports_what_the_engine_reports_and_watch_sees_it(server) -> None:
    stub = server.stub
    info = stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("s")))
    assert [q.name for q in info.spec.queries] == list(QUERIES) and not info.HasField("watermark")
    engine = local_stream()
    watch = stub.StreamWatch(pb.StreamWatchRequest(stream="s"))
    assert next(watch).info == info  # the watch is in place before the first batch
    events: list[pb.StreamEvent] = []
    replies = []
    for i, (batch, watermark) in enumerate(workload(1)):
        taken = engine.insert_many(batch)
        if i % 2:  # the watermark with the batch
            reply = stub.StreamInsert(insert("s", batch, watermark=watermark))
            results = reply.results
        else:  # the watermark on its own
            reply = stub.StreamInsert(insert("s", batch))
            assert not reply.results
            results = stub.Advance(pb.AdvanceRequest(stream="s", watermark=watermark)).results
        assert (reply.inserted, reply.dropped) == (taken, len(batch) - taken)
        assert seen(results) == expected(engine.advance(watermark)), i
        replies.extend(results)
    replies.extend(late_sessions_merge(engine, "s", stub))
    flushed = stub.Advance(pb.AdvanceRequest(stream="s", watermark_float=math.inf)).results
    assert seen(flushed) == expected(engine.advance(math.inf))
    replies.extend(flushed)
    reader = threading.Thread(target=lambda: events.extend(e for _, e in zip(range(len(replies)), watch)))
    reader.start()
    reader.join(timeout=30)
    watch.cancel()
    # the Watch saw every result of every advance, in order
    watched = [e.result for e in events]
    assert seen(watched) == seen(replies)
    assert {r.query for r in watched} == set(QUERIES)
    assert any(not r.final for r in watched) and any(r.replaces for r in watched)  # updates were exercised
    info = stub.GetStream(pb.GetStreamRequest(name="s"))
    assert info.dropped == engine.dropped > 0 and info.watermark_float == math.inf
    assert [s.spec.name for s in stub.ListStreams(pb.ListStreamsRequest()).streams] == ["s"]


def test_a_shared_stream_reports_what_the_engine_reports_and_explains_its_plan(server) -> None:
    """final "shared": the multi-query plan runs in the server's engine; GetStream shows it."""
    stub = server.stub
    names = ["t10", "s20", "gap"]
    hopping = {"h30": (30, 2, 0), "h60": (60, 4, 1)}
    for optimizer in ("", "weaveshare"):
        name = f"shared{optimizer}"
        spec = stream_spec(name, queries=names, final="shared", optimizer=optimizer)
        engine = local_stream(names, final="shared", optimizer=optimizer or "triweave")
        for query_name, (size, slide, offset) in hopping.items():
            spec.queries.append(pb.StreamQuery(name=query_name, window=pb.StreamWindow(
                sliding=pb.SlidingWindow(size=size, slide=slide, offset=offset))))
            engine.add(query_name, Sliding(size, slide, offset))
        info = stub.CreateStream(pb.CreateStreamRequest(spec=spec))
        plan = json.loads(info.plan)
        assert plan == engine.plan().to_dict()
        assert plan["method"] == (optimizer or "triweave")
        assert sorted(q for g in plan["groups"] for q in g["queries"]) == ["h30", "h60", "s20", "t10"]
        for batch, watermark in workload(2):
            engine.insert_many(batch)
            results = stub.StreamInsert(insert(name, batch, watermark=watermark)).results
            assert seen(results) == expected(engine.advance(watermark))
        # float values: the plan no longer subtracts (re-planned as the engine's was)
        assert json.loads(stub.GetStream(pb.GetStreamRequest(name=name)).plan) == engine.plan().to_dict()
    assert not json.loads(stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("plain"))).plan or "null")


def test_queries_come_and_go_mid_stream(server) -> None:
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("q", queries=["t10"])))
    engine = local_stream(["t10"])
    batches = workload(2)
    for i, (batch, watermark) in enumerate(batches):
        if i == 4:  # added mid-stream: they see the updates from the current watermark on
            for name in ("gap", "c4", "marks"):
                info = stub.AddQuery(pb.AddQueryRequest(stream="q", query=query(name)))
                engine.add(name, QUERIES[name][1])
            assert [q.name for q in info.spec.queries] == ["t10", "gap", "c4", "marks"]
        if i == 10:
            info = stub.RemoveQuery(pb.RemoveQueryRequest(stream="q", query="t10"))
            engine.remove("t10")
            assert [q.name for q in info.spec.queries] == ["gap", "c4", "marks"]
        engine.insert_many(batch)
        reply = stub.StreamInsert(insert("q", batch, watermark=watermark))
        assert seen(reply.results) == expected(engine.advance(watermark)), i
    assert error_of(stub.AddQuery, pb.AddQueryRequest(stream="q", query=query("gap"))).code() == \
        grpc.StatusCode.ALREADY_EXISTS
    error = error_of(stub.RemoveQuery, pb.RemoveQueryRequest(stream="q", query="t10"))
    assert error.code() == grpc.StatusCode.NOT_FOUND and error.details().startswith("query: ")
    assert error_of(stub.AddQuery, pb.AddQueryRequest(stream="nope", query=query("gap"))).code() == \
        grpc.StatusCode.NOT_FOUND


def bad_spec(**changes) -> pb.StreamSpec:
    spec = stream_spec("bad", queries=["t10", "gap"])
    for path, value in changes.items():
        target = spec
        *parents, last = path.split(".")
        for part in parents:
            target = target.queries[int(part[1:])] if part.startswith("q") else getattr(target, part)
        if isinstance(value, pb.Component):
            getattr(target, last).CopyFrom(value)
        else:
            setattr(target, last, value)
    return spec


@pytest.mark.parametrize("spec, where", [
    (bad_spec(**{"q1.window.session.gap": 0.0}), "spec.queries[1].window.session.gap"),
    (bad_spec(**{"q0.window.tumbling.size": math.nan}), "spec.queries[0].window.tumbling.size"),
    (bad_spec(**{"q1.name": "t10"}), "spec.queries[1].name"),
    (bad_spec(**{"q1.name": ""}), "spec.queries[1].name"),
    (pb.StreamSpec(name="bad", monoid=pb.Component(name="sum"), queries=[pb.StreamQuery(name="x")]),
     "spec.queries[0].window"),
    (pb.StreamSpec(name="bad", monoid=pb.Component(name="sum"), queries=[pb.StreamQuery(
        name="x", window=pb.StreamWindow(count=pb.CountWindow(size=3, slide=1, every=2)))]),
     "spec.queries[0].window.count.slide, spec.queries[0].window.count.every"),
    (pb.StreamSpec(name="bad", monoid=pb.Component(name="sum"), queries=[pb.StreamQuery(
        name="x", window=pb.StreamWindow(count=pb.CountWindow(slide=1)))]), "spec.queries[0].window.count.size"),
    (pb.StreamSpec(name="bad", monoid=pb.Component(name="sum"), queries=[pb.StreamQuery(
        name="x", window=pb.StreamWindow(punctuation=pb.PunctuationWindow(predicate=component("eval"))))]),
     "spec.queries[0].window.punctuation.predicate.name"),
    (pb.StreamSpec(name="bad", monoid=pb.Component(name="sum"), queries=[pb.StreamQuery(
        name="x", window=pb.StreamWindow(policy=pb.PolicyWindow(policy=component("max_size", n="3"), every=1)))]),
     'spec.queries[0].window.policy.policy.params["n"]'),
    (pb.StreamSpec(name="bad", monoid=pb.Component(name="sum"), queries=[pb.StreamQuery(
        name="x", window=pb.StreamWindow(policy=pb.PolicyWindow(policy=component("max_size", n=3))))]),
     "spec.queries[0].window.policy.every"),
    (bad_spec(allowed_lateness=-1.0), "spec.allowed_lateness"),
    (bad_spec(late="keep"), "spec.late"),
    (bad_spec(final="fastest"), "spec.final"),
    (bad_spec(final="shared", optimizer="cheapest"), "spec.optimizer"),
    (bad_spec(monoid=component("median")), "spec.monoid.name"),
    (pb.StreamSpec(name="bad"), "spec.monoid"),
    (bad_spec(name="a b"), "spec.name"),
])
def test_bad_specs_are_refused_by_path(server, spec, where) -> None:
    error = error_of(server.stub.CreateStream, pb.CreateStreamRequest(spec=spec))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and error.details().partition(": ")[0] == where, \
        error.details()
    assert not server.stub.ListStreams(pb.ListStreamsRequest()).streams


def test_bad_batches_are_refused_by_path_and_change_nothing(server) -> None:
    stub = server.stub
    dims = [pb.Dimension(name="avg", monoid=pb.Component(name="mean")),
            pb.Dimension(name="peak", monoid=pb.Component(name="max"))]
    stub.CreateStream(pb.CreateStreamRequest(spec=pb.StreamSpec(name="d", dimensions=dims, queries=[query("t10")])))
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("s", queries=["t10", "marks"])))
    monoid = Record(avg=Mean(), peak=Max())
    engines = {"d": local_stream(["t10"], monoid=monoid), "s": local_stream(["t10", "marks"])}
    good = pb.StreamInsertRequest(stream="d", updates=[pb.Update(ts=1, dimensions={"avg": 1, "peak": 1})])
    stub.StreamInsert(good)
    engines["d"].insert(1, {"avg": 1.0, "peak": 1.0})
    cases = [
        (insert("s", [(1, 1.0), (2, math.nan)]), "columns.values[1]"),
        (pb.StreamInsertRequest(stream="s", columns=pb.Columns(ts_float=[1, math.inf], values=[1, 1])),
         "columns.ts_float[1]"),
        (pb.StreamInsertRequest(stream="s", updates=[pb.Update(ts=1, value=1), pb.Update(value=2)]), "updates[1].ts"),
        (pb.StreamInsertRequest(stream="s", columns=pb.Columns(ts=[1, 2], values=[1])), "columns.values"),
        (insert("s", [(1, 1.0)], keys=["k"]), "columns.keys[0]"),
        (pb.StreamInsertRequest(stream="s", columns=pb.Columns(ts=[1], values=[1]), watermark_float=math.nan),
         "watermark_float"),
        (pb.StreamInsertRequest(stream="d", updates=[pb.Update(ts=2, dimensions={"avg": 1, "peak": 1}),
                                                     pb.Update(ts=3, dimensions={"avg": 1, "top": 1})]),
         'updates[1].dimensions["top"]'),
        (pb.StreamInsertRequest(stream="d", columns=pb.Columns(ts=[2, 3], dimensions={
            "avg": pb.Doubles(values=[1, 2]), "peak": pb.Doubles(values=[1, math.nan])})),
         'columns.dimensions["peak"].values[1]'),
        (pb.StreamInsertRequest(stream="d", updates=[pb.Update(ts=2, value=1)]), "updates[0].dimensions"),
    ]
    for request, where in cases:
        error = error_of(stub.StreamInsert, request)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and error.details().partition(": ")[0] == where, \
            (where, error.details())
    # a predicate that raises on a value (dimensions: `above` without one compares a dict), on a batch,
    # and on an update waiting for the watermark when its query is added
    stub.CreateStream(pb.CreateStreamRequest(spec=pb.StreamSpec(name="p", dimensions=dims, queries=[query("marks")])))
    error = error_of(stub.StreamInsert, pb.StreamInsertRequest(stream="p", updates=good.updates))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and error.details().startswith(
        "updates[0].dimensions: the predicate of punctuation query 'marks' raised TypeError"), error.details()
    error = error_of(stub.AddQuery, pb.AddQueryRequest(stream="d", query=query("marks")))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and error.details().startswith(
        "query.window.punctuation.predicate: the predicate of punctuation query 'marks' raised TypeError"), \
        error.details()
    assert [q.name for q in stub.GetStream(pb.GetStreamRequest(name="d")).spec.queries] == ["t10"]
    error = error_of(stub.Advance, pb.AdvanceRequest(stream="s"))
    assert (error.code(), error.details().partition(": ")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "watermark")
    error = error_of(stub.StreamInsert, insert("s", [(i, 1.0) for i in range(1001)]))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "limit is 1000" in error.details()
    assert error_of(stub.StreamInsert, insert("nope", [(1, 1.0)])).code() == grpc.StatusCode.NOT_FOUND
    # nothing changed: no watermark, nothing dropped, and the results are those of the good batches only
    for name, engine in engines.items():
        info = stub.GetStream(pb.GetStreamRequest(name=name))
        assert not info.HasField("watermark") and info.dropped == 0
        reply = stub.Advance(pb.AdvanceRequest(stream=name, watermark=100))
        assert seen(reply.results) == expected(engine.advance(100), record=name == "d")
    assert seen(reply.results) == []  # "s" saw no update at all


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_restarted_server_continues_every_stream_where_it_was_acknowledged(server, sig) -> None:
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("r", queries=["t10", "gap", "c4", "newest3"])))
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("k", queries=["s20", "last5"], keyed=True)))
    plain, keyed = local_stream(["t10", "gap", "c4", "newest3"]), local_stream(["s20", "last5"], keyed=True)
    batches, keyed_batches = workload(3), workload(4, keys="xyz")
    for i in range(len(batches)):
        if i == len(batches) // 2:
            stub.AddQuery(pb.AddQueryRequest(stream="r", query=query("marks")))
            plain.add("marks", QUERIES["marks"][1])
            server.restart(sig)
            stub = server.stub
            # a retry of the last batch (its ack lost in the crash) is not applied again
            assert stub.StreamInsert(insert("r", batches[i - 1][0], batch_id=f"b{i - 1}")).duplicate
            info = stub.GetStream(pb.GetStreamRequest(name="k"))
            assert (info.dropped, info.keys, info.watermark) == (keyed.dropped, len(keyed.keys()), keyed.watermark)
        batch, watermark = batches[i]
        plain.insert_many(batch)
        reply = stub.StreamInsert(insert("r", batch, watermark=watermark, batch_id=f"b{i}"))
        assert seen(reply.results) == expected(plain.advance(watermark)), i
        batch, watermark = keyed_batches[i]
        keyed.insert_many(batch)
        request = insert("k", [(ts, v) for _, ts, v in batch], watermark=watermark, keys=[k for k, _, _ in batch])
        assert seen(stub.StreamInsert(request).results) == expected(keyed.advance(watermark)), i
    assert [q.name for q in stub.GetStream(pb.GetStreamRequest(name="r")).spec.queries] == \
        ["t10", "gap", "c4", "newest3", "marks"]


def test_a_keyed_stream_runs_the_queries_per_key_and_watch_follows_keys(server) -> None:
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("k", queries=["t10", "gap"], keyed=True,
                                                               late="side_output")))
    engine = local_stream(["t10", "gap"], keyed=True)
    dropped_x: list = []
    engine.on_late = lambda key, ts, value: dropped_x.append(pb.Update(ts=ts, key=key, value=value)) if key == "x" \
        else None
    watch = stub.StreamWatch(pb.StreamWatchRequest(stream="k", keys=["x"], queries=["gap"]))
    assert next(watch).info.spec.name == "k"
    events: list = []
    everything = []
    for batch, watermark in workload(5, keys="xy"):
        engine.insert_many(batch)
        request = insert("k", [(ts, v) for _, ts, v in batch], watermark=watermark, keys=[k for k, _, _ in batch])
        reply = stub.StreamInsert(request)
        everything.extend(reply.results)
        assert seen(reply.results) == expected(engine.advance(watermark))
    assert {r.key for r in everything} == {"x", "y"}
    wanted = [r for r in everything if r.key == "x" and r.query == "gap"]
    late = stub.StreamInsert(insert("k", [(0, 7.0)], keys=["x"]))  # far behind the watermark: a side output
    engine.insert("x", 0, 7.0)
    assert (late.inserted, late.dropped) == (0, 1) and len(dropped_x) > 1
    reader = threading.Thread(target=lambda: events.extend(
        e for _, e in zip(range(len(wanted) + len(dropped_x)), watch)))
    reader.start()
    reader.join(timeout=30)
    watch.cancel()
    # key "x" only: the results of query "gap", and every update dropped as too late
    assert seen([e.result for e in events if e.HasField("result")]) == seen(wanted)
    assert [e.late for e in events if e.HasField("late")] == dropped_x
    assert stub.GetStream(pb.GetStreamRequest(name="k")).dropped == engine.dropped
    error = error_of(lambda r: list(stub.StreamWatch(r)), pb.StreamWatchRequest(stream="nope"))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    error = error_of(stub.StreamInsert, insert("k", [(1, 1.0)]))  # a keyed stream needs keys
    assert (error.code(), error.details().partition(": ")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "columns.keys[0]")


def test_a_punctuation_query_refused_by_a_keyed_stream_leaves_every_key_as_it_was(server) -> None:
    """The predicate raises on key "b"'s waiting update, not on "a" (none waiting): the query
    is refused, and neither key keeps it, through a restart too."""
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("k", queries=["t10"], keyed=True)))
    engine = local_stream(["t10"], keyed=True)
    for key, ts, watermark in [("a", 1, 5), ("b", 6, None)]:
        stub.StreamInsert(insert("k", [(ts, 1.0)], keys=[key], watermark=watermark))
        engine.insert(key, ts, 1.0)
        if watermark is not None:
            engine.advance(watermark)
    peak = pb.StreamQuery(name="peaks", window=pb.StreamWindow(punctuation=pb.PunctuationWindow(
        predicate=component("above", threshold=1.0, dimension="peak"))))  # the values are numbers
    error = error_of(stub.AddQuery, pb.AddQueryRequest(stream="k", query=peak))
    assert (error.code(), error.details().partition(": ")[0]) == \
        (grpc.StatusCode.INVALID_ARGUMENT, "query.window.punctuation.predicate")
    stub.AddQuery(pb.AddQueryRequest(stream="k", query=query("gap")))
    engine.add("gap", QUERIES["gap"][1])
    server.restart(signal.SIGKILL)
    reply = server.stub.StreamInsert(insert("k", [(7, 2.0), (8, 4.0)], keys=["a", "b"], watermark=30))
    engine.insert_many([("a", 7, 2.0), ("b", 8, 4.0)])
    assert seen(reply.results) == expected(engine.advance(30))
    assert {r.query for r in reply.results} == {"t10", "gap"}


def test_ingest_acks_batches_in_order_with_their_results(server) -> None:
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("i", queries=["t10", "c4"])))
    engine = local_stream(["t10", "c4"])
    batches = workload(6)
    replies = list(stub.StreamIngest(iter([insert("i", b, watermark=w, batch_id=f"b{n}")
                                           for n, (b, w) in enumerate(batches)]), timeout=60))
    assert [r.batch_id for r in replies] == [f"b{n}" for n in range(len(batches))]
    for reply, (batch, watermark) in zip(replies, batches):
        engine.insert_many(batch)
        assert seen(reply.results) == expected(engine.advance(watermark))


def test_deleting_a_stream_ends_its_watchers_and_frees_its_name(server) -> None:
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("gone", queries=["t10"])))
    assert error_of(stub.CreateWindow, pb.CreateWindowRequest(spec=pb.WindowSpec(
        name="gone", monoid=pb.Component(name="sum")))).code() == grpc.StatusCode.ALREADY_EXISTS
    assert error_of(stub.DeleteWindow, pb.DeleteWindowRequest(name="gone")).code() == grpc.StatusCode.NOT_FOUND
    watch = stub.StreamWatch(pb.StreamWatchRequest(stream="gone"))
    assert next(watch).HasField("info")
    stub.StreamInsert(insert("gone", [(1, 1.0)], watermark=10))
    assert next(watch).result.window == pb.Bounds(start=0, end=10)
    assert stub.DeleteStream(pb.DeleteStreamRequest(name="gone")).deleted
    with pytest.raises(grpc.RpcError) as ended:
        next(watch)
    assert ended.value.code() == grpc.StatusCode.NOT_FOUND
    assert error_of(stub.GetStream, pb.GetStreamRequest(name="gone")).code() == grpc.StatusCode.NOT_FOUND
    server.restart()
    stub = server.stub
    assert not stub.ListStreams(pb.ListStreamsRequest()).streams
    assert not stub.DeleteStream(pb.DeleteStreamRequest(name="gone")).deleted
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("gone", queries=["gap"])))
    assert stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("gone", queries=["gap"]), if_not_exists=True))
    error = error_of(stub.CreateStream, pb.CreateStreamRequest(spec=stream_spec("gone"), if_not_exists=True))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS and "another spec" in error.details()


def test_streams_need_the_token_and_honour_deadlines(tmp_path) -> None:
    server = Server(tmp_path / "w.db", env={"MTA_TOKEN": "s3cret"})
    try:
        stub = server.stub
        error = error_of(stub.CreateStream, pb.CreateStreamRequest(spec=stream_spec("t")))
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        good = (("authorization", "Bearer s3cret"),)
        stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("t")), metadata=good)
        described = stub.Describe(pb.DescribeRequest(), metadata=good)
        assert {p.name for p in described.predicates} == {"above", "at_least", "below", "equals"}
        watch = stub.StreamWatch(pb.StreamWatchRequest(stream="t"), metadata=good, timeout=0.5)
        with pytest.raises(grpc.RpcError) as caught:
            for _ in watch:
                pass
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        server.stop()


def test_one_writer_per_stream_on_a_shared_redis() -> None:
    """A second server on the same store leaves the first one's stream alone; once another
    writer takes the stream over, the first server refuses changes (FAILED_PRECONDITION)
    and lands none of them."""
    import kvs
    from kvs.servers import RedisProcess

    with RedisProcess() as redis:
        first = Server(redis.url, "--lease-ttl", "3", owner=None)
        try:
            first.stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("s", queries=["t10"])))
            first.stub.StreamInsert(insert("s", [(1, 5.0)]))
            second = Server(redis.url, "--lease-ttl", "3", owner=None)  # waits out one lease, then leaves "s"
            try:
                assert not second.stub.ListStreams(pb.ListStreamsRequest()).streams
                assert error_of(second.stub.StreamInsert, insert("s", [(2, 1.0)])).code() == grpc.StatusCode.NOT_FOUND
                assert error_of(second.stub.CreateStream, pb.CreateStreamRequest(spec=stream_spec("s"))).code() == \
                    grpc.StatusCode.ALREADY_EXISTS
            finally:
                second.stop()
            reply = first.stub.StreamInsert(insert("s", [(3, 7.0)], watermark=10))
            assert seen(reply.results) == [("t10", "", 0, 10, 2, {"value": 12.0}, True, ())]
            backend = kvs.connect(redis.url)
            taker = backend.store("s", take_over=True)
            state = taker.load()
            taker.commit(state)
            refused = error_of(first.stub.StreamInsert, insert("s", [(11, 1.0)], watermark=20))
            assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION and "'s'" in refused.details()
            assert taker.load() == state  # nothing of the refused batch landed
            taker.release()
            kvs.disconnect(redis.url)
        finally:
            first.stop()


def test_sigterm_ends_stream_watches_at_once_and_keeps_every_acknowledged_change(server) -> None:
    stub = server.stub
    stub.CreateStream(pb.CreateStreamRequest(spec=stream_spec("w", queries=["t10"])))
    watch = stub.StreamWatch(pb.StreamWatchRequest(stream="w"))
    assert next(watch).HasField("info")
    stub.StreamInsert(insert("w", [(1, 1.0), (12, 2.0)], watermark=10, batch_id="b1"))
    assert next(watch).result.window == pb.Bounds(start=0, end=10)
    server.proc.send_signal(signal.SIGTERM)
    with pytest.raises(grpc.RpcError) as ended:
        next(watch)
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE and "server shutting down" in ended.value.details()
    out, _ = server.proc.communicate(timeout=60)
    assert server.proc.returncode == 0 and "every window flushed" in out
    server.start()
    reply = server.stub.Advance(pb.AdvanceRequest(stream="w", watermark=20))
    assert seen(reply.results) == [("t10", "", 10, 20, 1, {"value": 2.0}, True, ())]


def test_the_python_client_runs_streams_and_returns_the_librarys_results(server) -> None:
    from mta.client import Client, policy_window, punctuation, stream_window

    engine = local_stream()
    with Client(server.address) as client:
        windows = {name: QUERIES[name][1] for name in ("t10", "s20", "gap", "c4", "last5")}
        windows.update(marks=punctuation("above", threshold=8.5), newest3=policy_window("max_size", 10, n=3))
        client.create_stream("py", windows, monoid="sum", allowed_lateness=LATENESS)
        for batch, watermark in workload(7):
            engine.insert_many(batch)
            assert client.stream_insert("py", batch, watermark) == engine.advance(watermark)
        assert client.advance("py", 10_000.5) == engine.advance(10_000.5)
        client.add_query("py", "t5", Tumbling(5))
        engine.add("t5", Tumbling(5))
        client.remove_query("py", "gap")
        engine.remove("gap")
        batch = [(10_001, 1.0), (10_003, 2.0), (10_002, 4.0)]
        engine.insert_many(batch)
        assert client.stream_insert("py", batch, 10_020) == engine.advance(10_020)
        assert client.stream_info("py").dropped == engine.dropped
        watch = client.watch_stream("py", queries=["t5"])
        batch = [(10_021, 1.0), (10_024, 2.0), (10_030, 8.0)]
        engine.insert_many(batch)
        wanted = [r for r in engine.advance(10_040) if r.query == "t5"]
        assert [r for r in client.stream_insert("py", batch, 10_040) if r.query == "t5"] == wanted
        assert [next(watch) for _ in wanted] == wanted and len(wanted) == 2
        watch.close()
        assert client.stream_plan("py") is None
        client.create_stream("hops", {"a": Sliding(30, 2), "b": Sliding(60, 4, 1)}, monoid="max", final="shared")
        shared = Stream(Max(), final="shared")
        shared.add("a", Sliding(30, 2))
        shared.add("b", Sliding(60, 4, 1))
        batch = [(t, float(t % 7)) for t in range(200)]
        shared.insert_many(batch)
        assert client.stream_insert("hops", batch, 150) == shared.advance(150)
        assert client.stream_plan("hops") == shared.plan().to_dict()
        with pytest.raises(TypeError, match="holds code"):
            stream_window(QUERIES["marks"][1])
