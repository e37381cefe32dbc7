"""The Aggregation service: named windows built from the registry, kept in one store.

Every change is acknowledged only once it is durable: a batch is applied under
its window's lock, its commit is queued, and the reply waits for the store
(commits of concurrent batches merge in the backend's writer: group commit).
Batch ids are kept in the window's checkpoint (``Window.notes``), so a retried
batch is acknowledged again without being applied twice, even after a restart.

A keyed window is one stored window per key (id ``<name>:key:<digest>``, labelled
with its parent and key) beside an empty one holding the spec. A batch's id goes
into every key's checkpoint that the batch touched, so a retry of a batch that
reached some keys before a crash is applied exactly once to each.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import inspect
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import grpc

import kvs
from mta.algorithms import ORDERED_ALGORITHMS
from mta.monoid import Record
from mta.ordered_window import LATE
from mta.service.metrics import Metrics
from mta.service.registry import ALGORITHMS, Entry, Registry, RegistryError, map_key
from mta.service.streams import STREAM_LABEL, HostedStream, StreamRPCs
from mta.service.requests import SHUTTING_DOWN, BadRequest, fill_values, invalid, param_value, read_batch, store_failure, update_fault
from mta.v1 import aggregation_pb2 as pb
from mta.v1 import aggregation_pb2_grpc as pb_grpc
from mta.window import Window

log = logging.getLogger("mta.service")

#: Batch ids remembered per window (a retry older than this many batches is applied again).
REMEMBERED_BATCHES = 1024
#: Batches of one Ingest stream applied ahead of their replies.
INGEST_PIPELINE = 2
#: Updates applied between two turns of the event loop: a large batch never holds
#: queries up for longer than this many updates take.
SLICE = 256
STORE_ALGORITHMS = tuple(ALGORITHMS)
#: The algorithms of STORE_ALGORITHMS that take updates in any timestamp order.
OUT_OF_ORDER = tuple(a for a in STORE_ALGORITHMS if a in ORDERED_ALGORITHMS)
#: Marks the stored windows that hold one key of a keyed window.
KEY_MARK = ":key:"


def key_window_id(name: str, key: str) -> str:
    """The stored window holding ``key`` of keyed window ``name``."""
    return f"{name}{KEY_MARK}{hashlib.blake2b(key.encode(), digest_size=16).hexdigest()}"


_PARAM_TYPES = {int: ("int", "int_value"), float: ("float", "float_value"), str: ("string", "string_value"),
                bool: ("bool", "bool_value")}


def _component_info(entry: Entry) -> pb.ComponentInfo:
    """A registry entry as Describe sends it."""
    info = pb.ComponentInfo(name=entry.name, description=entry.doc, uses_timestamps=entry.timestamps)
    for spec in entry.params:
        kind, field_name = _PARAM_TYPES[spec.type]
        param = info.params.add(name=spec.name, type=kind, required=spec.required)
        if not spec.required:
            setattr(param.default_value, field_name, spec.default)
    return info


@dataclass
class Hosted:
    """A served window, its spec, and the streams watching it.

    ``window`` holds the updates, or for a keyed window stays empty (it records
    the spec, and checks the first batch of a new key) while ``keys`` hold them."""

    spec: pb.WindowSpec
    window: Window
    keys: dict[str, Window] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Each watcher's queue, and the keys it follows (None: all).
    watchers: dict[asyncio.Queue, frozenset[str] | None] = field(default_factory=dict)
    #: The result of every key after its last complete change: queries read these,
    #: so they never wait for a batch nor see half of one.
    results: dict[str, pb.Result] = field(default_factory=dict)

    def parts(self) -> dict[str, Window]:
        """The windows holding updates, by key ("" for an unkeyed window)."""
        return self.keys if self.spec.keyed else {"": self.window}


class AggregationServicer(StreamRPCs, pb_grpc.AggregationServicer):
    def __init__(self, backend: kvs.Backend, registry: Registry, *, max_batch: int = 100_000) -> None:
        self.backend = backend
        # One thread applies the batches of durable windows: more would only fight
        # the event loop for the GIL (they run Python, not I/O, most of the time).
        self.applier = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mta-apply")
        self.registry = registry
        self.max_batch = max_batch
        self.windows: dict[str, Hosted] = {}
        self.streams: dict[str, HostedStream] = {}
        self.metrics = Metrics(backend)
        #: Set at shutdown: open streams have been ended and new ones are refused.
        self.closing = False
        #: How to end each open Watch and Ingest stream at shutdown.
        self._streams: set[Callable[[], Any]] = set()
        #: Calls in progress, and an event set whenever there are none.
        self._calls = 0
        self._idle = asyncio.Event()
        self._idle.set()

    # -- building windows ------------------------------------------------------------

    def _build(self, spec: pb.WindowSpec) -> tuple[Any, Any, dict[str, Any]]:
        """Monoid, policy and options of ``spec`` (BadRequest naming the field)."""
        if spec.dimensions:  # CreateWindow refuses a monoid beside them; older servers stored some
            monoid = self._dimensions(spec.dimensions)
        elif spec.HasField("monoid"):
            monoid = self._component("monoid", spec.monoid, "spec.monoid")
        else:
            raise invalid("spec.monoid", "required (or spec.dimensions)")
        policy = self._component("policy", spec.policy, "spec.policy") if spec.HasField("policy") else None
        algorithm = spec.algorithm or STORE_ALGORITHMS[0]
        if algorithm not in STORE_ALGORITHMS:
            raise invalid("spec.algorithm", f"{algorithm!r} is not one of {', '.join(STORE_ALGORITHMS)}")
        options: dict[str, Any] = {"algorithm": algorithm}
        if spec.late:
            if algorithm not in OUT_OF_ORDER:
                raise invalid("spec.late, spec.algorithm", f"late is an option of the out-of-order algorithms "
                               f"({', '.join(OUT_OF_ORDER)}); {algorithm!r} takes updates in timestamp order")
            if spec.late not in LATE:
                raise invalid("spec.late", f"{spec.late!r} is not one of {', '.join(LATE)}")
            options["late"] = spec.late
        for name in ("buffer_size", "cache_size", "block_size"):
            if getattr(spec.store, name):
                options[name] = getattr(spec.store, name)
        return monoid, policy, options

    def _dimensions(self, dimensions: Any) -> Record:
        """The Record of ``spec.dimensions``: names unique and valid field names."""
        fields: dict[str, Any] = {}
        first: dict[str, int] = {}
        for i, dimension in enumerate(dimensions):
            where = f"spec.dimensions[{i}]"
            if dimension.name in first:
                raise invalid(f"{where}.name", f"{dimension.name!r} is also spec.dimensions[{first[dimension.name]}]"
                                                ".name: names must be unique")
            first[dimension.name] = i
            fields[dimension.name] = self._component("monoid", dimension.monoid, f"{where}.monoid")
            try:
                Record({dimension.name: fields[dimension.name]})  # Record's own rule for field names
            except ValueError as error:
                raise invalid(f"{where}.name", str(error)) from None
        return Record(fields)

    def _component(self, kind: str, component: pb.Component, where: str) -> Any:
        """The monoid or policy ``component`` names (``where``: its path in the request)."""
        params = {k: param_value(v, f"{where}.params{map_key(k)}") for k, v in component.params.items()}
        try:
            return getattr(self.registry, kind)(component.name, params)
        except RegistryError as error:
            raise invalid(f"{where}.{error.field}", str(error)) from None

    async def load(self) -> None:
        """Reopen every window and stream of the store (at start); drop the keys of deleted keyed windows."""
        started = time.monotonic()
        parts, failed = [], set()
        for name in sorted(await asyncio.to_thread(self.backend.windows)):
            try:
                labels = (await asyncio.to_thread(self.backend.meta, name))["labels"]
                if "parent" in labels:
                    parts.append((name, labels["parent"], labels["key"]))
                    continue
                if STREAM_LABEL in labels:
                    await self._open_stream(name, labels, started)
                    continue
                spec = pb.WindowSpec.FromString(labels["spec"])
                monoid, policy, _ = self._build(spec)  # the stored record has the options
                window = await self._reopen(name, functools.partial(Window.open, self.backend, name, monoid, policy),
                                            started)
            except Exception as error:  # noqa: BLE001 - one bad window must not keep the others down
                self._load_failed(name, error)
                failed.add(name)
                continue
            self.windows[name] = Hosted(spec, window)
        for name, parent, key in parts:
            hosted = self.windows.get(parent)
            if parent in failed:
                continue  # not served here (e.g. another server writes it): nor are its keys
            try:
                if hosted is None or not hosted.spec.keyed:  # its window was deleted before a crash
                    await asyncio.to_thread(self.backend.delete, name)
                    continue
                monoid, policy, _ = self._build(hosted.spec)
                hosted.keys[key] = await self._reopen(
                    name, functools.partial(Window.open, self.backend, name, monoid, policy), started)
            except Exception as error:  # noqa: BLE001
                self._load_failed(name, error)
        for name, hosted in self.windows.items():
            self._publish(name, hosted, list(hosted.parts()))
        log.info("loaded %d windows and %d streams from %s", len(self.windows), len(self.streams), self.backend.url)

    async def _reopen(self, name: str, open_it: Callable[[], Any], started: float) -> Any:
        """``open_it()`` (Window.open, or a stream's level store); a window or stream with
        another writer is waited for until the lease of a writer that was gone when loading
        ``started`` (this server before a crash) has expired, then opened once more:
        WindowBusy again means a live writer (another server on the same store) and it is
        not served here."""
        try:
            return await asyncio.to_thread(open_it)
        except kvs.WindowBusy as busy:
            wait = started + busy.ttl + 0.1 - time.monotonic()
            log.warning("window %r has another writer (%s): waiting %.1f s for its lease to expire (a crashed "
                        "earlier run; `mta serve --owner NAME` takes its windows back at once)", name, busy.owner,
                        max(0.0, wait), extra={"event": "lease_wait", "window": name})
            await asyncio.sleep(max(0.0, wait))
            return await asyncio.to_thread(open_it)

    @staticmethod
    def _load_failed(name: str, error: Exception) -> None:
        log.error("window %r not loaded: %s: %s", name, type(error).__name__, error,
                  extra={"event": "load_failed", "window": name})

    def _hosted(self, name: str, where: str = "window") -> Hosted:
        """The window ``name`` (``where``: the request field that names it)."""
        try:
            return self.windows[name]
        except KeyError:
            raise BadRequest(grpc.StatusCode.NOT_FOUND, f"{where}: no window {name!r}") from None

    # -- results ---------------------------------------------------------------------

    @staticmethod
    def _result(name: str, window: Window | None, key: str = "", bounds: tuple[Any, Any] | None = None) -> pb.Result:
        """The result of ``window`` (None: a key without updates), or of its updates in the
        time range ``bounds`` (``Window.query(t_from, t_to)``: it may read the store)."""
        if window is None:
            return pb.Result(window=name, key=key)
        length, lowered = window.tally(*(bounds or ()))
        result = pb.Result(window=name, key=key, length=length)
        fill_values(result, lowered, isinstance(window.monoid, Record))
        return result

    @classmethod
    def _results(cls, name: str, hosted: Hosted, keys: Any = None) -> list[pb.Result]:
        """The last results of every key of ``hosted``, or of ``keys`` (in that order).
        A key without updates has the result of an empty window (``hosted.window``)."""
        results = hosted.results
        if keys is None:
            return [results[k] for k in sorted(results)]
        return [results.get(k) or cls._result(name, hosted.window, k) for k in keys]

    def _publish(self, name: str, hosted: Hosted, keys: list[str]) -> None:
        """Record the results of the changed ``keys`` and send them to the streams watching them."""
        parts = hosted.parts()
        changed = {k: self._result(name, parts.get(k), k) for k in keys}
        hosted.results.update(changed)
        for queue, following in hosted.watchers.items():
            for key, result in changed.items():
                if following is None or key in following:
                    queue.put_nowait(result)

    @staticmethod
    async def _durable(windows: list[Window]) -> None:
        windows = [w for w in windows if w.durable]
        if not windows:
            return
        try:
            await asyncio.to_thread(lambda: [w.wait_durable() for w in windows])
        except kvs.StoreError as error:
            raise store_failure(error) from None

    # -- RPCs ------------------------------------------------------------------------

    async def CreateWindow(self, request: pb.CreateWindowRequest, context: Any) -> pb.WindowInfo:
        spec = request.spec
        try:
            kvs.blocks.check_window_id(spec.name)
        except ValueError as error:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"spec.name: {error}") from None
        if KEY_MARK in spec.name:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"spec.name: must not contain {KEY_MARK!r}")
        if spec.keyed:
            try:
                kvs.blocks.check_window_id(key_window_id(spec.name, ""))
            except ValueError:
                raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"spec.name: at most {200 - len(key_window_id('', ''))} characters "
                                 "for a keyed window") from None
        if spec.dimensions and spec.HasField("monoid"):
            raise invalid("spec.monoid, spec.dimensions", "a window has one monoid or named dimensions, not both")
        if spec.name in self.windows:
            if request.if_not_exists and self.windows[spec.name].spec == spec:
                return self._info(spec.name, self.windows[spec.name])
            raise BadRequest(grpc.StatusCode.ALREADY_EXISTS, f"spec.name: window {spec.name!r} exists"
                             f"{' with another spec' if request.if_not_exists else ''}")
        monoid, policy, options = self._build(spec)
        try:
            window = await asyncio.to_thread(Window, monoid, policy, store=self.backend, window_id=spec.name,
                                             labels={"spec": spec.SerializeToString()}, **options)
        except kvs.StoreError as error:
            code = grpc.StatusCode.ALREADY_EXISTS if "already exists" in str(error) else grpc.StatusCode.UNAVAILABLE
            raise BadRequest(code, str(error)) from None
        if spec.keyed:  # keys left by a delete that a crash interrupted
            stale = [n for n in await asyncio.to_thread(self.backend.windows)
                     if n.startswith(spec.name + KEY_MARK)]
            for name in stale:
                await asyncio.to_thread(self.backend.delete, name)
        hosted = self.windows[spec.name] = Hosted(spec, window)
        self._publish(spec.name, hosted, list(hosted.parts()))
        log.info("window created", extra={"event": "create", "window": spec.name})
        return self._info(spec.name, hosted)

    @staticmethod
    def _info(name: str, hosted: Hosted) -> pb.WindowInfo:
        # from the last complete results, as queries: never half of a batch being applied
        results = hosted.results.values()
        return pb.WindowInfo(spec=hosted.spec, length=sum(r.length for r in results),
                             keys=len(results) if hosted.spec.keyed else 0)

    async def GetWindow(self, request: pb.GetWindowRequest, context: Any) -> pb.WindowInfo:
        return self._info(request.name, self._hosted(request.name, "name"))

    async def ListWindows(self, request: pb.ListWindowsRequest, context: Any) -> pb.ListWindowsResponse:
        return pb.ListWindowsResponse(windows=[self._info(n, h) for n, h in sorted(self.windows.items())])

    async def DeleteWindow(self, request: pb.DeleteWindowRequest, context: Any) -> pb.DeleteWindowResponse:
        if request.name in self.streams:
            raise BadRequest(grpc.StatusCode.NOT_FOUND, f"name: {request.name!r} is a stream, not a window "
                                                        "(DeleteStream)")
        hosted = self.windows.pop(request.name, None)
        keys: list[str] = []
        if hosted is not None:
            async with hosted.lock:
                await self._durable([hosted.window, *hosted.keys.values()])
                keys = [w.id for w in hosted.keys.values()]
        # The spec first: keys whose delete a crash interrupts are dropped at the next start.
        deleted = await asyncio.to_thread(self.backend.delete, request.name)
        for name in keys:
            await asyncio.to_thread(self.backend.delete, name)
        log.info("window deleted", extra={"event": "delete", "window": request.name})
        return pb.DeleteWindowResponse(deleted=deleted or hosted is not None)

    @staticmethod
    def _updates(hosted: Hosted, request: pb.InsertRequest) -> dict[str, tuple[Any, list, list]]:
        """The request's updates by key, each group as (positions in the request or None
        for all of them in order, timestamps, values) (BadRequest naming the field)."""
        keys, timestamps, values, _ = read_batch(request, hosted.window.monoid, hosted.spec.keyed,
                                                 f"window {request.window!r}", arrays=not hosted.spec.keyed)
        if not hosted.spec.keyed:
            return {"": (None, timestamps, values)} if len(timestamps) else {}
        groups: dict[str, tuple[list, list, list]] = {}
        for i, key in enumerate(keys):
            group = groups.get(key)
            if group is None:
                group = groups[key] = ([], [], [])
            group[0].append(i)
            group[1].append(timestamps[i])
            group[2].append(values[i])
        return groups

    def _new_key(self, name: str, hosted: Hosted, key: str) -> Window:
        monoid, policy, options = self._build(hosted.spec)
        return Window(monoid, policy, store=self.backend, window_id=key_window_id(name, key),
                      labels={"parent": name, "key": key}, **options)

    async def Insert(self, request: pb.InsertRequest, context: Any) -> pb.InsertResponse:
        hosted = self._hosted(request.window)
        columns = request.columns
        size = len(request.updates) + max(len(columns.ts), len(columns.ts_float))
        if size > self.max_batch:
            field = "updates" if request.updates else "columns"
            raise BadRequest(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"{field}: {size} in one batch, the limit is {self.max_batch}")
        groups = self._updates(hosted, request)
        # Applied in a task of its own: a call cancelled mid-batch (its client gone) must
        # not leave half a batch in the window. The batch completes; only the ack is lost.
        response, touched = await asyncio.shield(self._apply(request, hosted, groups))
        await self._durable(touched)
        self.metrics.updates.inc(response.inserted)
        self.metrics.evictions.inc(response.evicted)
        return response

    async def _apply(self, request: pb.InsertRequest, hosted: Hosted,
                     groups: dict[str, tuple[Any, list, list]]) -> tuple[pb.InsertResponse, list[Window]]:
        """Check every key's updates, then apply them all; the response and the windows changed."""
        batch_id = request.batch_id
        async with hosted.lock:
            parts = hosted.parts()
            todo = []  # every key is checked before any changes: the batch is applied whole or not at all
            for key, (positions, timestamps, values) in groups.items():
                window = parts.get(key)
                if window is not None and batch_id and batch_id in window.notes.get("batches", ()):
                    continue  # a retry: this key has the batch already
                try:
                    todo.append((key, window, (window or hosted.window).check(timestamps, values, positions)))
                except (TypeError, ValueError) as error:  # a MonoidError is a ValueError
                    raise update_fault(request, hosted.window.monoid, getattr(error, "position", None),
                                       getattr(error, "part", ""), getattr(error, "reason", str(error))) from None
            inserted = evicted = 0
            touched = []
            try:
                for key, window, checked in todo:
                    if window is None:
                        window = hosted.keys[key] = await asyncio.to_thread(self._new_key, request.window, hosted, key)
                    # Slices let queries in (they read the last complete results). Cache misses
                    # read the store and commits are packed: for a durable store, off the event loop.
                    if window.durable:
                        evicted += await asyncio.get_running_loop().run_in_executor(
                            self.applier, self._insert, window, checked, batch_id)
                    else:
                        for count in window.insert_slices(checked, SLICE):
                            evicted += count
                            await asyncio.sleep(0)
                        self._commit(window, batch_id)
                    inserted += len(checked[1])
                    touched.append(window)
            except kvs.StoreError as error:
                raise store_failure(error) from None
            finally:
                if todo:
                    self._publish(request.window, hosted, [key for key, _, _ in todo])
            response = pb.InsertResponse(batch_id=batch_id, inserted=inserted, evicted=evicted,
                                         duplicate=bool(batch_id and groups and not todo))
            if request.want_result:  # the windows right after this batch
                keys = list(groups) if hosted.spec.keyed else [""]
                response.results.extend(self._results(request.window, hosted, keys))
        return response, touched

    @staticmethod
    def _insert(window: Window, checked: tuple, batch_id: str) -> int:
        """Insert a checked batch (in a worker thread), note its id in the same checkpoint,
        send the commit."""
        evicted = 0
        for count in window.insert_slices(checked, SLICE):
            evicted += count
            time.sleep(0)  # lets the event loop's thread take the GIL
        AggregationServicer._commit(window, batch_id)
        return evicted

    @staticmethod
    def _commit(window: Window, batch_id: str) -> None:
        """Note the batch's id in the window's next checkpoint, and send it."""
        if batch_id:
            window.notes["batches"] = (*window.notes.get("batches", ()), batch_id)[-REMEMBERED_BATCHES:]
        window.flush(wait=False)

    async def Ingest(self, request_iterator: AsyncIterator[pb.InsertRequest],
                     context: Any) -> AsyncIterator[pb.InsertResponse]:
        """Batches are applied in order as they arrive, up to INGEST_PIPELINE ahead of
        their replies (pipelined: one is applied while the one before becomes durable).
        Each reply is sent, in order, as soon as its batch is durable, whatever the client
        does next: requests are read by a task of their own, so a producer that waits for
        every ack never waits for the server to read its next batch first.
        At shutdown the stream stops reading, acks the batches it read, then ends."""
        async for reply in self._ingest(request_iterator, context, self.Insert):
            yield reply

    async def _ingest(self, request_iterator: AsyncIterator[Any], context: Any,
                      insert: Callable[[Any, Any], Any]) -> AsyncIterator[Any]:
        """An Ingest stream (see Ingest) whose batches ``insert(request, context)`` applies."""
        self._refuse_when_closing()
        replies: asyncio.Queue[asyncio.Future | None] = asyncio.Queue()  # None: no more
        slots = asyncio.Semaphore(INGEST_PIPELINE)  # batches read and not yet acknowledged

        async def read() -> None:
            await slots.acquire()
            async for request in request_iterator:
                replies.put_nowait(asyncio.ensure_future(insert(request, context)))
                await slots.acquire()

        reader = asyncio.ensure_future(read())
        # a done callback runs however the reader ends, even cancelled before it started
        reader.add_done_callback(lambda _: replies.put_nowait(None))
        stop = reader.cancel
        self._streams.add(stop)
        try:
            while (reply := await replies.get()) is not None:
                yield await reply
                slots.release()
            if reader.cancelled():  # only end_streams cancels it while the stream is open
                raise BadRequest(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
            reader.result()  # the reader's error, if any
        finally:
            self._streams.discard(stop)
            reader.cancel()
            while not replies.empty():
                pending = replies.get_nowait()
                if pending is not None:
                    pending.cancel()  # its batch completes all the same (Insert shields it)

    @staticmethod
    def _keys(name: str, hosted: Hosted, keys: Any) -> list[str] | None:
        """The keys a request names (None: all), which only a keyed window has."""
        if not keys:
            return None
        if not hosted.spec.keyed:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"keys: window {name!r} is not keyed")
        return list(keys)

    def _named(self, windows: Any) -> list[tuple[str, Hosted]]:
        """The windows a request's ``windows`` field names, all of them when it is empty."""
        if not windows:
            return sorted(self.windows.items())
        return [(name, self._hosted(name, f"windows[{i}]")) for i, name in enumerate(windows)]

    async def Query(self, request: pb.QueryRequest, context: Any) -> pb.QueryResponse:
        named = self._named(request.windows)
        bounds = self._bounds(request)
        if bounds is not None:
            for i, (name, h) in enumerate(named):
                self._out_of_order(name, h, f"range, windows[{i}]" if request.windows else "range", "a time range")
        response = pb.QueryResponse()
        for name, h in named:
            keys = self._keys(name, h, request.keys)
            if bounds is None:
                response.results.extend(self._results(name, h, keys))
            else:
                response.results.extend(await self._range_results(name, h, keys, bounds))
        return response

    @staticmethod
    def _bounds(request: pb.QueryRequest) -> tuple[Any, Any] | None:
        """``request.range`` as (t_from, t_to), None for an open bound (None: no range)."""
        if not request.HasField("range"):
            return None
        interval = request.range
        fields = [interval.WhichOneof(side) for side in ("from", "to")]
        bounds = [None if f is None else getattr(interval, f) for f in fields]
        for f, bound in zip(fields, bounds):
            if bound is not None and math.isnan(bound):
                raise invalid(f"range.{f}", "not a number")
        low, high = bounds
        if low is not None and high is not None and low > high:
            raise invalid(f"range.{fields[0]}, range.{fields[1]}", f"from {low!r} is after to {high!r}")
        return low, high

    @staticmethod
    def _out_of_order(name: str, hosted: Hosted, where: str, what: str) -> None:
        """Refuse ``what`` (a range, a retraction) on a window that keeps timestamp order."""
        algorithm = hosted.window.algorithm
        if algorithm not in ORDERED_ALGORITHMS:
            raise invalid(where, f"{what} needs an out-of-order window (algorithm {' or '.join(OUT_OF_ORDER)}); "
                                  f"window {name!r} is {algorithm!r}, in timestamp order")

    async def _range_results(self, name: str, hosted: Hosted, keys: list[str] | None,
                             bounds: tuple[Any, Any]) -> list[pb.Result]:
        """The results of ``keys`` (None: every key) over a time range, read from the windows
        themselves: after the batch being applied, if any (they are not half of one)."""
        async with hosted.lock:
            parts = hosted.parts()
            keys = sorted(parts) if keys is None else keys
            windows = [(k, parts[k] if k in parts else hosted.window) for k in keys]
            try:
                return await self._off_loop(hosted.window.durable,
                                            lambda: [self._result(name, w, k, bounds) for k, w in windows])
            except kvs.StoreError as error:
                raise store_failure(error) from None

    async def _off_loop(self, durable: bool, work: Callable[[], Any]) -> Any:
        """``work()``, which may read the store: for a durable store in the applier thread, so
        that the store's round trips do not hold the event loop up."""
        if durable:
            return await asyncio.get_running_loop().run_in_executor(self.applier, work)
        return work()

    @staticmethod
    def _one_key(request: pb.EvictRequest | pb.RetractRequest, hosted: Hosted) -> None:
        """``request.key`` (Evict, Retract): required for a keyed window, refused by another."""
        if hosted.spec.keyed and not request.key:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"key: required for keyed window {request.window!r}")
        if request.key and not hosted.spec.keyed:
            raise BadRequest(grpc.StatusCode.INVALID_ARGUMENT, f"key: window {request.window!r} is not keyed")

    async def Retract(self, request: pb.RetractRequest, context: Any) -> pb.RetractResponse:
        hosted = self._hosted(request.window)
        kind = request.WhichOneof("time")
        if kind is None:
            raise invalid("ts", "required (ts or ts_float)")
        self._out_of_order(request.window, hosted, kind, "a retraction")
        self._one_key(request, hosted)
        timestamp = getattr(request, kind)
        if not math.isfinite(timestamp):
            raise invalid(kind, f"must be finite, got {timestamp!r}")
        async with hosted.lock:
            window = hosted.parts().get(request.key)
            if window is None:
                return pb.RetractResponse(retracted=0)
            try:
                count = await self._off_loop(window.durable, functools.partial(window.retract, timestamp))
            except kvs.StoreError as error:
                raise store_failure(error) from None
            window.flush(wait=False)
            self._publish(request.window, hosted, [request.key])
        await self._durable([window])
        return pb.RetractResponse(retracted=count)

    async def Evict(self, request: pb.EvictRequest, context: Any) -> pb.EvictResponse:
        hosted = self._hosted(request.window)
        self._one_key(request, hosted)
        async with hosted.lock:
            window = hosted.parts().get(request.key)
            if window is None:
                return pb.EvictResponse(evicted=0)
            count = min(request.count, len(window))
            try:
                window.evict(count)
            except kvs.StoreError as error:
                raise store_failure(error) from None
            window.flush(wait=False)
            self._publish(request.window, hosted, [request.key])
        await self._durable([window])
        self.metrics.evictions.inc(count)
        return pb.EvictResponse(evicted=count)

    async def Flush(self, request: pb.FlushRequest, context: Any) -> pb.FlushResponse:
        for _, hosted in self._named(request.windows):
            await self._flush(hosted)
        return pb.FlushResponse()

    async def _flush(self, hosted: Hosted) -> None:
        async with hosted.lock:
            windows = list(hosted.parts().values())
            for window in windows:
                window.flush(wait=False)
        await self._durable(windows)

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.Result]:
        """The current results, then every change, until the client leaves or the server
        shuts down (UNAVAILABLE, SHUTTING_DOWN, after the changes queued before)."""
        hosted = self._hosted(request.window)
        keys = self._keys(request.window, hosted, request.keys)
        self._refuse_when_closing()
        queue: asyncio.Queue = asyncio.Queue()  # results; None: the server is shutting down
        hosted.watchers[queue] = frozenset(keys) if keys is not None else None
        stop = functools.partial(queue.put_nowait, None)
        self._streams.add(stop)
        try:
            for result in self._results(request.window, hosted, keys):
                yield result
            while (result := await queue.get()) is not None:
                yield result
            raise BadRequest(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        finally:
            hosted.watchers.pop(queue, None)
            self._streams.discard(stop)

    # -- shutdown --------------------------------------------------------------------

    def _refuse_when_closing(self) -> None:
        if self.closing:
            raise BadRequest(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)

    def end_streams(self) -> None:
        """Shutdown, first step: end every open Watch and Ingest stream now, and refuse
        new ones, with UNAVAILABLE and SHUTTING_DOWN. A stream never ends on its own:
        left open, it would hold the server for its whole grace period. A Watch first
        sends the results queued for it; an Ingest stops reading and acks what it read."""
        self.closing = True
        for stop in list(self._streams):
            stop()

    async def idle(self) -> None:
        """Return once no call is in progress (shutdown: in-flight calls finish first)."""
        await self._idle.wait()

    def _call_started(self) -> None:
        self._calls += 1
        self._idle.clear()

    def _call_ended(self) -> None:
        self._calls -= 1
        if not self._calls:
            self._idle.set()

    async def Describe(self, request: pb.DescribeRequest, context: Any) -> pb.DescribeResponse:
        return pb.DescribeResponse(
            monoids=[_component_info(e) for e in self.registry.entries("monoid")],
            policies=[_component_info(e) for e in self.registry.entries("policy")],
            algorithms=[pb.AlgorithmInfo(name=name, description=doc, is_default=name == STORE_ALGORITHMS[0])
                        for name, doc in ALGORITHMS.items()],
            predicates=[_component_info(e) for e in self.registry.entries("predicate")])

    async def flush_all(self) -> None:
        """Make every window and stream durable (graceful shutdown)."""
        for hosted in list(self.windows.values()):
            await self._flush(hosted)
        await self.flush_streams()


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
            self._call_started()
            try:
                async for item in method(self, request, context):
                    yield item
            except BadRequest as error:
                code = error.code
                await context.abort(error.code, str(error))
            finally:
                self._call_ended()
                done(self, started, code)
        return functools.wraps(method)(stream)

    async def unary(self: Any, request: Any, context: Any) -> Any:
        started, code = time.perf_counter(), grpc.StatusCode.OK
        self._call_started()
        try:
            return await method(self, request, context)
        except BadRequest as error:
            code = error.code
            await context.abort(error.code, str(error))
        finally:
            self._call_ended()
            done(self, started, code)
    return functools.wraps(method)(unary)


for _name in pb.DESCRIPTOR.services_by_name["Aggregation"].methods_by_name:
    setattr(AggregationServicer, _name, _status(getattr(AggregationServicer, _name)))
