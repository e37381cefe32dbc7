"""`mta serve` as a real process on a free port, through a real gRPC channel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mta import TimeRange, Window
from mta.monoid import Max, Mean, Record, Sum
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent


class Server:
    """A `mta serve` child process and a channel to it."""

    def __init__(self, store: Path, *args: str, listen: str = "127.0.0.1:0", env: dict | None = None,
                 credentials: grpc.ChannelCredentials | None = None, owner: str | None = "") -> None:
        self.store, self.args, self.listen = store, args, listen
        # A name of its own that survives restarts: a restart after SIGKILL takes its windows back at once.
        self.owner = f"test-server-{id(self)}" if owner == "" else owner
        self.env, self.credentials = env or {}, credentials
        self.start()

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]), **self.env)
        self.proc = subprocess.Popen([sys.executable, "-m", "mta.cli", "serve", "--listen", self.listen,
                                      "--store", str(self.store), *self.args,
                                      *(["--owner", self.owner] if self.owner else [])],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        while line.startswith("mta serve: metrics"):
            line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise AssertionError(f"mta serve did not start: {line!r}\n{self.proc.stderr.read()[-3000:]}")
        # the server logs to stderr: drain it so that it never blocks on a full pipe
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        self.address = line.split("listening on ")[1].split(",")[0]
        self.channel = (grpc.secure_channel(self.address, self.credentials) if self.credentials
                        else grpc.insecure_channel(self.address))
        grpc.channel_ready_future(self.channel).result(timeout=60)
        self.stub = pb_grpc.AggregationStub(self.channel)

    def stop(self, sig: int = signal.SIGTERM) -> str:
        self.channel.close()
        self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=30)
        return out

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "windows.db", "--plugin", "plugins.sample_plugin", "--max-batch", "1000")
    yield s
    if s.proc.poll() is None:
        s.stop()


def spec(name: str, monoid: str = "sum", policy: tuple[str, dict] | None = ("time_range", {"width": 10.0}),
         **extra) -> pb.WindowSpec:
    out = pb.WindowSpec(name=name, monoid=pb.Component(name=monoid), **extra)
    if policy is not None:
        out.policy.name = policy[0]
        for key, value in policy[1].items():
            field = {int: "int_value", float: "float_value", str: "string_value", bool: "bool_value"}[type(value)]
            setattr(out.policy.params[key], field, value)
    return out


def batch(window: str, pairs, batch_id: str = "", **kw) -> pb.InsertRequest:
    return pb.InsertRequest(window=window, batch_id=batch_id,
                            updates=[pb.Update(ts=ts, value=v) for ts, v in pairs], **kw)


def error_of(call, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(*args)
    return caught.value


def test_health_and_reflection(server) -> None:
    health = health_pb2_grpc.HealthStub(server.channel)
    for service in ("", "mta.v1.Aggregation"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(server.channel)
    reply = next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    assert "mta.v1.Aggregation" in {s.name for s in reply.list_services_response.service}


def test_window_lifecycle_inserts_and_queries(server) -> None:
    stub = server.stub
    info = stub.CreateWindow(pb.CreateWindowRequest(spec=spec("cpu")))
    assert info.spec.name == "cpu" and info.length == 0
    local = Window(Sum(), TimeRange(10.0))
    pairs = [(ts, ts % 7) for ts in range(100)]
    for start in range(0, 100, 25):
        reply = stub.Insert(batch("cpu", pairs[start:start + 25], want_result=True))
        local.insert_many(pairs[start:start + 25])
        assert reply.inserted == 25 and reply.results[0].values["value"] == local.query()
    assert stub.Query(pb.QueryRequest(windows=["cpu"])).results[0].length == len(local)
    assert [w.spec.name for w in stub.ListWindows(pb.ListWindowsRequest()).windows] == ["cpu"]
    assert stub.GetWindow(pb.GetWindowRequest(name="cpu")).length == len(local)
    assert stub.Evict(pb.EvictRequest(window="cpu", count=3)).evicted == 3
    stub.Flush(pb.FlushRequest())
    assert stub.DeleteWindow(pb.DeleteWindowRequest(name="cpu")).deleted
    assert error_of(stub.GetWindow, pb.GetWindowRequest(name="cpu")).code() == grpc.StatusCode.NOT_FOUND


def test_dimensions_and_plugin_monoids(server) -> None:
    stub = server.stub
    dims = pb.WindowSpec(name="host", dimensions=[pb.Dimension(name="avg", monoid=pb.Component(name="mean")),
                                                  pb.Dimension(name="peak", monoid=pb.Component(name="max"))])
    stub.CreateWindow(pb.CreateWindowRequest(spec=dims))
    updates = [pb.Update(ts=i, dimensions={"avg": float(i), "peak": float(i)}) for i in range(10)]
    stub.Insert(pb.InsertRequest(window="host", updates=updates))
    result = stub.Query(pb.QueryRequest(windows=["host"])).results[0]
    expected = Window(Record(avg=Mean(), peak=Max()))
    expected.insert_many((i, {"avg": float(i), "peak": float(i)}) for i in range(10))
    assert dict(result.values) == expected.query()
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("prod", monoid="product", policy=("newest", {"n": 3}))))
    stub.Insert(batch("prod", [(0, 2.0), (1, 3.0), (2, 4.0), (3, 5.0)]))
    assert stub.Query(pb.QueryRequest(windows=["prod"])).results[0].values["value"] == 60.0


def test_a_retried_batch_is_applied_once(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=None)))
    first = stub.Insert(batch("w", [(1, 5), (2, 6)], batch_id="b-1"))
    again = stub.Insert(batch("w", [(1, 5), (2, 6)], batch_id="b-1"))
    assert (first.duplicate, again.duplicate, again.inserted) == (False, True, 0)
    assert stub.Query(pb.QueryRequest(windows=["w"])).results[0].values["value"] == 11


@pytest.mark.parametrize("request_factory, code, message", [
    (lambda: pb.CreateWindowRequest(spec=spec("a", monoid="median")), "INVALID_ARGUMENT", "unknown monoid 'median'"),
    (lambda: pb.CreateWindowRequest(spec=spec("a", policy=("max_size", {"n": "3"}))), "INVALID_ARGUMENT",
     "parameter 'n' must be int, got str"),
    (lambda: pb.CreateWindowRequest(spec=spec("a b")), "INVALID_ARGUMENT", "spec.name"),
    (lambda: pb.CreateWindowRequest(spec=pb.WindowSpec(name="a")), "INVALID_ARGUMENT", "spec.monoid"),
    (lambda: pb.CreateWindowRequest(spec=spec("a", algorithm="two_stacks")), "INVALID_ARGUMENT", "spec.algorithm"),
])
def test_bad_window_specs(server, request_factory, code, message) -> None:
    error = error_of(server.stub.CreateWindow, request_factory())
    assert error.code().name == code and message in error.details()
    assert not server.stub.ListWindows(pb.ListWindowsRequest()).windows


def test_bad_batches_are_rejected_whole(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w")))
    stub.Insert(batch("w", [(5, 1)]))
    cases = [
        (batch("w", [(6, 1), (4, 1)]), grpc.StatusCode.INVALID_ARGUMENT, "updates[1].ts: "),
        (batch("w", [(7, float("nan"))]), grpc.StatusCode.INVALID_ARGUMENT, "updates[0].value: "),
        (pb.InsertRequest(window="w", updates=[pb.Update(value=1)]), grpc.StatusCode.INVALID_ARGUMENT,
         "updates[0].ts: "),
        (batch("w", [(8 + i, 1) for i in range(1001)]), grpc.StatusCode.RESOURCE_EXHAUSTED, "limit is 1000"),
        (batch("nope", [(8, 1)]), grpc.StatusCode.NOT_FOUND, "no window 'nope'"),
    ]
    for request, code, message in cases:
        error = error_of(stub.Insert, request)
        assert error.code() == code and message in error.details(), error.details()
    result = stub.Query(pb.QueryRequest(windows=["w"])).results[0]
    assert (result.length, result.values["value"]) == (1, 1)
    assert error_of(stub.CreateWindow, pb.CreateWindowRequest(spec=spec("w"))).code() == \
        grpc.StatusCode.ALREADY_EXISTS
    assert stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w"), if_not_exists=True)).length == 1


def test_watch_and_ingest_streams(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("s", policy=None)))
    watch = stub.Watch(pb.WatchRequest(window="s"))
    assert next(watch).length == 0  # the watcher is in place before the first batch
    seen = []
    reader = threading.Thread(target=lambda: seen.extend(r.values["value"] for _, r in zip(range(3), watch)))
    reader.start()
    replies = list(stub.Ingest(iter([batch("s", [(i, 1)], want_result=True) for i in range(3)])))
    reader.join(timeout=60)
    watch.cancel()
    assert [r.results[0].values["value"] for r in replies] == [1, 2, 3]
    assert seen == [1, 2, 3]


#: How long a producer waits for an ack: long enough for a slow machine, short enough that
#: a stream that withholds its ack fails the test instead of hanging it.
ACK_DEADLINE = 20.0


def ingest_waiting_for_each_ack(stub, requests: list[pb.InsertRequest]) -> list[pb.InsertResponse]:
    """Send ``requests`` on one Ingest stream, each only once the one before is acknowledged,
    as a producer does that must know a batch is durable before it moves on. The stream
    stays open after the last batch until its ack has come."""
    acked = threading.Semaphore(0)

    def produce():
        for request in requests:
            yield request
            if not acked.acquire(timeout=2 * ACK_DEADLINE):  # the call has failed by then
                return

    replies = []
    for reply in stub.Ingest(produce(), timeout=ACK_DEADLINE):
        replies.append(reply)
        acked.release()
        if len(replies) == len(requests):
            break  # every ack came while the stream was open: done (the call is cancelled)
    return replies


@pytest.mark.parametrize("store", ["file", "memory", "redis"])
def test_ingest_acks_each_batch_while_the_producer_waits_for_it(tmp_path, request, store) -> None:
    url = {"file": str(tmp_path / "w.db"), "memory": "memory://",
           "redis": request.getfixturevalue("redis_url") if store == "redis" else ""}[store]
    name = f"acks-{tmp_path.name}"[:100]  # the session's Redis is shared
    server = Server(url)
    try:
        server.stub.CreateWindow(pb.CreateWindowRequest(spec=spec(name, policy=None)))
        requests = [batch(name, [(b * 10 + i, b) for i in range(10)], batch_id=f"b{b}", want_result=True)
                    for b in range(6)]
        replies = ingest_waiting_for_each_ack(server.stub, requests)
        assert [(r.batch_id, r.inserted) for r in replies] == [(f"b{b}", 10) for b in range(6)]
        assert [r.results[0].values["value"] for r in replies] == [10 * sum(range(b + 1)) for b in range(6)]
        if store != "memory":  # acknowledged means durable: every batch survives a SIGKILL
            server.restart(signal.SIGKILL)
            result = server.stub.Query(pb.QueryRequest(windows=[name])).results[0]
            assert (result.length, result.values["value"]) == (60, 10 * sum(range(6)))
    finally:
        server.stop()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_restarted_server_has_every_acknowledged_update(server, sig) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("r", policy=("max_size", {"n": 50}))))
    for b in range(20):
        stub.Insert(batch("r", [(b * 10 + i, b) for i in range(10)], batch_id=f"b{b}"))
    before = stub.Query(pb.QueryRequest(windows=["r"])).results[0]
    server.restart(sig)
    stub = server.stub
    after = stub.Query(pb.QueryRequest(windows=["r"])).results[0]
    # MaxSize(50): the last five batches of ten, valued 15..19
    assert (after.length, after.values["value"]) == (before.length, before.values["value"]) == (50, 850)
    assert stub.Insert(batch("r", [(195, 19)], batch_id="b19")).duplicate  # a retry after the restart
    assert stub.Query(pb.QueryRequest(windows=["r"])).results[0].values["value"] == before.values["value"]


def test_the_python_client_batches_and_retries_through_a_restart(tmp_path) -> None:
    from kvs.servers import free_port
    from mta.client import Client

    server = Server(tmp_path / "w.db", listen=f"127.0.0.1:{free_port()}")
    try:
        with Client(server.address, backoff=0.05) as client:
            client.create("c", monoid="sum", policy=("max_size", {"n": 1000}))
            client.create("c", monoid="sum", policy=("max_size", {"n": 1000}))  # if_not_exists
            with client.batcher("c", size=100) as batcher:
                for ts in range(250):
                    batcher.add(ts, 1)
            assert batcher.sent == 250 and client.query("c") == {"value": 250}
            assert client.insert("c", [(250, 1)], batch_id="x").duplicate is False
            server.stop()
            restarter = threading.Timer(1.0, server.start)
            restarter.start()
            reply = client.insert("c", [(250, 1)], batch_id="x")  # waits for the server, then retries
            restarter.join()
            assert reply.duplicate and client.query("c") == {"value": 251}
            client.create("d", dimensions={"avg": "mean", "top": "max"})
            client.insert("d", [(0, {"avg": 1.0, "top": 1.0}), (1, {"avg": 3.0, "top": 3.0})])
            assert client.query("d") == {"avg": 2.0, "top": 3.0}
            client.create("m", monoid="max", keyed=True)
            with client.batcher("m", size=2) as batcher:
                for ts, value, host in [(0, 1.0, "h1"), (0, 5.0, "h2"), (1, 2.0, "h1")]:
                    batcher.add(ts, value, host)
            assert client.results("m") == {"h1": {"value": 2.0}, "h2": {"value": 5.0}}
            assert client.query("m", "h2") == {"value": 5.0}
            with pytest.raises(TypeError, match="parameter 'n'"):
                client.create("e", monoid="sum", policy=("max_size", {"n": [1]}))
    finally:
        if server.proc.poll() is None:
            server.stop()


def test_a_token_is_required_when_configured(tmp_path) -> None:
    server = Server(tmp_path / "w.db", env={"MTA_TOKEN": "s3cret"})
    try:
        stub = server.stub
        for call, request in [(stub.ListWindows, pb.ListWindowsRequest()),
                              (lambda r: list(stub.Watch(r)), pb.WatchRequest(window="x"))]:
            error = error_of(call, request)
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED and "bearer token" in error.details()
        wrong = (("authorization", "Bearer nope"),)
        assert error_of(lambda r: stub.ListWindows(r, metadata=wrong), pb.ListWindowsRequest()).code() == \
            grpc.StatusCode.UNAUTHENTICATED
        good = (("authorization", "Bearer s3cret"),)
        stub.CreateWindow(pb.CreateWindowRequest(spec=spec("t")), metadata=good)
        assert [w.spec.name for w in stub.ListWindows(pb.ListWindowsRequest(), metadata=good).windows] == ["t"]
        from mta.client import Client
        with Client(server.address, token="s3cret") as client:
            client.insert("t", [(1, 4)])
            assert client.query("t") == {"value": 4}
        health = health_pb2_grpc.HealthStub(server.channel)  # probes need no secret
        assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _certificates(d: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
             "-days", "2", "-subj", "/CN=test-ca")
    for name, extra in [("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")]:
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / f"{name}.key"), "-out",
                 str(d / f"{name}.csr"), "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text(extra + "\n")
        _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
                 "-CAcreateserial", "-out", str(d / f"{name}.pem"), "-days", "2", "-extfile", str(d / f"{name}.ext"))


def test_mutual_tls(tmp_path) -> None:
    _certificates(tmp_path)
    read = lambda name: (tmp_path / name).read_bytes()  # noqa: E731
    client_creds = grpc.ssl_channel_credentials(read("ca.pem"), read("client.key"), read("client.pem"))
    server = Server(tmp_path / "w.db", "--tls-cert", str(tmp_path / "server.pem"), "--tls-key",
                    str(tmp_path / "server.key"), "--tls-client-ca", str(tmp_path / "ca.pem"), credentials=client_creds)
    try:
        server.stub.CreateWindow(pb.CreateWindowRequest(spec=spec("m")))
        assert server.stub.GetWindow(pb.GetWindowRequest(name="m")).spec.name == "m"
        for channel in [grpc.secure_channel(server.address, grpc.ssl_channel_credentials(read("ca.pem"))),
                        grpc.insecure_channel(server.address)]:  # no client certificate / no TLS at all
            with channel:
                # refused at the handshake: UNAVAILABLE at once (the deadline is only a bound)
                error = error_of(lambda r: pb_grpc.AggregationStub(channel).GetWindow(r, timeout=60),
                                 pb.GetWindowRequest(name="m"))
                assert error.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop()


def test_prometheus_metrics(tmp_path) -> None:
    import urllib.request

    from kvs.servers import free_port

    port = free_port()
    server = Server(tmp_path / "w.db", "--metrics-listen", f"127.0.0.1:{port}")
    try:
        stub = server.stub
        stub.CreateWindow(pb.CreateWindowRequest(spec=spec("p", policy=("max_size", {"n": 3}))))
        stub.Insert(batch("p", [(i, 1) for i in range(5)]))
        error_of(stub.GetWindow, pb.GetWindowRequest(name="missing"))
        # a call is counted once its reply is sent, which the client may see first: scrape until it is
        deadline = time.monotonic() + 30
        while True:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read().decode()
            if 'method="GetWindow"' in text or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert 'mta_requests_total{code="OK",method="Insert"} 1.0' in text
        assert 'mta_requests_total{code="NOT_FOUND",method="GetWindow"} 1.0' in text
        assert "mta_updates_total 5.0" in text and "mta_evictions_total 2.0" in text
        assert 'mta_request_seconds_count{method="Insert"} 1.0' in text
        writes = [line for line in text.splitlines() if line.startswith('mta_store_round_trips_total{kind="write"}')]
        assert writes and float(writes[0].split()[-1]) >= 2
    finally:
        server.stop()


def test_sigkill_mid_stream_on_redis_loses_no_acknowledged_batch_and_counts_retries_once(tmp_path, redis_url) -> None:
    """A client sends batches with ids; the server (Redis store) is SIGKILLed mid-stream and
    restarted; the client's retries go through, and every batch is counted exactly once."""
    import uuid

    from kvs.servers import free_port
    from mta.client import Client

    prefix = uuid.uuid4().hex[:8]
    server = Server(tmp_path / "unused.db", listen=f"127.0.0.1:{free_port()}")
    server.stop()
    server.store = redis_url  # the windows live in the test session's Redis
    server.start()
    acked: list[int] = []
    try:
        with Client(server.address, backoff=0.05, retries=40) as client:
            client.create(f"{prefix}-k", monoid="sum")

            def send() -> None:
                for b in range(120):
                    client.insert(f"{prefix}-k", [(b * 10 + i, b) for i in range(10)], batch_id=f"{prefix}-{b}")
                    acked.append(b)

            sender = threading.Thread(target=send)
            sender.start()
            while len(acked) < 40 and sender.is_alive():  # kill the server mid-stream
                time.sleep(0.005)
            server.stop(signal.SIGKILL)
            server.start()
            sender.join(timeout=120)
            assert acked == list(range(120))
            assert client.query(f"{prefix}-k") == {"value": sum(10 * b for b in range(120))}
    finally:
        if server.proc.poll() is None:
            server.stop()


