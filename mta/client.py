"""A Python client for ``mta serve``: windows by name, batched inserts with retries.

    with Client("127.0.0.1:50051") as client:
        client.create("cpu", monoid="mean", policy=("time_range", {"width": 3600.0}))
        with client.batcher("cpu", size=1000) as batch:
            for ts, value in readings:
                batch.add(ts, value)          # sent 1000 at a time, each batch with an id
        client.query("cpu")                   # {"value": ...}

        client.create("mem", monoid="max", keyed=True)   # one window per key
        client.insert("mem", [(ts, value, host) for ts, value, host in readings])
        client.results("mem")                 # {host: {"value": ...}}
        client.describe()["policies"]         # {"max_size": {"params": {"n": ...}, ...}, ...}

        client.create("late", monoid="sum", algorithm="fiba")   # updates in any timestamp order
        client.insert("late", [(9, 1.0), (3, 2.0), (5, 4.0)])
        client.query("late", t_from=4, t_to=9)                  # {"value": 5.0}: a time range
        client.retract("late", 5)                                # 1: the updates at 5 are gone

        client.create_stream("clicks", {"1m": Sliding(60, 10), "visit": Session(30),
                                        "runs": punctuation("above", threshold=100.0)},
                             monoid="sum", allowed_lateness=5)   # many window queries, one stream
        client.stream_insert("clicks", [(3, 1.0), (1, 1.0)])    # any timestamp order
        for r in client.advance("clicks", 65):                   # mta.Result, as the library's Stream
            r.query, r.start, r.end, r.value, r.final, r.replaces

Every batch carries an id, so a batch retried after a lost reply or a server
restart is applied once.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Iterable, Iterator, Mapping

import grpc
import msgpack

from mta.stream import Result
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc
from mta.windows import Count, Session, Sliding, Tumbling, WindowType

_PARAM_FIELDS = {bool: "bool_value", int: "int_value", float: "float_value", str: "string_value"}
#: Codes worth retrying: the server is restarting or briefly unreachable.
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def component(name: str, params: Mapping[str, Any] | None = None) -> pb.Component:
    """A registry component (monoid or policy) with typed parameters."""
    out = pb.Component(name=name)
    for key, value in (params or {}).items():
        try:
            setattr(out.params[key], _PARAM_FIELDS[type(value)], value)
        except KeyError:
            raise TypeError(f"parameter {key!r} must be int, float, str or bool, got {type(value).__name__}") from None
    return out


def _param_value(param: pb.Param) -> Any:
    """The value a Param carries (None when it carries none)."""
    kind = param.WhichOneof("kind")
    return getattr(param, kind) if kind else None


def update(ts: int | float, value: Any, key: str = "") -> pb.Update:
    """An update: a number, or a mapping of dimension name to number (``key``: for keyed windows)."""
    out = pb.Update(ts=ts, key=key) if isinstance(ts, int) else pb.Update(ts_float=ts, key=key)
    if isinstance(value, Mapping):
        _no_bools(value.values())
        out.dimensions.update(value)
    else:
        _no_bools((value,))
        out.value = value
    return out


class _BoolValue(TypeError):
    """A bool where a number goes: it would go on the wire as 1.0 or 0.0, where the library
    refuses bools."""


def _no_bools(values: Iterable[Any]) -> None:
    if bool in set(map(type, values)):
        raise _BoolValue(f"a bool is not a number here (the library refuses it): send 1 or 0, got "
                        f"{next(v for v in values if type(v) is bool)!r}")


def time_range(t_from: int | float | None, t_to: int | float | None) -> pb.TimeInterval | None:
    """The inclusive range ``t_from <= ts <= t_to`` of a query (None: both bounds open, no range)."""
    if t_from is None and t_to is None:
        return None
    out = pb.TimeInterval()
    if t_from is not None:
        setattr(out, "from_ts" if isinstance(t_from, int) else "from_ts_float", t_from)
    if t_to is not None:
        setattr(out, "to_ts" if isinstance(t_to, int) else "to_ts_float", t_to)
    return out


def columns(updates: list[tuple[Any, ...]]) -> pb.Columns | None:
    """``(ts, value[, key])`` updates as a Columns batch (several times cheaper than
    Update messages), or None when they do not fit one (mixed int and float times)."""
    if not updates:
        return pb.Columns()
    table = list(zip(*updates))
    times, values = table[0], table[1]
    kinds = set(map(type, times))
    out = pb.Columns(ts=times) if kinds == {int} else pb.Columns(ts_float=times) if kinds == {float} else None
    if out is None:
        return None
    if isinstance(values[0], Mapping):
        names = values[0].keys()
        if any(not isinstance(v, Mapping) or v.keys() != names for v in values):
            return None
        for name in names:
            column = [v[name] for v in values]
            _no_bools(column)
            out.dimensions[name].values.extend(column)
    else:
        _no_bools(values)
        out.values.extend(values)
    if len(table) > 2 and any(table[2]):
        out.keys.extend(table[2])
    return out


def punctuation(predicate: str, **params: Any) -> pb.StreamWindow:
    """A punctuation window whose predicate is the server's registered ``predicate``."""
    return pb.StreamWindow(punctuation=pb.PunctuationWindow(predicate=component(predicate, params)))


