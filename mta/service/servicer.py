"""The Aggregation service: named windows built from the registry, kept in one store.

Every change is acknowledged only once it is durable: a batch is applied under
its window's lock, its commit is queued, and the reply waits for the store
(commits of concurrent batches merge in the backend's writer: group commit).
Batch ids are kept in the window's checkpoint (``Window.notes``), so a retried
batch is acknowledged again without being applied twice, even after a restart.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import grpc
import msgpack

import kvs
from mta.monoid import MonoidError, Record
from mta.service.metrics import Metrics
from mta.service.registry import Registry, RegistryError
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc
from mta.window import Window

log = logging.getLogger("mta.service")

#: Batch ids remembered per window (a retry older than this many batches is applied again).
REMEMBERED_BATCHES = 1024
#: Batches of one Ingest stream applied ahead of their replies.
INGEST_PIPELINE = 8
STORE_ALGORITHMS = ("amta", "log_mta")


class BadRequest(Exception):
    """Maps to a gRPC status with a message naming the field."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _param(value: pb.Param, where: str) -> Any:
    kind = value.WhichOneof("kind")
    if kind is None:
        raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: no value set")
    return getattr(value, kind)


@dataclass
class Hosted:
    """A served window, its spec, and the streams watching it."""

    spec: pb.WindowSpec
    window: Window
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    watchers: set[asyncio.Queue] = field(default_factory=set)