def test_json_logs(tmp_path) -> None:
    import json

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "mta.cli", "serve", "--listen", "127.0.0.1:0", "--store",
                             str(tmp_path / "w.db"), "--log-format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert "listening on" in proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    entries = [json.loads(line) for line in err.splitlines()]
    listening = next(e for e in entries if e.get("event") == "listening")
    assert listening["level"] == "INFO" and listening["store"].endswith("w.db") and listening["windows"] == 0
    assert any(e.get("event") == "shutdown" for e in entries)


# -- keyed windows -------------------------------------------------------------------


def keyed_batch(window: str, triples, batch_id: str = "", **kw) -> pb.InsertRequest:
    return pb.InsertRequest(window=window, batch_id=batch_id,
                            updates=[pb.Update(ts=ts, value=v, key=k) for ts, v, k in triples], **kw)


def by_key(results) -> dict[str, tuple[int, float | None]]:
    return {r.key: (r.length, r.values["value"] if "value" in r.values else None) for r in results}


def test_a_keyed_window_keeps_one_window_per_key(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("k", keyed=True, policy=("time_range", {"width": 5.0}))))
    local = {key: Window(Sum(), TimeRange(5.0)) for key in "abc"}
    # timestamps are per key: "b" may be older than "a"'s newest
    triples = [(ts, ts % 4, "abc"[ts % 3]) for ts in range(30)] + [(3, 1, "z")]
    for start in range(0, len(triples), 8):
        chunk = triples[start:start + 8]
        reply = stub.Insert(keyed_batch("k", chunk, want_result=True))
        for ts, v, key in chunk:
            local.setdefault(key, Window(Sum(), TimeRange(5.0))).insert(ts, v)
        assert by_key(reply.results) == {key: (len(local[key]), local[key].query()) for _, _, key in chunk}
    expected = {key: (len(w), w.query()) for key, w in local.items()}
    assert by_key(stub.Query(pb.QueryRequest(windows=["k"])).results) == expected
    assert by_key(stub.Query(pb.QueryRequest(windows=["k"], keys=["c", "nobody"])).results) == \
        {"c": expected["c"], "nobody": (0, 0)}  # a key without updates: an empty sum
    info = stub.GetWindow(pb.GetWindowRequest(name="k"))
    assert (info.keys, info.length) == (4, sum(n for n, _ in expected.values()))
    assert [w.spec.name for w in stub.ListWindows(pb.ListWindowsRequest()).windows] == ["k"]
    assert stub.Evict(pb.EvictRequest(window="k", key="a", count=2)).evicted == 2
    local["a"].evict(2)
    assert by_key(stub.Query(pb.QueryRequest(windows=["k"], keys=["a"])).results)["a"] == \
        (len(local["a"]), local["a"].query())
    assert stub.Evict(pb.EvictRequest(window="k", key="nobody", count=2)).evicted == 0