def policy_window(policy: str, every: float, **params: Any) -> pb.StreamWindow:
    """The server's registered slide ``policy``, reported every ``every`` time units."""
    return pb.StreamWindow(policy=pb.PolicyWindow(policy=component(policy, params), every=every))


def stream_window(window: WindowType | pb.StreamWindow) -> pb.StreamWindow:
    """A window of :mod:`mta.windows` as a stream query sends it. Punctuation and Policy
    windows hold code, which never travels: name a registered one with :func:`punctuation`
    or :func:`policy_window`."""
    if isinstance(window, pb.StreamWindow):
        return window
    if isinstance(window, Tumbling):
        return pb.StreamWindow(tumbling=pb.TumblingWindow(size=window.size, offset=window.offset))
    if isinstance(window, Sliding):
        return pb.StreamWindow(sliding=pb.SlidingWindow(size=window.size, slide=window.slide, offset=window.offset))
    if isinstance(window, Session):
        return pb.StreamWindow(session=pb.SessionWindow(gap=window.gap))
    if isinstance(window, Count):
        return pb.StreamWindow(count=pb.CountWindow(size=window.size, slide=0 if window.every else window.slide,
                                                    every=window.every or 0))
    raise TypeError(f"{window!r} holds code: name a registered predicate or policy with punctuation() or "
                    "policy_window()")


def _time(bounds: pb.Bounds, side: str) -> int | float:
    return getattr(bounds, bounds.WhichOneof(side))


def stream_result(result: pb.StreamResult) -> Result:
    """A StreamResult as the library's :class:`mta.Result`: ``value`` is the number of a
    one-monoid stream (None when it has none), or a dict by dimension; other values come
    from the payload."""
    values: Any = msgpack.unpackb(result.payload) if result.payload else dict(result.values)
    if set(values) <= {"value"}:
        values = values.get("value")
    return Result(result.query, _time(result.window, "lower"), _time(result.window, "upper"), values, result.count,
                  result.final, tuple((_time(b, "lower"), _time(b, "upper")) for b in result.replaces),
                  result.key or None)


def _batch(request: Any, updates: list[tuple[Any, ...]]) -> None:
    """Put ``(ts, value[, key])`` updates into a batch request: in columns when they fit."""
    try:
        batch = columns(updates)
    except _BoolValue:
        raise
    except (KeyError, TypeError, ValueError):  # uneven updates: as messages, for the server to name the bad one
        batch = None
    if batch is not None:
        request.columns.CopyFrom(batch)
    else:
        request.updates.extend(update(*u) for u in updates)


