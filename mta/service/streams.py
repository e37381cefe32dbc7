"""Streams served: many window queries over one event-time stream (``mta.Stream``).

A stream is an engine (``mta.Stream``, or ``mta.KeyedStream`` when keyed) built from a
``StreamSpec``: its monoid and the queries' policies and punctuation predicates come
from the registry by name, its window types from their proto messages. The server
holds no window logic: batches, watermarks and query changes go to the engine as they
are, once the request has been checked whole (errors name the field at fault, and
nothing changes).

Durable and single-writer like a window: a stream is one stored resource (a kvs level
store under the stream's lease, in the namespace of windows). After every change (a
batch, an advance, a query added or removed) the stream's whole state is committed: the
spec as it is now, the engine's ``snapshot()`` and the ids of the recent batches. The
reply waits until that commit is durable, so nothing acknowledged is lost and a
restarted server continues from the last acknowledged change; commits of changes made
meanwhile merge in the backend's writer (group commit). The price: every commit writes
the whole state, which grows with the tuples the engine must keep (those not yet behind
the watermark, and within the allowed lateness).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import math
import re
from typing import Any, AsyncIterator, Callable

import grpc
import msgpack

import kvs
from kvs.base import LevelStore
from mta.monoid import Record
from mta.stream import KeyedStream, Result, Stream
from mta.service.requests import (SHUTTING_DOWN, BadRequest, fill_values, invalid, read_batch, store_failure,
                                  update_fault)
from mta.v1 import aggregation_pb2 as pb
from mta.windows import Count, Policy, Punctuation, Session, Sliding, Tumbling, WindowType

log = logging.getLogger("mta.service")

#: Batch ids remembered per stream (a retry older than this many batches is applied again).
REMEMBERED_BATCHES = 1024
#: What StreamSpec.late may say (the first is the default).
LATE = ("drop", "side_output")
#: the multi-query optimizers of final "shared" (the first is the default)
OPTIMIZERS = ("triweave", "weaveshare")
#: Longest query name, in characters.
MAX_QUERY_NAME = 200
#: Marks a stored resource as a stream (its creation record's label holds the spec).
STREAM_LABEL = "stream"
_DELETED = object()  # ends the Watch streams of a deleted stream
_ENGINE_FAULT = re.compile(r"updates\[(\d+)\]: (.*)", re.DOTALL)


def _length(value: float, where: str, *, positive: bool = True) -> int | float:
    """A length of time from the wire: finite (and > 0 when ``positive``); a whole number
    becomes an int, so that int timestamps give int window bounds."""
    if not math.isfinite(value) or (positive and value <= 0):
        raise invalid(where, f"must be a finite number{' > 0' if positive else ''}, got {value!r}")
    return int(value) if value.is_integer() else value


def _time(value: Any) -> tuple[str, Any]:
    """The field suffix ("" for sint64, "_float" for double) and value of a time or position."""
    if isinstance(value, int):
        return "", value
    if value.is_integer() and abs(value) < 2**63:
        return "", int(value)
    return "_float", value


def _bounds(start: Any, end: Any) -> pb.Bounds:
    bounds = pb.Bounds()
    suffix, value = _time(start)
    setattr(bounds, f"start{suffix}", value)
    suffix, value = _time(end)
    setattr(bounds, f"end{suffix}", value)
    return bounds


def _watermark(request: Any, required: bool) -> int | float | None:
    """The watermark a request sets (oneof ``advance``), None if none."""
    kind = request.WhichOneof("advance")
    if kind is None:
        if required:
            raise invalid("watermark", "required (watermark or watermark_float)")
        return None
    value = getattr(request, kind)
    if isinstance(value, float) and math.isnan(value):
        raise invalid(kind, "not a number")
    return value


def _value_field(request: Any, i: int) -> str:
    """The path of the value of update ``i`` of a batch (as sent: value, dimensions or payload)."""
    if request.HasField("columns"):
        columns = request.columns
        if len(columns.payloads):
            return f"columns.payloads[{i}]"
        return f"columns.values[{i}]" if len(columns.values) else "columns.dimensions"
    update = request.updates[i]
    return f"updates[{i}].{'payload' if update.payload else 'dimensions' if update.dimensions else 'value'}"


@dataclasses.dataclass
class HostedStream:
    """A served stream: its spec (with the queries as they are now), its engine, its store."""

    spec: pb.StreamSpec
    engine: Stream | KeyedStream
    store: LevelStore
    #: The predicates of the punctuation queries, by query name: a batch is checked against
    #: them before the engine sees it (a predicate that raises refuses the batch whole).
    predicates: dict[str, Callable[[Any], bool]]
    #: Updates dropped as too late during the change being applied, (key, ts, value)
    #: (late = "side_output"; the engine's on_late fills it).
    late: list
    batches: list[str] = dataclasses.field(default_factory=list)
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    #: Each watcher's queue, and the keys and queries it follows (None: all).
    watchers: dict[asyncio.Queue, tuple[frozenset | None, frozenset | None]] = dataclasses.field(default_factory=dict)
    #: StreamInfo after the last complete change (GetStream never sees half of one).
    info: pb.StreamInfo = dataclasses.field(default_factory=pb.StreamInfo)

    @property
    def record(self) -> bool:
        return isinstance(self.engine.monoid, Record)

    def what(self) -> str:
        return f"stream {self.spec.name!r}"

    def refresh_info(self) -> None:
        engine = self.engine
        info = pb.StreamInfo(spec=self.spec, dropped=engine.dropped,
                             keys=len(engine.keys()) if self.spec.keyed else 0)
        if engine.watermark > -math.inf:
            suffix, value = _time(engine.watermark)
            setattr(info, f"watermark{suffix}", value)
        plan = engine.plan()
        if plan is not None:
            info.plan = json.dumps(plan.to_dict())
        self.info = info

    def state(self) -> dict[str, Any]:
        """Everything a restarted server needs, as one commit's state."""
        return {"spec": self.spec.SerializeToString(), "engine": self.engine.snapshot(), "batches": self.batches}