def test_keyed_windows_reject_bad_batches_whole(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("k", keyed=True, policy=None)))
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("plain", policy=None)))
    stub.Insert(keyed_batch("k", [(5, 1, "a")]))
    cases = [
        # key "a" goes back in time: "b" (new) and "c" must not change either
        (keyed_batch("k", [(9, 1, "b"), (6, 1, "a"), (4, 1, "a"), (1, 1, "c")]), "updates[2].ts: "),
        (keyed_batch("k", [(9, 1, "b"), (9, float("nan"), "c")]), "updates[1].value: "),
        (keyed_batch("k", [(9, 1, "b"), (9, 1, "")]), "updates[1].key"),
        (keyed_batch("k", [(9, 1, "x" * 1025)]), "updates[0].key"),
        (keyed_batch("plain", [(9, 1, "b")]), "updates[0].key: window 'plain' is not keyed"),
    ]
    for request, message in cases:
        error = error_of(stub.Insert, request)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and message in error.details(), error.details()
    assert by_key(stub.Query(pb.QueryRequest(windows=["k"])).results) == {"a": (1, 1)}
    assert stub.GetWindow(pb.GetWindowRequest(name="k")).keys == 1
    for call, request, message in [
        (stub.Evict, pb.EvictRequest(window="k", count=1), "key: required"),
        (stub.Evict, pb.EvictRequest(window="plain", key="a", count=1), "key: window 'plain' is not keyed"),
        (stub.Query, pb.QueryRequest(windows=["plain"], keys=["a"]), "keys: window 'plain' is not keyed"),
        (stub.CreateWindow, pb.CreateWindowRequest(spec=spec("x:key:y")), "spec.name"),
        (stub.CreateWindow, pb.CreateWindowRequest(spec=spec("x" * 170, keyed=True)), "keyed window"),
    ]:
        error = error_of(call, request)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and message in error.details(), error.details()