class Client:
    """A channel to one server; ``retries`` attempts with exponential backoff on UNAVAILABLE;
    ``credentials`` for TLS, ``token`` for a server started with a token."""

    def __init__(self, address: str, *, retries: int = 8, backoff: float = 0.1, timeout: float = 30.0,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None) -> None:
        self.channel = (grpc.secure_channel(address, credentials) if credentials is not None
                        else grpc.insecure_channel(address))
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.stub = pb_grpc.AggregationStub(self.channel)
        self.retries, self.backoff, self.timeout = retries, backoff, timeout

    def _call(self, method: Any, request: Any) -> Any:
        for attempt in range(self.retries + 1):
            try:
                return method(request, timeout=self.timeout, wait_for_ready=True, metadata=self.metadata)
            except grpc.RpcError as error:
                if error.code() not in RETRYABLE or attempt == self.retries:
                    raise
                time.sleep(min(self.backoff * 2 ** attempt, 5.0))
        raise AssertionError("unreachable")

    def create(self, name: str, monoid: str | None = None, policy: tuple[str, Mapping[str, Any]] | None = None, *,
               dimensions: Mapping[str, str] | None = None, algorithm: str = "", if_not_exists: bool = True,
               monoid_params: Mapping[str, Any] | None = None, keyed: bool = False,
               late: str = "") -> pb.WindowInfo:
        """Create window ``name`` of ``monoid`` (or named ``dimensions``: {name: monoid});
        ``keyed``: one window per update key; ``late`` (``algorithm="fiba"``, updates in any
        order): ``"refuse"`` (the default) or ``"include"`` late updates."""
        spec = pb.WindowSpec(name=name, algorithm=algorithm, keyed=keyed, late=late)
        if dimensions:
            spec.dimensions.extend(pb.Dimension(name=d, monoid=component(m)) for d, m in dimensions.items())
        elif monoid:
            spec.monoid.CopyFrom(component(monoid, monoid_params))
        if policy is not None:
            spec.policy.CopyFrom(component(*policy))
        return self._call(self.stub.CreateWindow, pb.CreateWindowRequest(spec=spec, if_not_exists=if_not_exists))

    def insert(self, window: str, updates: Iterable[tuple[Any, ...]], *,
               batch_id: str | None = None) -> pb.InsertResponse:
        """Send one batch of ``(ts, value)`` or, for a keyed window, ``(ts, value, key)``
        (acknowledged once durable); retried with the same id."""
        request = pb.InsertRequest(window=window, batch_id=batch_id or uuid.uuid4().hex)
        _batch(request, list(updates))
        return self._call(self.stub.Insert, request)

    def query(self, window: str, key: str = "", *, t_from: int | float | None = None,
              t_to: int | float | None = None) -> dict[str, float]:
        """The window's (or one key's) numeric results by dimension (``"value"`` for one monoid);
        with ``t_from``/``t_to`` (out-of-order windows), of the updates in that inclusive time range."""
        request = pb.QueryRequest(windows=[window], keys=[key] if key else [], range=time_range(t_from, t_to))
        return dict(self._call(self.stub.Query, request).results[0].values)

    def results(self, window: str, *, t_from: int | float | None = None,
                t_to: int | float | None = None) -> dict[str, dict[str, float]]:
        """Every key's numeric results (``""`` for an unkeyed window), over a time range as :meth:`query`."""
        reply = self._call(self.stub.Query, pb.QueryRequest(windows=[window], range=time_range(t_from, t_to)))
        return {r.key: dict(r.values) for r in reply.results}

    def retract(self, window: str, ts: int | float, key: str = "") -> int:
        """Remove every update at ``ts`` from an out-of-order window (or one key of it); return how many."""
        request = pb.RetractRequest(window=window, key=key, **{"ts" if isinstance(ts, int) else "ts_float": ts})
        return self._call(self.stub.Retract, request).retracted

    def describe(self) -> dict[str, dict[str, dict[str, Any]]]:
        """What the server offers: ``{"monoids"|"policies"|"predicates": {name: {"description", "params",
        "uses_timestamps"}}, "algorithms": {name: {"description", "is_default"}}}``; ``params``
        maps each parameter's name to ``{"type", "required", "default"}`` (``default`` is
        None for a required parameter)."""
        reply = self._call(self.stub.Describe, pb.DescribeRequest())

        def entry(info: pb.ComponentInfo) -> dict[str, Any]:
            params = {p.name: {"type": p.type, "required": p.required, "default": _param_value(p.default_value)}
                      for p in info.params}
            return {"description": info.description, "params": params, "uses_timestamps": info.uses_timestamps}

        return {"monoids": {m.name: entry(m) for m in reply.monoids},
                "policies": {p.name: entry(p) for p in reply.policies},
                "predicates": {p.name: entry(p) for p in reply.predicates},
                "algorithms": {a.name: {"description": a.description, "is_default": a.is_default}
                               for a in reply.algorithms}}

    # -- streams ------------------------------------------------------------------------

    def create_stream(self, name: str, queries: Mapping[str, WindowType | pb.StreamWindow], monoid: str | None = None,
                      *, dimensions: Mapping[str, str] | None = None, allowed_lateness: float = 0,
                      keyed: bool = False, late: str = "", final: str = "", optimizer: str = "",
                      if_not_exists: bool = True) -> pb.StreamInfo:
        """Create stream ``name`` with window ``queries`` by name (see :func:`stream_window`);
        ``late="side_output"`` sends the updates dropped as too late to :meth:`watch_stream`;
        ``final`` and ``optimizer`` as ``mta.Stream``'s (``final="shared"``: :meth:`stream_plan`)."""
        spec = pb.StreamSpec(name=name, allowed_lateness=allowed_lateness, keyed=keyed, late=late,
                             final=final, optimizer=optimizer,
                             queries=[pb.StreamQuery(name=q, window=stream_window(w)) for q, w in queries.items()])
        if dimensions:
            spec.dimensions.extend(pb.Dimension(name=d, monoid=component(m)) for d, m in dimensions.items())
        elif monoid:
            spec.monoid.CopyFrom(component(monoid))
        return self._call(self.stub.CreateStream, pb.CreateStreamRequest(spec=spec, if_not_exists=if_not_exists))

    def add_query(self, stream: str, name: str, window: WindowType | pb.StreamWindow) -> pb.StreamInfo:
        """Add a query; it sees the updates from the stream's current watermark on."""
        query = pb.StreamQuery(name=name, window=stream_window(window))
        return self._call(self.stub.AddQuery, pb.AddQueryRequest(stream=stream, query=query))

    def remove_query(self, stream: str, name: str) -> pb.StreamInfo:
        return self._call(self.stub.RemoveQuery, pb.RemoveQueryRequest(stream=stream, query=name))

    def stream_insert(self, stream: str, updates: Iterable[tuple[Any, ...]], watermark: int | float | None = None,
                      *, batch_id: str | None = None) -> list[Result]:
        """Send ``(ts, value)`` or, keyed, ``(ts, value, key)`` updates in any order, then advance
        to ``watermark`` if given: its results (none when a retry finds the batch applied
        before: they went to :meth:`watch_stream`)."""
        request = pb.StreamInsertRequest(stream=stream, batch_id=batch_id or uuid.uuid4().hex)
        _batch(request, list(updates))
        if watermark is not None:
            setattr(request, "watermark" if isinstance(watermark, int) else "watermark_float", watermark)
        return [stream_result(r) for r in self._call(self.stub.StreamInsert, request).results]

    def advance(self, stream: str, watermark: int | float) -> list[Result]:
        """Move the stream's watermark: the windows it closed, and updates of windows reported before."""
        request = pb.AdvanceRequest(stream=stream, **{"watermark" if isinstance(watermark, int)
                                                      else "watermark_float": watermark})
        return [stream_result(r) for r in self._call(self.stub.Advance, request).results]

    def stream_info(self, stream: str) -> pb.StreamInfo:
        """The stream's spec with its queries as they are now, its watermark and dropped count."""
        return self._call(self.stub.GetStream, pb.GetStreamRequest(name=stream))

    def stream_plan(self, stream: str) -> dict[str, Any] | None:
        """How a ``final="shared"`` stream shares its queries (``mta.optimizer.Plan.to_dict``), or None."""
        plan = self.stream_info(stream).plan
        return json.loads(plan) if plan else None

    def watch_stream(self, stream: str, keys: Iterable[str] = (), queries: Iterable[str] = ()) -> Iterator[Any]:
        """The results of every advance from the return on (:class:`mta.Result`) and, with
        ``late="side_output"``, the updates dropped as too late (``pb.Update``), until the
        returned iterator's ``close()``."""
        request = pb.StreamWatchRequest(stream=stream, keys=list(keys), queries=list(queries))
        call = self.stub.StreamWatch(request, metadata=self.metadata)
        next(call)  # the stream's info: the watch is in place
        return _Watch(call)

    def batcher(self, window: str, size: int = 1000) -> Batcher:
        return Batcher(self, window, size)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Watch:
    """The events of a StreamWatch call as results and late updates."""

    def __init__(self, call: Any) -> None:
        self.call = call

    def __iter__(self) -> _Watch:
        return self

    def __next__(self) -> Any:
        event = next(self.call)
        return stream_result(event.result) if event.HasField("result") else event.late

    def close(self) -> None:
        self.call.cancel()


class Batcher:
    """Collects updates and sends them ``size`` at a time (the rest on ``flush`` / exit)."""

    def __init__(self, client: Client, window: str, size: int) -> None:
        if size < 1:
            raise ValueError(f"batch size must be >= 1, got {size}")
        self.client, self.window, self.size = client, window, size
        self.pending: list[tuple[Any, ...]] = []
        self.sent = 0

    def add(self, ts: int | float, value: Any, key: str = "") -> None:
        self.pending.append((ts, value, key))
        if len(self.pending) >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.client.insert(self.window, self.pending)
            self.sent += len(self.pending)
            self.pending = []

    def __enter__(self) -> Batcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.flush()
