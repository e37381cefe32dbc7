"""A keyed stream: one :class:`~mta.stream.engine.Stream` state per key, the same queries for all.

What the server and the Spark operator need: events of many keys (users, sensors)
under one watermark. A key's state is created on its first tuple, with the queries
as they were added (each keeps the watermark it was added at as its start), and
dropped when nothing of it is left. Each key's state snapshots on its own
(:meth:`KeyedStream.snapshot_key`), for Spark's per-key state, or all together.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from kvs import codec
from mta.arrays import as_list
from mta.monoid import Monoid
from mta.stream.engine import Stream
from mta.stream.queries import Result
from mta.windows import WindowType


class KeyedStream:
    """Keyed window queries: ``insert(key, ts, value)``; results carry ``key``.

    Options are :class:`Stream`'s; ``on_late(key, ts, value)`` gets the dropped tuples.
    Keys must be hashable and, for snapshots, msgpack-encodable (str, int, bytes, tuples).
    """

    def __init__(self, monoid: Monoid, *, allowed_lateness: float = 0, final: str = "auto",
                 on_late: Callable[[Any, Any, Any], Any] | None = None, ordered: bool = False,
                 optimizer: str | Callable[[list], Any] = "triweave") -> None:
        self._options = {"allowed_lateness": allowed_lateness, "final": final, "ordered": ordered,
                         "optimizer": optimizer}
        self._template = Stream(monoid, **self._options)  # validates the options; holds the queries
        self.monoid = monoid
        self.on_late = on_late
        self.dropped = 0
        self._keys: dict[Any, Stream] = {}

    @property
    def watermark(self) -> Any:
        return self._template.watermark

    @property
    def queries(self) -> dict[str, WindowType]:
        return self._template.queries

    def plan(self) -> Any:
        """The multi-query plan every key runs (``final="shared"``; see :meth:`Stream.plan`)."""
        return self._template.plan()

    def keys(self) -> list[Any]:
        """The keys that have state."""
        return list(self._keys)

    def add(self, name: str, window: WindowType) -> None:
        """Add a query to every key, from the current watermark on."""
        self._template.add(name, window)
        added = []
        try:
            for stream in self._keys.values():
                stream.add(name, window)  # a punctuation predicate may refuse a waiting value
                added.append(stream)
        except BaseException:
            for stream in added + [self._template]:
                stream.remove(name)
            raise

    def remove(self, name: str) -> None:
        self._template.remove(name)
        for stream in self._keys.values():
            stream.remove(name)

    def _new_stream(self) -> Stream:
        """A key's stream: the queries as added, each from the watermark it was added at."""
        stream = Stream(self.monoid, **self._options)
        for name, runner in self._template._runners.items():
            stream._add(name, runner.spec, runner.begin)
        return stream

    def _stream(self, key: Any) -> Stream:
        stream = self._keys.get(key)
        if stream is None:
            hash(key)
            stream = self._new_stream()
            stream.watermark, stream.horizon = self._template.watermark, self._template.horizon
            stream._retype()  # its typed ingest takes no tuple behind that watermark
            self._keys[key] = stream
        return stream

    def _late(self, key: Any) -> Callable[[Any, Any], None] | None:
        if self.on_late is None:
            return None
        return lambda ts, value: self.on_late(key, ts, value)

    def insert(self, key: Any, ts: int | float, value: Any) -> bool:
        """Add one tuple of ``key``; False if it was dropped as too late."""
        existed = key in self._keys
        stream = self._stream(key)
        stream.on_late = self._late(key)
        try:
            taken = stream.insert(ts, value)
        except BaseException:
            if not existed:
                del self._keys[key]
            raise
        if not taken:
            self.dropped += 1
        return taken

    def insert_many(self, updates: Iterable[tuple[Any, int | float, Any]] | Any, timestamps: Any = None,
                    values: Any = None) -> int:
        """Add ``(key, ts, value)`` triples; all or nothing (a bad one raises, naming its index,
        before any is added). Returns how many were taken. ``insert_many(keys, timestamps,
        values)`` takes the batch as three columns (:func:`mta.arrays.as_list`); its errors
        name ``keys[i]``, ``timestamps[i]`` or ``values[i]``."""
        columns = timestamps is not None or values is not None
        if not columns:
            updates = list(updates)
            for i, update in enumerate(updates):
                if not (isinstance(update, (tuple, list)) and len(update) == 3):
                    raise TypeError(f"updates[{i}]: expected a (key, timestamp, value) triple, got {update!r}")
            keys, times, vals = [u[0] for u in updates], [u[1] for u in updates], [u[2] for u in updates]
        else:
            keys, times, vals = (as_list(c, n) for c, n in ((updates, "keys"), (timestamps, "timestamps"),
                                                              (values, "values")))
            if not len(keys) == len(times) == len(vals):
                raise ValueError(f"{len(keys)} keys, {len(times)} timestamps and {len(vals)} values")

        def name(part: str) -> str:  # what the errors call a column: the triples form has one
            return part if columns else "updates"

        groups: dict[Any, tuple[list, list, list]] = {}  # key -> its timestamps, values, indexes
        for i, key in enumerate(keys):
            try:
                hash(key)
            except TypeError as error:
                raise TypeError(f"{name('keys')}[{i}]: the key {key!r} is not hashable ({error})") from None
            ts, vs, positions = groups.setdefault(key, ([], [], []))
            ts.append(times[i])
            vs.append(vals[i])
            positions.append(i)
        new = [key for key in groups if key not in self._keys]
        try:  # every key's batch is checked (and lifted, once) before any is inserted
            checked = {key: self._stream(key)._check_columns(
                ts, vs, lambda index, part, positions=positions: f"{name(part)}[{positions[index]}]")
                for key, (ts, vs, positions) in groups.items()}
        except BaseException:
            for key in new:
                del self._keys[key]
            raise
        taken = 0
        for key, batch in checked.items():
            stream = self._keys[key]
            stream.on_late = self._late(key)
            before = stream.dropped
            taken += stream._insert_checked(batch)
            self.dropped += stream.dropped - before
        return taken

    def advance(self, watermark: int | float) -> list[Result]:
        """Advance every key; results as :meth:`Stream.advance`, keys in first-seen order."""
        self._template.advance(watermark)
        out: list[Result] = []
        empty = []
        for key, stream in self._keys.items():
            out.extend(dataclasses.replace(r, key=key) for r in stream.advance(watermark))
            if stream.idle():
                empty.append(key)
        for key in empty:
            del self._keys[key]
        return out

    def snapshot_key(self, key: Any) -> bytes | None:
        """One key's state (None if the key has none), for a per-key state store."""
        stream = self._keys.get(key)
        return None if stream is None else stream.snapshot()

    def restore_key(self, key: Any, data: bytes) -> None:
        """Set one key's state from :meth:`snapshot_key` bytes."""
        stream = self._new_stream()
        stream.restore(data)
        self._keys[key] = stream

    def snapshot(self) -> bytes:
        """Every key's state and the queries' starts, as bytes."""
        return codec.pack([self._template.snapshot(), self.dropped,
                           [[key, stream.snapshot()] for key, stream in self._keys.items()]])

    def restore(self, data: bytes) -> None:
        """Continue from :meth:`snapshot` bytes (same monoid, options and queries)."""
        template, dropped, keys = codec.unpack(data)
        self._template.restore(template)
        restored = {}
        for key, state in keys:
            restored[key] = stream = self._new_stream()
            stream.restore(state)
        self._keys, self.dropped = restored, dropped

    def __repr__(self) -> str:
        return f"KeyedStream({self.monoid!r}, queries={list(self.queries)!r}, keys={len(self._keys)})"