def test_keyed_windows_survive_a_kill_and_retries_count_once(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("k", keyed=True, policy=("max_size", {"n": 5}))))
    for b in range(10):
        stub.Insert(keyed_batch("k", [(b, b, key) for key in ("h1", "h2", f"only{b % 3}")], batch_id=f"b{b}"))
    before = by_key(stub.Query(pb.QueryRequest(windows=["k"])).results)
    assert before["h1"] == (5, 5 + 6 + 7 + 8 + 9) and len(before) == 5
    watch = stub.Watch(pb.WatchRequest(window="k", keys=["h2"]))
    assert by_key([next(watch)]) == {"h2": before["h2"]}
    server.restart(signal.SIGKILL)
    stub = server.stub
    assert by_key(stub.Query(pb.QueryRequest(windows=["k"])).results) == before
    retry = stub.Insert(keyed_batch("k", [(9, 9, "h1"), (9, 9, "h2"), (9, 9, "only0")], batch_id="b9"))
    assert retry.duplicate and retry.inserted == 0
    watch = stub.Watch(pb.WatchRequest(window="k", keys=["h2"]))
    assert next(watch).key == "h2"
    stub.Insert(keyed_batch("k", [(10, 1, "h1"), (10, 1, "h2")]))
    assert by_key([next(watch)]) == {"h2": (5, 6 + 7 + 8 + 9 + 1)}  # only the keys watched
    watch.cancel()


