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

Every batch carries an id, so a batch retried after a lost reply or a server
restart is applied once.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterable, Mapping

import grpc

from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc

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
        out.dimensions.update(value)
    else:
        out.value = value
    return out


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
            out.dimensions[name].values.extend(v[name] for v in values)
    else:
        out.values.extend(values)
    if len(table) > 2 and any(table[2]):
        out.keys.extend(table[2])
    return out


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
        updates = list(updates)
        request = pb.InsertRequest(window=window, batch_id=batch_id or uuid.uuid4().hex)
        try:
            batch = columns(updates)
        except (KeyError, TypeError, ValueError):  # uneven updates: as messages, for the server to name the bad one
            batch = None
        if batch is not None:
            request.columns.CopyFrom(batch)
        else:
            request.updates.extend(update(*u) for u in updates)
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

    def batcher(self, window: str, size: int = 1000) -> Batcher:
        return Batcher(self, window, size)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


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