class StreamRPCs:
    """The stream RPCs of :class:`~mta.service.servicer.AggregationServicer` (a mixin: it
    uses the servicer's registry, backend, windows, applier and streams' shutdown)."""

    streams: dict[str, HostedStream]

    # -- building --------------------------------------------------------------------

    def _window_type(self, window: pb.StreamWindow, where: str) -> tuple[WindowType, Callable | None]:
        """The window type of ``window`` and, for a punctuation window, its predicate."""
        kind = window.WhichOneof("kind")
        where = f"{where}.{kind}"
        if kind == "tumbling":
            w = window.tumbling
            offset = _length(w.offset, f"{where}.offset", positive=False)
            return Tumbling(_length(w.size, f"{where}.size"), offset), None
        if kind == "sliding":
            w = window.sliding
            return Sliding(_length(w.size, f"{where}.size"), _length(w.slide, f"{where}.slide"),
                           _length(w.offset, f"{where}.offset", positive=False)), None
        if kind == "session":
            return Session(_length(window.session.gap, f"{where}.gap")), None
        if kind == "count":
            w = window.count
            if not w.size:
                raise invalid(f"{where}.size", "must be > 0")
            if w.slide and w.every:
                raise invalid(f"{where}.slide, {where}.every", "a count window slides by `slide` updates or "
                                                               "reports every `every` time units, not both")
            if w.every:
                return Count(w.size, every=_length(w.every, f"{where}.every")), None
            return Count(w.size, w.slide or None), None
        if kind == "punctuation":
            if not window.punctuation.HasField("predicate"):
                raise invalid(f"{where}.predicate", "required (a predicate by name: Describe lists them)")
            predicate = self._component("predicate", window.punctuation.predicate, f"{where}.predicate")
            return Punctuation(predicate), predicate
        if kind == "policy":
            w = window.policy
            if not w.HasField("policy"):
                raise invalid(f"{where}.policy", "required (a policy by name: Describe lists them)")
            policy = self._component("policy", w.policy, f"{where}.policy")
            return Policy(policy, _length(w.every, f"{where}.every")), None
        raise invalid(where.rpartition(".")[0], "required: one of tumbling, sliding, session, count, punctuation, "
                                                "policy")

    def _query(self, query: pb.StreamQuery, where: str) -> tuple[WindowType, Callable | None]:
        if not 0 < len(query.name) <= MAX_QUERY_NAME:
            raise invalid(f"{where}.name", f"1 to {MAX_QUERY_NAME} characters, got {len(query.name)}")
        return self._window_type(query.window, f"{where}.window")

    def _engine(self, spec: pb.StreamSpec) -> HostedStream:
        """A new stream of ``spec``, its queries added, not yet stored (BadRequest naming the field)."""
        if spec.dimensions and spec.HasField("monoid"):
            raise invalid("spec.monoid, spec.dimensions", "a stream has one monoid or named dimensions, not both")
        if spec.dimensions:
            monoid = self._dimensions(spec.dimensions)
        elif spec.HasField("monoid"):
            monoid = self._component("monoid", spec.monoid, "spec.monoid")
        else:
            raise invalid("spec.monoid", "required (or spec.dimensions)")
        if not (math.isfinite(spec.allowed_lateness) and spec.allowed_lateness >= 0):
            raise invalid("spec.allowed_lateness", f"must be a finite number >= 0, got {spec.allowed_lateness!r}")
        if spec.late and spec.late not in LATE:
            raise invalid("spec.late", f"{spec.late!r} is not one of {', '.join(LATE)}")
        late: list = []
        if spec.optimizer and spec.optimizer not in OPTIMIZERS:
            raise invalid("spec.optimizer", f"{spec.optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
        options: dict[str, Any] = {"allowed_lateness": _length(spec.allowed_lateness, "", positive=False),
                                   "final": spec.final or "auto", "optimizer": spec.optimizer or OPTIMIZERS[0]}
        if spec.late == "side_output":
            options["on_late"] = ((lambda key, ts, value: late.append((key, ts, value))) if spec.keyed
                                  else (lambda ts, value: late.append(("", ts, value))))
        try:
            engine = (KeyedStream if spec.keyed else Stream)(monoid, **options)
        except ValueError as error:  # the one option the engine checks alone
            raise invalid("spec.final", str(error)) from None
        hosted = HostedStream(spec, engine, store=None, predicates={}, late=late)  # type: ignore[arg-type]
        first: dict[str, int] = {}
        for i, query in enumerate(spec.queries):
            where = f"spec.queries[{i}]"
            window, predicate = self._query(query, where)
            if query.name in first:
                raise invalid(f"{where}.name", f"{query.name!r} is also spec.queries[{first[query.name]}].name: "
                                               "names must be unique")
            first[query.name] = i
            engine.add(query.name, window)
            if predicate is not None:
                hosted.predicates[query.name] = predicate
        return hosted

    def _stream(self, name: str, where: str = "stream") -> HostedStream:
        try:
            return self.streams[name]
        except KeyError:
            raise BadRequest(grpc.StatusCode.NOT_FOUND, f"{where}: no stream {name!r}") from None

    # -- storing ---------------------------------------------------------------------

    async def _open_stream(self, name: str, labels: dict, started: float) -> None:
        """Reopen stored stream ``name`` (at start): its lease, then its last committed state."""
        store = await self._reopen(name, functools.partial(self.backend.store, name), started)
        try:
            state = await asyncio.to_thread(store.load)
            spec = pb.StreamSpec.FromString(state["spec"] if state else labels[STREAM_LABEL])
            hosted = self._engine(spec)
            if state:
                hosted.engine.restore(state["engine"])
                hosted.batches = list(state["batches"])
        except BaseException:
            store.release()
            raise
        hosted.store = store
        hosted.refresh_info()
        self.streams[name] = hosted

    def _commit_stream(self, hosted: HostedStream) -> None:
        """Send the stream's state as its next commit (durable stores only: a memory store
        keeps nothing across restarts)."""
        if hosted.store.durable:
            hosted.store.commit(hosted.state(), wait=False)

    @staticmethod
    async def _stream_durable(hosted: HostedStream) -> None:
        """Until every commit sent is durable (StoreError: UNAVAILABLE or FAILED_PRECONDITION)."""
        if hosted.store.durable:
            try:
                await asyncio.to_thread(hosted.store.drain)
            except kvs.StoreError as error:
                raise store_failure(error) from None

    async def _change(self, hosted: HostedStream, work: Callable[[], tuple[Any, list[pb.StreamResult]]]) -> Any:
        """Apply ``work()`` under the stream's lock: it checks the change (BadRequest before it
        changes anything), makes it in the engine and returns (the reply, the results for the
        watchers). Then commit, tell the watchers, and wait until the commit is durable.
        Applied in a task of its own: a call cancelled meanwhile (its client gone, its
        deadline past) does not cut a change in half."""
        async def apply() -> Any:
            async with hosted.lock:
                hosted.late.clear()

                def run() -> Any:
                    out = work()
                    self._commit_stream(hosted)
                    return out
                try:
                    out = await self._off_loop(hosted.store.durable, run)
                except kvs.StoreError as error:
                    raise store_failure(error) from None
                finally:
                    hosted.refresh_info()
                self._tell(hosted, out[1], hosted.late)
                return out[0]
        reply = await asyncio.shield(apply())
        await self._stream_durable(hosted)
        return reply

    # -- results ---------------------------------------------------------------------

    @staticmethod
    def _stream_result(hosted: HostedStream, result: Result) -> pb.StreamResult:
        message = pb.StreamResult(query=result.query, key=result.key or "", window=_bounds(result.start, result.end),
                                  count=result.count, final=result.final,
                                  replaces=[_bounds(start, end) for start, end in result.replaces])
        fill_values(message, result.value, hosted.record)
        return message

    @staticmethod
    def _late_update(key: str, ts: Any, value: Any) -> pb.Update:
        update = pb.Update(key=key)
        suffix, ts = _time(ts)
        setattr(update, f"ts{suffix}", ts)
        if isinstance(value, dict):
            update.dimensions.update(value)
        elif isinstance(value, float) or isinstance(value, int) and not isinstance(value, bool):
            update.value = value
        else:
            update.payload = msgpack.packb(value, default=str)
        return update

    def _tell(self, hosted: HostedStream, results: list[pb.StreamResult], late: list) -> None:
        """Send results and late updates to the streams watching them."""
        if not hosted.watchers:
            return
        events = [pb.StreamEvent(result=r) for r in results]
        events += [pb.StreamEvent(late=self._late_update(*entry)) for entry in late]
        for queue, (keys, queries) in hosted.watchers.items():
            for event in events:
                which = event.result if event.HasField("result") else event.late
                if keys is not None and which.key not in keys:
                    continue
                if queries is not None and event.HasField("result") and which.query not in queries:
                    continue
                queue.put_nowait(event)

    # -- checking batches ----------------------------------------------------------------

    def _check_batch(self, hosted: HostedStream, request: pb.StreamInsertRequest, timestamps: list,
                     values: list) -> None:
        """Refuse what the engine would refuse only once it has changed something: a NaN or
        infinite timestamp, and a value on which a punctuation predicate raises."""
        monoid = hosted.engine.monoid
        if not (request.HasField("columns") and len(request.columns.ts)):  # sint64 timestamps are all fine
            for i, ts in enumerate(timestamps):
                if type(ts) is float and not math.isfinite(ts):
                    raise update_fault(request, monoid, i, "timestamp", f"must be finite, got {ts!r}")
        for name, predicate in hosted.predicates.items():
            for i, value in enumerate(values):
                try:
                    predicate(value)
                except Exception as error:  # noqa: BLE001 - a plugin's predicate may raise anything
                    try:
                        monoid.lift(value)
                    except (TypeError, ValueError) as unliftable:
                        raise update_fault(request, monoid, i, "value", str(unliftable)) from None
                    raise invalid(_value_field(request, i), f"the predicate of punctuation query {name!r} raised "
                                                            f"{type(error).__name__}: {error}") from None

    @staticmethod
    def _engine_fault(request: Any, monoid: Any, error: Exception) -> BadRequest:
        """A batch the engine refused (before changing anything): it names the update by index."""
        match = _ENGINE_FAULT.match(str(error))
        if match is None:
            return invalid("columns" if request.HasField("columns") else "updates", str(error))
        return update_fault(request, monoid, int(match[1]), "value", match[2])

    # -- RPCs ------------------------------------------------------------------------

    async def CreateStream(self, request: pb.CreateStreamRequest, context: Any) -> pb.StreamInfo:
        spec = request.spec
        try:
            kvs.blocks.check_window_id(spec.name)
        except ValueError as error:
            raise invalid("spec.name", str(error)) from None
        if ":key:" in spec.name:
            raise invalid("spec.name", "must not contain ':key:'")
        if spec.name in self.streams:
            if request.if_not_exists and self.streams[spec.name].spec == spec:
                return self.streams[spec.name].info
            raise BadRequest(grpc.StatusCode.ALREADY_EXISTS, f"spec.name: stream {spec.name!r} exists"
                             f"{' with another spec' if request.if_not_exists else ''}")
        if spec.name in self.windows:
            raise BadRequest(grpc.StatusCode.ALREADY_EXISTS, f"spec.name: window {spec.name!r} exists (windows "
                                                             "and streams share one namespace)")
        hosted = self._engine(spec)
        try:
            lease = await asyncio.to_thread(self.backend.create, spec.name,
                                            {"labels": {STREAM_LABEL: spec.SerializeToString()}})
            hosted.store = await asyncio.to_thread(self.backend.store, spec.name, lease)
        except kvs.StoreError as error:
            code = grpc.StatusCode.ALREADY_EXISTS if "already exists" in str(error) else grpc.StatusCode.UNAVAILABLE
            raise BadRequest(code, f"spec.name: {error}") from None
        self.streams[spec.name] = hosted
        await self._change(hosted, lambda: (None, []))  # the first state: a restart finds the stream
        log.info("stream created", extra={"event": "create_stream", "stream": spec.name})
        return hosted.info

    async def GetStream(self, request: pb.GetStreamRequest, context: Any) -> pb.StreamInfo:
        return self._stream(request.name, "name").info

    async def ListStreams(self, request: pb.ListStreamsRequest, context: Any) -> pb.ListStreamsResponse:
        return pb.ListStreamsResponse(streams=[h.info for _, h in sorted(self.streams.items())])

    async def DeleteStream(self, request: pb.DeleteStreamRequest, context: Any) -> pb.DeleteStreamResponse:
        if request.name in self.windows:
            raise BadRequest(grpc.StatusCode.NOT_FOUND, f"name: {request.name!r} is a window, not a stream "
                                                        "(DeleteWindow)")
        hosted = self.streams.pop(request.name, None)
        if hosted is None:  # stored but not served here (e.g. another server writes it)?
            try:
                labels = (await asyncio.to_thread(self.backend.meta, request.name)).get("labels", {})
            except kvs.StoreError:
                return pb.DeleteStreamResponse(deleted=False)
            if STREAM_LABEL not in labels:
                raise BadRequest(grpc.StatusCode.NOT_FOUND, f"name: {request.name!r} is a window, not a stream "
                                                            "(DeleteWindow)")
            return pb.DeleteStreamResponse(deleted=await asyncio.to_thread(self.backend.delete, request.name))
        async with hosted.lock:  # no change is half applied
            await asyncio.to_thread(self.backend.delete, request.name)
            for queue in hosted.watchers:
                queue.put_nowait(_DELETED)
        log.info("stream deleted", extra={"event": "delete_stream", "stream": request.name})
        return pb.DeleteStreamResponse(deleted=True)

    async def AddQuery(self, request: pb.AddQueryRequest, context: Any) -> pb.StreamInfo:
        hosted = self._stream(request.stream)
        window, predicate = self._query(request.query, "query")
        name = request.query.name

        def add() -> tuple[None, list]:
            if name in hosted.engine.queries:
                raise BadRequest(grpc.StatusCode.ALREADY_EXISTS, f"query.name: {hosted.what()} has a query {name!r}")
            try:
                hosted.engine.add(name, window)
            except ValueError as error:  # a predicate that raises on an update waiting for the watermark
                raise invalid("query.window.punctuation.predicate", str(error)) from None
            hosted.spec.queries.append(request.query)
            if predicate is not None:
                hosted.predicates[name] = predicate
            return None, []
        await self._change(hosted, add)
        return hosted.info

    async def RemoveQuery(self, request: pb.RemoveQueryRequest, context: Any) -> pb.StreamInfo:
        hosted = self._stream(request.stream)

        def remove() -> tuple[None, list]:
            names = [q.name for q in hosted.spec.queries]
            if request.query not in names:
                raise BadRequest(grpc.StatusCode.NOT_FOUND, f"query: {hosted.what()} has no query {request.query!r}")
            hosted.engine.remove(request.query)
            del hosted.spec.queries[names.index(request.query)]
            hosted.predicates.pop(request.query, None)
            return None, []
        await self._change(hosted, remove)
        return hosted.info

    async def StreamInsert(self, request: pb.StreamInsertRequest, context: Any) -> pb.StreamInsertResponse:
        hosted = self._stream(request.stream)
        columns = request.columns
        size = len(request.updates) + max(len(columns.ts), len(columns.ts_float))
        if size > self.max_batch:
            raise BadRequest(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{'updates' if request.updates else 'columns'}: "
                                                                 f"{size} in one batch, the limit is {self.max_batch}")
        keys, timestamps, values, _ = read_batch(request, hosted.engine.monoid, hosted.spec.keyed, hosted.what())
        watermark = _watermark(request, required=False)
        engine = hosted.engine

        def insert() -> tuple[pb.StreamInsertResponse, list[pb.StreamResult]]:
            reply = pb.StreamInsertResponse(batch_id=request.batch_id)
            if request.batch_id and request.batch_id in hosted.batches:
                reply.duplicate = True
                return reply, []
            self._check_batch(hosted, request, timestamps, values)  # under the lock: the predicates of now
            dropped = engine.dropped
            try:
                if hosted.spec.keyed:
                    reply.inserted = engine.insert_many(zip(keys, timestamps, values))
                else:
                    reply.inserted = engine.insert_many(zip(timestamps, values))
            except (TypeError, ValueError) as error:
                raise self._engine_fault(request, engine.monoid, error) from None
            reply.dropped = engine.dropped - dropped
            if request.batch_id:
                hosted.batches = [*hosted.batches, request.batch_id][-REMEMBERED_BATCHES:]
            if watermark is not None:
                reply.results.extend(self._stream_result(hosted, r) for r in engine.advance(watermark))
            return reply, list(reply.results)
        reply = await self._change(hosted, insert)
        self.metrics.updates.inc(reply.inserted)
        return reply

    async def StreamIngest(self, request_iterator: AsyncIterator[pb.StreamInsertRequest],
                           context: Any) -> AsyncIterator[pb.StreamInsertResponse]:
        """As Ingest: batches applied in order, up to INGEST_PIPELINE ahead of their replies."""
        async for reply in self._ingest(request_iterator, context, self.StreamInsert):
            yield reply

    async def Advance(self, request: pb.AdvanceRequest, context: Any) -> pb.AdvanceResponse:
        hosted = self._stream(request.stream)
        watermark = _watermark(request, required=True)

        def advance() -> tuple[pb.AdvanceResponse, list[pb.StreamResult]]:
            results = [self._stream_result(hosted, r) for r in hosted.engine.advance(watermark)]
            return pb.AdvanceResponse(results=results), results
        return await self._change(hosted, advance)

    async def StreamWatch(self, request: pb.StreamWatchRequest, context: Any) -> AsyncIterator[pb.StreamEvent]:
        """The stream's info (the watch is in place), then the results of every advance, and
        the updates dropped as too late (late = "side_output"), until the client leaves, the
        stream is deleted (NOT_FOUND) or the server shuts down (UNAVAILABLE, after the events
        queued before)."""
        hosted = self._stream(request.stream)
        if request.keys and not hosted.spec.keyed:
            raise invalid("keys", f"{hosted.what()} is not keyed")
        self._refuse_when_closing()
        queue: asyncio.Queue = asyncio.Queue()  # events; None: the server is shutting down
        hosted.watchers[queue] = (frozenset(request.keys) or None, frozenset(request.queries) or None)
        stop = functools.partial(queue.put_nowait, None)
        self._streams.add(stop)
        try:
            yield pb.StreamEvent(info=hosted.info)
            while (event := await queue.get()) is not None:
                if event is _DELETED:
                    raise BadRequest(grpc.StatusCode.NOT_FOUND, f"stream: {hosted.what()} was deleted")
                yield event
            raise BadRequest(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        finally:
            hosted.watchers.pop(queue, None)
            self._streams.discard(stop)

    async def flush_streams(self) -> None:
        """Wait until every stream's commits are durable (graceful shutdown)."""
        for hosted in list(self.streams.values()):
            async with hosted.lock:
                await self._stream_durable(hosted)