def test_deleting_a_keyed_window_deletes_its_keys_even_after_a_crash(server) -> None:
    import kvs

    stub = server.stub
    for name in ("gone", "kept"):
        stub.CreateWindow(pb.CreateWindowRequest(spec=spec(name, keyed=True, policy=None)))
        stub.Insert(keyed_batch(name, [(1, 1, key) for key in "abc"]))
    assert stub.DeleteWindow(pb.DeleteWindowRequest(name="gone")).deleted
    server.stop()
    backend = kvs.connect(str(server.store))
    assert sorted(n for n in backend.windows() if n.startswith("gone")) == []
    assert len([n for n in backend.windows() if n.startswith("kept")]) == 4
    backend.delete("kept")  # as if a crash had cut DeleteWindow short after the spec
    kvs.disconnect(str(server.store))
    server.start()
    assert not server.stub.ListWindows(pb.ListWindowsRequest()).windows
    backend = kvs.connect(str(server.store))
    try:
        assert backend.windows() == []  # the orphaned keys were dropped at start
    finally:
        kvs.disconnect(str(server.store))


# -- batches in columns ----------------------------------------------------------------


def test_columns_give_the_same_windows_as_updates(server) -> None:
    stub = server.stub
    for name in ("rows", "cols"):
        stub.CreateWindow(pb.CreateWindowRequest(spec=spec(name, monoid="mean", keyed=True)))
    triples = [(ts, float(ts % 5), f"h{ts % 3}") for ts in range(40)]
    stub.Insert(keyed_batch("rows", triples))
    stub.Insert(pb.InsertRequest(window="cols", columns=pb.Columns(
        ts=[t for t, _, _ in triples], values=[v for _, v, _ in triples], keys=[k for _, _, k in triples])))
    rows, cols = (by_key(stub.Query(pb.QueryRequest(windows=[n])).results) for n in ("rows", "cols"))
    assert rows == cols and len(cols) == 3
    dims = pb.WindowSpec(name="d", dimensions=[pb.Dimension(name="avg", monoid=pb.Component(name="mean")),
                                               pb.Dimension(name="top", monoid=pb.Component(name="max"))])
    stub.CreateWindow(pb.CreateWindowRequest(spec=dims))
    stub.Insert(pb.InsertRequest(window="d", columns=pb.Columns(
        ts_float=[0.5, 1.5], dimensions={"avg": pb.Doubles(values=[1, 3]), "top": pb.Doubles(values=[4, 2])})))
    assert dict(stub.Query(pb.QueryRequest(windows=["d"])).results[0].values) == {"avg": 2.0, "top": 4.0}