class AggregationServicer(pb_grpc.AggregationServicer):
    def __init__(self, backend: kvs.Backend, registry: Registry, *, max_batch: int = 100_000) -> None:
        self.backend = backend
        self.registry = registry
        self.max_batch = max_batch
        self.windows: dict[str, Hosted] = {}
        self.metrics = Metrics(backend)

    # -- building windows ------------------------------------------------------------

    def _build(self, spec: pb.WindowSpec) -> tuple[Any, Any, dict[str, Any]]:
        """Monoid, policy and options of ``spec`` (BadRequest naming the field)."""
        try:
            if spec.dimensions:
                names = [d.name for d in spec.dimensions]
                if len(set(names)) != len(names):
                    raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, "spec.dimensions: names must be unique")
                monoid = Record({d.name: self._monoid(d.monoid, f"spec.dimensions[{i}].monoid")
                                 for i, d in enumerate(spec.dimensions)})
            elif spec.HasField("monoid"):
                monoid = self._monoid(spec.monoid, "spec.monoid")
            else:
                raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, "spec.monoid or spec.dimensions is required")
            policy = None
            if spec.HasField("policy"):
                params = {k: _param(v, f"spec.policy.params[{k!r}]") for k, v in spec.policy.params.items()}
                policy = self.registry.policy(spec.policy.name, params)
        except (RegistryError, ValueError) as error:
            if isinstance(error, BadRequest):
                raise
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"spec: {error}") from None
        algorithm = spec.algorithm or "amta"
        if algorithm not in STORE_ALGORITHMS:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT,
                             f"spec.algorithm: {algorithm!r} is not one of {', '.join(STORE_ALGORITHMS)}")
        if spec.keyed:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, "spec.keyed: keyed windows are not supported yet")
        options: dict[str, Any] = {"algorithm": algorithm}
        for name in ("buffer_size", "cache_size", "block_size"):
            if getattr(spec.store, name):
                options[name] = getattr(spec.store, name)
        return monoid, policy, options

    def _monoid(self, component: pb.Component, where: str) -> Any:
        params = {k: _param(v, f"{where}.params[{k!r}]") for k, v in component.params.items()}
        return self.registry.monoid(component.name, params)

    async def load(self) -> None:
        """Reopen every window of the store (at start)."""
        for name in await asyncio.to_thread(self.backend.windows):
            try:
                meta = await asyncio.to_thread(self.backend.meta, name)
                spec = pb.WindowSpec.FromString(meta["labels"]["spec"])
                monoid, policy, _ = self._build(spec)  # the stored record has the options
                window = await asyncio.to_thread(Window.open, self.backend, name, monoid, policy)
            except Exception as error:  # noqa: BLE001 - one bad window must not keep the others down
                log.error("window %r not loaded: %s: %s", name, type(error).__name__, error,
                          extra={"event": "load_failed", "window": name})
                continue
            self.windows[name] = Hosted(spec, window)
        log.info("loaded %d windows from %s", len(self.windows), self.backend.url)

    def _hosted(self, name: str) -> Hosted:
        try:
            return self.windows[name]
        except KeyError:
            raise BadRequest(grpc.StatusCode.NOT_FOUND, f"no window {name!r}") from None

    # -- results ---------------------------------------------------------------------

    @staticmethod
    def _result(name: str, hosted: Hosted) -> pb.Result:
        window = hosted.window
        lowered = window.query()
        values = lowered if isinstance(window.monoid, Record) else {"value": lowered}
        result = pb.Result(window=name, length=len(window))
        other = False
        for key, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                result.values[key] = value
            elif value is not None and not (isinstance(value, float) and math.isinf(value)):
                other = True
        if other:
            result.payload = msgpack.packb(values, default=str)
        return result

    def _publish(self, name: str, hosted: Hosted) -> None:
        if hosted.watchers:
            result = self._result(name, hosted)
            for queue in hosted.watchers:
                queue.put_nowait(result)

    async def _durable(self, hosted: Hosted) -> None:
        if not hosted.window.durable:
            return
        try:
            await asyncio.to_thread(hosted.window.wait_durable)
        except kvs.StoreError as error:
            raise BadRequest(grpc.StatusCode.UNAVAILABLE, f"store: {error}") from None

    # -- RPCs ------------------------------------------------------------------------

    async def CreateWindow(self, request: pb.CreateWindowRequest, context: Any) -> pb.WindowInfo:
        spec = request.spec
        try:
            kvs.blocks.check_window_id(spec.name)
        except ValueError as error:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"spec.name: {error}") from None
        if spec.name in self.windows:
            if request.if_not_exists and self.windows[spec.name].spec == spec:
                return self._info(spec.name, self.windows[spec.name])
            raise BadRequest(grpc.StatusCode.ALREADY_EXISTS, f"window {spec.name!r} exists")
        monoid, policy, options = self._build(spec)
        try:
            window = await asyncio.to_thread(Window, monoid, policy, store=self.backend, window_id=spec.name,
                                             labels={"spec": spec.SerializeToString()}, **options)
        except kvs.StoreError as error:
            code = grpc.StatusCode.ALREADY_EXISTS if "already exists" in str(error) else grpc.StatusCode.UNAVAILABLE
            raise BadRequest(code, str(error)) from None
        hosted = self.windows[spec.name] = Hosted(spec, window)
        log.info("window created", extra={"event": "create", "window": spec.name})
        return self._info(spec.name, hosted)

    @staticmethod
    def _info(name: str, hosted: Hosted) -> pb.WindowInfo:
        return pb.WindowInfo(spec=hosted.spec, length=len(hosted.window))

    async def GetWindow(self, request: pb.GetWindowRequest, context: Any) -> pb.WindowInfo:
        return self._info(request.name, self._hosted(request.name))

    async def ListWindows(self, request: pb.ListWindowsRequest, context: Any) -> pb.ListWindowsResponse:
        return pb.ListWindowsResponse(windows=[self._info(n, h) for n, h in sorted(self.windows.items())])

    async def DeleteWindow(self, request: pb.DeleteWindowRequest, context: Any) -> pb.DeleteWindowResponse:
        hosted = self.windows.pop(request.name, None)
        if hosted is not None:
            async with hosted.lock:
                await asyncio.to_thread(hosted.window.wait_durable)
        deleted = await asyncio.to_thread(self.backend.delete, request.name)
        log.info("window deleted", extra={"event": "delete", "window": request.name})
        return pb.DeleteWindowResponse(deleted=deleted or hosted is not None)

    def _updates(self, hosted: Hosted, request: pb.InsertRequest) -> list[tuple[Any, Any]]:
        """The request's updates as (timestamp, value) pairs (BadRequest naming the update)."""
        record = isinstance(hosted.window.monoid, Record)
        out = []
        for i, update in enumerate(request.updates):
            kind = update.WhichOneof("time")
            if kind is None:
                raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"updates[{i}].time: ts or ts_float is required")
            if update.key:
                raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"updates[{i}].key: the window is not keyed")
            if update.payload:
                try:
                    value = msgpack.unpackb(update.payload, use_list=False)
                except Exception:  # noqa: BLE001 - any malformed payload is the client's error
                    raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT,
                                     f"updates[{i}].payload: not valid msgpack") from None
            elif record:
                value = dict(update.dimensions)
            else:
                value = update.value
            out.append((getattr(update, kind), value))
        return out

    async def Insert(self, request: pb.InsertRequest, context: Any) -> pb.InsertResponse:
        hosted = self._hosted(request.window)
        if len(request.updates) > self.max_batch:
            raise BadRequest(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"updates: {len(request.updates)} in one batch, the limit is {self.max_batch}")
        updates = self._updates(hosted, request)
        window = hosted.window
        async with hosted.lock:
            batches = window.notes.get("batches", ())
            duplicate = bool(request.batch_id) and request.batch_id in batches
            evicted = 0
            if not duplicate:
                try:
                    evicted = window.insert_many(updates)
                except (TypeError, ValueError, MonoidError) as error:
                    raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"updates: {error}") from None
                except kvs.StoreError as error:
                    raise BadRequest(grpc.StatusCode.UNAVAILABLE, f"store: {error}") from None
                if request.batch_id:
                    window.notes["batches"] = (*batches, request.batch_id)[-REMEMBERED_BATCHES:]
                window.flush(wait=False)
                self._publish(request.window, hosted)
            response = pb.InsertResponse(batch_id=request.batch_id, inserted=0 if duplicate else len(updates),
                                         evicted=evicted, duplicate=duplicate)
            if request.want_result:  # the window right after this batch
                response.results.append(self._result(request.window, hosted))
        await self._durable(hosted)
        self.metrics.updates.inc(response.inserted)
        self.metrics.evictions.inc(evicted)
        return response

    async def Ingest(self, request_iterator: AsyncIterator[pb.InsertRequest],
                     context: Any) -> AsyncIterator[pb.InsertResponse]:
        """Batches are applied in order as they arrive, while earlier ones become durable
        (pipelined); each reply still waits for its batch to be durable, and comes in order."""
        pending: collections.deque[asyncio.Task] = collections.deque()
        try:
            async for request in request_iterator:
                pending.append(asyncio.ensure_future(self.Insert(request, context)))
                while pending and (pending[0].done() or len(pending) >= INGEST_PIPELINE):
                    yield await pending.popleft()
            while pending:
                yield await pending.popleft()
        finally:
            for task in pending:
                task.cancel()

    async def Query(self, request: pb.QueryRequest, context: Any) -> pb.QueryResponse:
        if request.keys:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, "keys: keyed windows are not supported yet")
        names = list(request.windows) or sorted(self.windows)
        return pb.QueryResponse(results=[self._result(n, self._hosted(n)) for n in names])

    async def Evict(self, request: pb.EvictRequest, context: Any) -> pb.EvictResponse:
        hosted = self._hosted(request.window)
        async with hosted.lock:
            count = min(request.count, len(hosted.window))
            try:
                hosted.window.evict(count)
            except kvs.StoreError as error:
                raise BadRequest(grpc.StatusCode.UNAVAILABLE, f"store: {error}") from None
            hosted.window.flush(wait=False)
            self._publish(request.window, hosted)
        await self._durable(hosted)
        self.metrics.evictions.inc(count)
        return pb.EvictResponse(evicted=count)

    async def Flush(self, request: pb.FlushRequest, context: Any) -> pb.FlushResponse:
        names = list(request.windows) or sorted(self.windows)
        hosted = [self._hosted(n) for n in names]
        for h in hosted:
            async with h.lock:
                h.window.flush(wait=False)
        for h in hosted:
            await self._durable(h)
        return pb.FlushResponse()

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.Result]:
        hosted = self._hosted(request.window)
        queue: asyncio.Queue = asyncio.Queue()
        hosted.watchers.add(queue)
        try:
            yield self._result(request.window, hosted)
            while True:
                yield await queue.get()
        finally:
            hosted.watchers.discard(queue)

    async def flush_all(self) -> None:
        """Make every window durable (graceful shutdown)."""
        for hosted in self.windows.values():
            async with hosted.lock:
                hosted.window.flush(wait=False)
            await asyncio.to_thread(hosted.window.wait_durable)


