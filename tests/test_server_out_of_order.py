"""Out-of-order windows (algorithm "fiba", issue #16) through `mta serve`: a real server
process and a real gRPC channel, against a naive oracle of sorted lists.

The oracle keeps every update as (timestamp, arrival, value) in that order, so equal
timestamps keep their arrival order (the order-sensitive monoids first and last see it),
judges the policy in timestamp order, and keeps the window's frontier (the newest
timestamp that has left): a batch with an update older than the frontier is refused
whole under late "refuse"."""

from __future__ import annotations

import signal
import uuid
from typing import Any

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from test_server import Server, batch, error_of, spec
from mta.client import time_range
from mta.v1 import aggregation_pb2 as pb

#: One monoid per kind of result: count and sum (commutative), first and last (not).
DIMENSIONS = {"n": "count", "total": "sum", "first": "first", "last": "last"}


class Oracle:
    """One window (or one key of a keyed window) as a sorted list."""

    def __init__(self, policy: tuple[str, dict] | None, late: str = "refuse") -> None:
        self.policy, self.late = policy, late
        self.items: list[tuple[Any, int, float]] = []  # (timestamp, arrival, value), sorted
        self.arrivals = 0
        self.frontier: Any = None

    def is_late(self, ts: Any) -> bool:
        return self.late == "refuse" and self.frontier is not None and ts < self.frontier

    def insert(self, pairs: list[tuple[Any, float]]) -> int:
        """Insert a batch (none of it late), then enforce the policy; return how many left."""
        for ts, value in pairs:
            self.items.append((ts, self.arrivals, value))
            self.arrivals += 1
        self.items.sort(key=lambda item: item[:2])
        return self._enforce()

    def _enforce(self) -> int:
        if self.policy is None or not self.items:
            return 0
        name, params = self.policy
        if name == "time_range":  # the window is (newest - width, newest]
            newest = self.items[-1][0]
            gone = sum(1 for ts, _, _ in self.items if newest - ts >= params["width"])
        else:  # max_size: the n newest by (timestamp, arrival)
            gone = max(0, len(self.items) - params["n"])
        if gone:
            last = self.items[gone - 1][0]
            self.frontier = last if self.frontier is None else max(self.frontier, last)
            del self.items[:gone]
        return gone

    def retract(self, ts: Any) -> int:
        kept = [item for item in self.items if item[0] != ts]
        count = len(self.items) - len(kept)
        self.items = kept
        return count

    def result(self, low: Any = None, high: Any = None) -> tuple[int, dict[str, float]]:
        """(length, values) of the updates with low <= ts <= high, as the server sends them:
        count and sum of nothing are 0, first and last of nothing are absent."""
        values = [v for ts, _, v in self.items if (low is None or ts >= low) and (high is None or ts <= high)]
        out = {"n": float(len(values)), "total": float(sum(values))}
        if values:
            out.update(first=values[0], last=values[-1])
        return len(values), out


def fiba_spec(name: str, policy: tuple[str, dict] | None, *, late: str = "", keyed: bool = False) -> pb.WindowSpec:
    out = spec(name, policy=policy, algorithm="fiba", late=late, keyed=keyed)
    out.ClearField("monoid")
    out.dimensions.extend(pb.Dimension(name=d, monoid=pb.Component(name=m)) for d, m in DIMENSIONS.items())
    return out


def rows(window: str, triples: list[tuple[Any, float, str]], batch_id: str = "") -> pb.InsertRequest:
    return pb.InsertRequest(window=window, batch_id=batch_id, updates=[
        pb.Update(ts=ts, key=key, dimensions={d: value for d in DIMENSIONS}) for ts, value, key in triples])


def seen(results) -> dict[str, tuple[int, dict[str, float]]]:
    return {r.key: (r.length, dict(r.values)) for r in results}


def query(stub, name: str, low: Any = None, high: Any = None, keys: list[str] | None = None) -> dict:
    request = pb.QueryRequest(windows=[name], keys=keys or [])
    if low is not None or high is not None:
        request.range.CopyFrom(time_range(low, high))
    return seen(stub.Query(request).results)


def expected_fault(oracles: dict[str, Oracle], triples: list[tuple[Any, float, str]]) -> tuple[int, Any, Any] | None:
    """(position, timestamp, frontier) of the late update the server names, None if none is
    late: the first late update of the first key (in order of first appearance) with one."""
    for key in dict.fromkeys(k for _, _, k in triples):
        oracle = oracles.get(key) or Oracle(None)
        for position, (ts, _, k) in enumerate(triples):
            if k == key and oracle.is_late(ts):
                return position, ts, oracle.frontier
    return None