def test_bad_columns_are_rejected_whole(server) -> None:
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w")))
    stub.Insert(pb.InsertRequest(window="w", columns=pb.Columns(ts=[5], values=[1])))
    cases = [
        (pb.Columns(ts=[6, 7], values=[1]), grpc.StatusCode.INVALID_ARGUMENT, "columns.values: 1 entries for 2"),
        (pb.Columns(ts=[6], ts_float=[7.0], values=[1]), grpc.StatusCode.INVALID_ARGUMENT, "columns.ts, columns.ts_float"),
        (pb.Columns(ts=[6, 4], values=[1, 1]), grpc.StatusCode.INVALID_ARGUMENT, "columns.ts[1]: "),
        (pb.Columns(ts=[6, 7], values=[1, float("inf")]), grpc.StatusCode.INVALID_ARGUMENT, "columns.values[1]: "),
        (pb.Columns(ts=[6], values=[1], keys=["a"]), grpc.StatusCode.INVALID_ARGUMENT, "columns.keys[0]"),
        (pb.Columns(ts=[6], values=[1], payloads=[b"\x01"]), grpc.StatusCode.INVALID_ARGUMENT, "send one"),
        (pb.Columns(ts=range(10, 1011), values=[1] * 1001), grpc.StatusCode.RESOURCE_EXHAUSTED,
         "columns: 1001 in one batch"),
    ]
    for columns, code, message in cases:
        error = error_of(stub.Insert, pb.InsertRequest(window="w", columns=columns))
        assert error.code() == code and message in error.details(), error.details()
    both = pb.InsertRequest(window="w", updates=[pb.Update(ts=9, value=1)], columns=pb.Columns(ts=[9], values=[1]))
    assert "send one of them" in error_of(stub.Insert, both).details()
    result = stub.Query(pb.QueryRequest(windows=["w"])).results[0]
    assert (result.length, result.values["value"]) == (1, 1)