def _status(method: Any) -> Any:
    """Turn BadRequest into the gRPC status it names (works for streaming RPCs too),
    and count and time every call."""
    name = method.__name__

    def done(self: Any, started: float, code: grpc.StatusCode) -> None:
        self.metrics.requests.labels(name, code.name).inc()
        self.metrics.latency.labels(name).observe(time.perf_counter() - started)

    if inspect.isasyncgenfunction(method):
        async def stream(self: Any, request: Any, context: Any) -> Any:
            started, code = time.perf_counter(), grpc.StatusCode.OK
            try:
                async for item in method(self, request, context):
                    yield item
            except BadRequest as error:
                code = error.code
                await context.abort(error.code, str(error))
            finally:
                done(self, started, code)
        return functools.wraps(method)(stream)

    async def unary(self: Any, request: Any, context: Any) -> Any:
        started, code = time.perf_counter(), grpc.StatusCode.OK
        try:
            return await method(self, request, context)
        except BadRequest as error:
            code = error.code
            await context.abort(error.code, str(error))
        finally:
            done(self, started, code)
    return functools.wraps(method)(unary)


for _name in pb.DESCRIPTOR.services_by_name["Aggregation"].methods_by_name:
    setattr(AggregationServicer, _name, _status(getattr(AggregationServicer, _name)))