def apply(stub, name: str, oracles: dict[str, Oracle], triples: list[tuple[Any, float, str]],
          make: Any) -> None:
    """Send a batch and check the reply against the oracles (refused whole when one is late)."""
    fault = expected_fault(oracles, triples)
    if fault is not None:
        position, ts, frontier = fault
        error = error_of(stub.Insert, rows(name, triples))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error.details().startswith(f"updates[{position}].ts: timestamp {ts!r} is late: older than "
                                          f"{frontier!r}"), error.details()
        return
    evicted = 0
    for key in dict.fromkeys(k for _, _, k in triples):
        evicted += oracles.setdefault(key, make()).insert([(ts, v) for ts, v, k in triples if k == key])
    reply = stub.Insert(rows(name, triples, batch_id=uuid.uuid4().hex))
    assert (reply.inserted, reply.evicted) == (len(triples), evicted)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server (sqlite file store: durable, so range queries and retractions read in the
    applier thread) for the whole module; every test uses windows of its own name."""
    s = Server(tmp_path_factory.mktemp("ooo") / "windows.db", "--max-batch", "1000")
    yield s
    if s.proc.poll() is None:
        s.stop()


POLICIES = st.sampled_from([None, ("time_range", {"width": 8}), ("max_size", {"n": 5})])
#: Timestamps in a short span: equal ones are frequent, and so are late ones.
TRIPLES = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 9).map(float), st.sampled_from("ab")),
                   min_size=1, max_size=12)


@given(policy=POLICIES, late=st.sampled_from(["", "include"]), keyed=st.booleans(),
       steps=st.lists(st.one_of(TRIPLES.map(lambda t: ("insert", t)),
                                st.tuples(st.just("retract"), st.integers(0, 40), st.sampled_from("ab"))),
                      min_size=1, max_size=8),
       ranges=st.lists(st.tuples(st.none() | st.integers(0, 40), st.none() | st.integers(0, 40)), max_size=3))
@hsettings(max_examples=40)
def test_out_of_order_batches_give_the_oracles_answers(server, policy, late, keyed, steps, ranges) -> None:
    stub, name = server.stub, f"ooo-{uuid.uuid4().hex[:12]}"
    width = policy[1]["width"] if policy and policy[0] == "time_range" else None
    if width is not None:  # the policy's parameter is a float on the wire
        policy = ("time_range", {"width": float(width)})
    stub.CreateWindow(pb.CreateWindowRequest(spec=fiba_spec(name, policy, late=late, keyed=keyed)))

    def make() -> Oracle:
        return Oracle(policy, late or "refuse")

    oracles: dict[str, Oracle] = {} if keyed else {"": make()}
    for step in steps:
        if step[0] == "insert":
            triples = [(ts, v, k if keyed else "") for ts, v, k in step[1]]
            apply(stub, name, oracles, triples, make)
        else:
            _, ts, key = step
            key = key if keyed else ""
            reply = stub.Retract(pb.RetractRequest(window=name, key=key, ts=ts))
            assert reply.retracted == (oracles[key].retract(ts) if key in oracles else 0)
        assert query(stub, name) == {key: oracle.result() for key, oracle in sorted(oracles.items())}
    for low, high in ranges:
        if low is not None and high is not None and low > high:
            low, high = high, low
        assert query(stub, name, low, high) == {key: o.result(low, high) for key, o in sorted(oracles.items())}
    stub.DeleteWindow(pb.DeleteWindowRequest(name=name))


def test_a_random_permutation_equal_timestamps_and_range_queries(server) -> None:
    import random

    stub, name = server.stub, "permutation"
    stub.CreateWindow(pb.CreateWindowRequest(spec=fiba_spec(name, None)))
    updates = [(ts // 2, float(i % 7), "") for i, ts in enumerate(range(400))]  # every timestamp twice
    random.Random(16).shuffle(updates)
    oracle = Oracle(None)
    for start in range(0, len(updates), 50):
        apply(stub, name, {"": oracle}, updates[start:start + 50], lambda: oracle)
    assert query(stub, name) == {"": oracle.result()} and oracle.result()[0] == 400
    for low, high in [(0, 0), (10, 20), (None, 7), (150, None), (37, 37), (199, 1000), (-5, -1), (0.5, 1.5)]:
        assert query(stub, name, low, high) == {"": oracle.result(low, high)}, (low, high)
    assert stub.Retract(pb.RetractRequest(window=name, ts=10)).retracted == 2 == oracle.retract(10)
    assert stub.Retract(pb.RetractRequest(window=name, ts_float=10.0)).retracted == 0
    assert query(stub, name, 9, 11) == {"": oracle.result(9, 11)}


def test_late_updates_are_refused_by_their_path_and_change_nothing(server) -> None:
    stub = server.stub
    late_spec = spec("late", algorithm="fiba", policy=("time_range", {"width": 10.0}))
    stub.CreateWindow(pb.CreateWindowRequest(spec=late_spec))
    stub.Insert(batch("late", [(30, 1), (12, 2), (25, 4)]))  # 12 leaves (30 - 12 >= 10): the frontier is 12
    before = query(stub, "late")
    assert before == {"": (2, {"value": 5.0})}
    for request, where in [
        (batch("late", [(31, 1), (15, 1), (20, 1), (11, 1)]), "updates[3].ts"),
        (pb.InsertRequest(window="late", columns=pb.Columns(ts=[40, 13, 5], values=[1, 1, 1])), "columns.ts[2]"),
        (pb.InsertRequest(window="late", columns=pb.Columns(ts_float=[11.5], values=[1])), "columns.ts_float[0]"),
    ]:
        error = error_of(stub.Insert, request)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        late = request.updates[3].ts if request.updates else (request.columns.ts or request.columns.ts_float)[-1]
        assert error.details().startswith(f"{where}: timestamp {late!r} is late: older than 12,"), error.details()
        assert query(stub, "late") == before
    reply = stub.Insert(batch("late", [(12, 8)]))  # the frontier itself is not late (the policy evicts it)
    assert (reply.inserted, reply.evicted) == (1, 1) and query(stub, "late") == before


def test_keyed_windows_refuse_a_batch_with_one_late_key_whole(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("kl", algorithm="fiba", keyed=True,
                                                       policy=("max_size", {"n": 2}))))
    stub.Insert(pb.InsertRequest(window="kl", updates=[pb.Update(ts=ts, value=v, key=k) for ts, v, k in
                                                       [(5, 1, "a"), (1, 2, "a"), (3, 4, "a"), (1, 8, "b")]]))
    before = query(stub, "kl")
    assert before == {"a": (2, {"value": 5.0}), "b": (1, {"value": 8.0})}  # "a" evicted 1: its frontier
    request = pb.InsertRequest(window="kl", updates=[pb.Update(ts=ts, value=1, key=k) for ts, k in
                                                     [(0, "b"), (0, "c"), (2, "a"), (0, "a")]])
    error = error_of(stub.Insert, request)
    assert error.details().startswith("updates[3].ts: timestamp 0 is late: older than 1,"), error.details()
    assert query(stub, "kl") == before and stub.GetWindow(pb.GetWindowRequest(name="kl")).keys == 2


def test_bad_ranges_retractions_and_late_options_are_refused_by_their_path(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("inorder", policy=None)))
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("anyorder", policy=None, algorithm="fiba")))
    stub.Insert(batch("anyorder", [(3, 1), (1, 2)]))
    nan = float("nan")
    cases = [
        (stub.Query, pb.QueryRequest(windows=["anyorder", "inorder"], range=time_range(1, 2)),
         "range, windows[1]: a time range needs an out-of-order window"),
        (stub.Query, pb.QueryRequest(windows=["anyorder"], range=time_range(5, 2)),
         "range.from_ts, range.to_ts: from 5 is after to 2"),
        (stub.Query, pb.QueryRequest(windows=["anyorder"], range=time_range(nan, None)),
         "range.from_ts_float: not a number"),
        (stub.Query, pb.QueryRequest(windows=["anyorder"], range=time_range(None, nan)), "range.to_ts_float: "),
        (stub.Retract, pb.RetractRequest(window="inorder", ts=1), "ts: a retraction needs an out-of-order window"),
        (stub.Retract, pb.RetractRequest(window="anyorder"), "ts: required"),
        (stub.Retract, pb.RetractRequest(window="anyorder", ts_float=nan), "ts_float: must be finite, got nan"),
        (stub.Retract, pb.RetractRequest(window="anyorder", ts_float=float("inf")), "ts_float: must be finite"),
        (stub.Retract, pb.RetractRequest(window="anyorder", ts=1, key="k"), "key: window 'anyorder' is not keyed"),
        (stub.CreateWindow, pb.CreateWindowRequest(spec=spec("x", late="include")), "spec.late, spec.algorithm: "),
        (stub.CreateWindow, pb.CreateWindowRequest(spec=spec("x", algorithm="fiba", late="drop")),
         "spec.late: 'drop' is not one of refuse, include"),
    ]
    for call, request, message in cases:
        error = error_of(call, request)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and error.details().startswith(message), \
            error.details()
    assert error_of(stub.Retract, pb.RetractRequest(window="nope", ts=1)).code() == grpc.StatusCode.NOT_FOUND
    assert query(stub, "anyorder") == {"": (2, {"value": 3.0})}
    assert query(stub, "anyorder", 2, 2) == {"": (0, {"value": 0.0})}  # an empty range: the sum of nothing
    assert "x" not in {w.spec.name for w in stub.ListWindows(pb.ListWindowsRequest()).windows}
    assert "fiba" in {a.name for a in stub.Describe(pb.DescribeRequest()).algorithms}


def test_the_python_client_sends_out_of_order_batches_range_queries_and_retractions(server) -> None:
    from mta.client import Client

    with Client(server.address) as client:
        client.create("py", monoid="sum", policy=("time_range", {"width": 10.0}), algorithm="fiba", late="include")
        reply = client.insert("py", [(20, 1.0), (11, 2.0), (15, 4.0), (15, 8.0), (5, 32.0)])
        assert (reply.inserted, reply.evicted) == (5, 1)  # 5 left: the frontier
        assert client.insert("py", [(3, 16.0)]).evicted == 1  # late, included: the policy evicts it at once
        assert client.query("py") == {"value": 15.0}
        assert client.query("py", t_from=12, t_to=15) == {"value": 12.0}
        assert client.results("py", t_to=11.5) == {"": {"value": 2.0}}
        assert client.retract("py", 15) == 2
        assert client.query("py") == {"value": 3.0}


def test_a_restarted_server_keeps_out_of_order_windows_on_redis(tmp_path, redis_url) -> None:
    """Plain, keyed and late="include" fiba windows on Redis; SIGKILL; the restarted server
    has every acknowledged update, the frontiers, the late option and the arrival order."""
    prefix = uuid.uuid4().hex[:8]  # the session's Redis is shared
    server = Server(redis_url)
    names = {"plain": f"{prefix}-plain", "keyed": f"{prefix}-keyed", "include": f"{prefix}-include"}
    specs = {"plain": fiba_spec(names["plain"], ("time_range", {"width": 10.0})),
             "keyed": fiba_spec(names["keyed"], ("max_size", {"n": 3}), keyed=True),
             "include": fiba_spec(names["include"], ("time_range", {"width": 10.0}), late="include")}
    oracles: dict[str, dict[str, Oracle]] = {kind: {} for kind in specs}
    makers = {"plain": lambda: Oracle(("time_range", {"width": 10.0})),
              "keyed": lambda: Oracle(("max_size", {"n": 3})),
              "include": lambda: Oracle(("time_range", {"width": 10.0}), "include")}
    try:
        stub = server.stub
        for kind, window_spec in specs.items():
            stub.CreateWindow(pb.CreateWindowRequest(spec=window_spec))
            keys = "xy" if kind == "keyed" else ""
            for b, chunk in enumerate([[9, 2, 14, 7], [5, 20, 14, 11], [19, 25, 12, 14]]):
                triples = [(ts, float(ts % 5 + b), keys[i % 2] if keys else "") for i, ts in enumerate(chunk)]
                apply(stub, names[kind], oracles[kind], triples, makers[kind])
        before = {kind: (query(stub, name), query(stub, name, 12, 20)) for kind, name in names.items()}
        for kind, name in names.items():
            assert before[kind] == ({k: o.result() for k, o in sorted(oracles[kind].items())},
                                    {k: o.result(12, 20) for k, o in sorted(oracles[kind].items())})
        server.restart(signal.SIGKILL)
        stub = server.stub
        for kind, name in names.items():
            assert stub.GetWindow(pb.GetWindowRequest(name=name)).spec == specs[kind]
            assert (query(stub, name), query(stub, name, 12, 20)) == before[kind]
        # the frontiers (14 for "plain") and the late option survived: 13 is late for "plain"
        # only; equal timestamps keep arriving after the ones from before the restart (the
        # last of the updates at 25 is the newest arrival)
        for kind in names:
            key = "x" if kind == "keyed" else ""
            late_batch = [(25, 7.0, key), (13, 1.0, key)]
            assert (expected_fault(oracles[kind], late_batch) is not None) == (kind == "plain")
            apply(stub, names[kind], oracles[kind], late_batch, makers[kind])
            apply(stub, names[kind], oracles[kind], [(25, 7.0, key), (25, 3.0, key)], makers[kind])
            assert query(stub, names[kind]) == {k: o.result() for k, o in sorted(oracles[kind].items())}
        assert [v for ts, _, v in oracles["plain"][""].items if ts == 25] == [2.0, 7.0, 3.0]
    finally:
        if server.proc.poll() is None:
            for name in names.values():
                server.stub.DeleteWindow(pb.DeleteWindowRequest(name=name))
            server.stop()