class Gate:
    """The file gate of ``plugins.gate_plugin``: a batch on a window with policy
    ``gate`` waits inside the server until the test opens the gate."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def policy(self) -> tuple[str, dict]:
        return "gate", {"path": str(self.path)}

    def wait_entered(self, timeout: float = 60.0) -> None:
        """Until a batch is inside the gate."""
        entered = Path(f"{self.path}.entered")
        deadline = time.monotonic() + timeout
        while not entered.exists():
            assert time.monotonic() < deadline, "no batch reached the gate"
            time.sleep(0.01)

    def open(self) -> None:
        self.path.touch()


@pytest.fixture
def gated(tmp_path):
    """A server with the gate plugin (a file store: batches are applied in a worker thread)."""
    gate = Gate(tmp_path / "gate")
    s = Server(tmp_path / "windows.db", "--plugin", "plugins.gate_plugin", "--grace", "30")
    yield s, gate
    gate.open()  # whatever the test did, nothing stays blocked
    if s.proc.poll() is None:
        s.stop()


def test_deadlines_are_honoured_and_a_retry_after_one_counts_once(gated) -> None:
    """The server holds the batch (gate) until the client's deadline has passed: the client
    gets DEADLINE_EXCEEDED whatever the machine's speed, the batch is applied all the same,
    and its retry is acknowledged as a duplicate."""
    server, gate = gated
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("d", policy=gate.policy())))
    request = pb.InsertRequest(window="d", batch_id="late", columns=pb.Columns(ts=range(1000), values=[1] * 1000))
    late = stub.Insert.future(request, timeout=2)
    gate.wait_entered()
    assert late.exception().code() == grpc.StatusCode.DEADLINE_EXCEEDED  # the gate is still shut
    assert stub.GetWindow(pb.GetWindowRequest(name="d")).length == 0  # the server goes on meanwhile
    gate.open()
    retry = stub.Insert(request, timeout=30)
    assert retry.duplicate and retry.inserted == 0
    result = stub.Query(pb.QueryRequest(windows=["d"])).results[0]
    assert (result.length, result.values["value"]) == (1000, 1000)
    watch = stub.Watch(pb.WatchRequest(window="d"), timeout=0.5)  # a stream that never ends by itself
    with pytest.raises(grpc.RpcError) as caught:
        for _ in watch:
            pass
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert stub.GetWindow(pb.GetWindowRequest(name="d")).length == 1000  # the server goes on


def test_sigterm_ends_open_streams_at_once_finishes_calls_in_flight_and_flushes(gated, tmp_path) -> None:
    """With a Watch, an idle Ingest and a health Watch stream open and an Insert held inside
    the server, SIGTERM ends the Watch and the Ingest at once (UNAVAILABLE, "server shutting
    down") while the Insert is still in flight; the Insert then completes, the health Watch
    (NOT_SERVING, then UNAVAILABLE) ends, every window is flushed, and the process exits
    with 0 long before its grace period (30 s) would have run out."""
    import kvs

    server, gate = gated
    stub = server.stub
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("w", policy=None)))
    stub.CreateWindow(pb.CreateWindowRequest(spec=spec("g", policy=gate.policy())))
    watch = stub.Watch(pb.WatchRequest(window="w"))
    assert next(watch).length == 0  # the stream is open
    health = health_pb2_grpc.HealthStub(server.channel).Watch(health_pb2.HealthCheckRequest())
    assert next(health).status == health_pb2.HealthCheckResponse.SERVING  # as a client-side health check
    idle = threading.Event()

    def produce():
        yield batch("w", [(1, 5)], batch_id="i1")
        idle.wait(60)  # a producer with nothing more to send, for now

    ingest = stub.Ingest(produce())
    assert next(ingest).batch_id == "i1"
    assert next(watch).values["value"] == 5
    held = stub.Insert.future(batch("g", [(1, 7)], batch_id="held"), timeout=60)
    gate.wait_entered()
    signalled = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    for stream in (watch, ingest):
        with pytest.raises(grpc.RpcError) as ended:
            next(stream)
        assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "server shutting down" in ended.value.details()
    assert not held.done()  # the streams did not wait for the call in flight
    assert next(health).status == health_pb2.HealthCheckResponse.NOT_SERVING
    gate.open()
    assert held.result().inserted == 1  # and the call was not cut short
    with pytest.raises(grpc.RpcError) as ended:  # streams of other services end once calls are done
        next(health)
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
    out, _ = server.proc.communicate(timeout=60)
    idle.set()
    assert server.proc.returncode == 0 and "every window flushed" in out
    assert time.monotonic() - signalled < 15  # the grace period is 30 s: nothing waited for it
    backend = kvs.connect(str(server.store))
    try:
        assert Window.open(backend, "w", Sum()).query() == 5
        assert Window.open(backend, "g", Sum(), lambda total, old: False).query() == 7
    finally:
        kvs.disconnect(str(server.store))


@pytest.mark.parametrize("updates", [[(5, True)], [(5, 1.0), (6.5, False)], [(5, {"a": 1.0}), (6, {"a": True})]])
def test_the_client_refuses_bools_which_would_go_as_numbers(updates) -> None:
    """On the wire a bool is a double (1.0 or 0.0); the library refuses bools, so the client
    does, whether the batch goes in columns or as messages."""
    from mta.client import _batch

    with pytest.raises(TypeError, match="a bool is not a number"):
        _batch(pb.InsertRequest(), updates)
