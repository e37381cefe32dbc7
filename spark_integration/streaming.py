"""The streaming side: a ``StatefulProcessor`` for ``transformWithStateInPandas``.

Each key keeps one value in Spark's state store (RocksDB), read and written once
per call (every state access is a round trip to the JVM): its timer and its whole
window's state (:class:`~mta.watermarked.held.KeyWindow` or
:class:`~mta.watermarked.panes.PaneWindow`; ``kvs.codec``: msgpack keeping
tuples), or, when the window lives in a store, only the step that makes a replayed
micro-batch idempotent (:mod:`spark_integration.stored`). An event-time timer at
the key's next window end (plus the allowed lateness) reports windows even when the
key gets no more events.

The grouping key is one string, the exact stand-in of the key columns' values
(``windows.KEY``): through pandas, an integer key column with nulls would turn into
floats and distinct keys could share one state (string key columns, which cross
pandas as they are, group as they are). The output carries it; Spark reads
the key columns back from it.

Late data is Spark's (4.3, measured: ``withWatermark(ts, delay).groupBy(k, window(ts,
size, slide)).agg(...)`` in append mode, one file per micro-batch; tests/test_spark_late.py
compares the two row for row):

- The watermark ``W[n]`` of micro-batch ``n`` is fixed when it starts: the newest event
  time of the batches before it minus ``delay``, never going back; 0 (1970-01-01) until
  that is later (``W[-1] = W[0] = 0``).
- Batch ``n`` reports every window with ``end <= W[n]`` (``eventTimeWatermarkForEviction``)
  and forgets it: a window comes out once, with every event it took.
- An event of batch ``n`` goes into each of its windows with ``end > W[n-1]``, the
  *previous* batch's watermark (``eventTimeWatermarkForLateEvents``); a window with ``end
  <= W[n-1]`` takes nothing more, whether it was reported or never had an event. So an
  event far behind ``W[n]`` (even behind ``W[n-1]``) still counts in a window that ends
  after ``W[n-1]``, and comes out in this batch if that window ends by ``W[n]``; a sliding
  window's event may miss its older windows and count in its newer ones. At the edges:
  ``end == W[n-1]`` takes nothing, ``end == W[n]`` is reported; a window ending at or
  before 1970-01-01 never comes out. An input that already has a watermark is refused
  by Spark itself ("Redefining watermark is disallowed"), for ``window()`` and for the
  operator alike; several watermarks (a union of streams) are not measured: both rules
  read the one global watermark, which TWS hands over as well.
- ``transformWithStateInPandas`` hands over ``W[n]`` only: ``getCurrentWatermarkInMs()``
  is ``W[n]`` in ``handleInputRows`` and ``handleExpiredTimer`` alike; a timer fires in
  the first batch whose ``W[n]`` reaches it, also one registered by ``handleInputRows``
  of that batch. It also drops the input rows whose watermarked column is ``<= W[n-1]``
  itself (an event rule, not Spark's window rule): the operator hands it no watermarked
  column (times go as ``unix_micros``) and applies the window rule in the engine.

So each key catches up to ``W[n-1]`` (closing the windows Spark closed), adds its events
(:meth:`KeyWindow.add` drops an event only when all its windows are closed) and advances
to ``W[n]``. ``W[n-1]`` is not per key (a key may sit out batches and may be new): each
partition keeps the watermark of its last batch in a ``clock`` state of its own, read and
rewritten in :meth:`MTAProcessor.init`, which Spark calls in every partition of every
micro-batch, no-data batches included (verified on Spark 4.3). ``allowed_lateness``
shifts both watermarks back by the same amount.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Iterator

from pyspark import TaskContext
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from kvs import codec
from mta.watermarked import KeyWindow, Sessions, SessionWindow, Windowing, key_window
from spark_integration.aggregations import Aggregations
from spark_integration.columnar import Bucket, Query
from spark_integration.columnar import frame as columnar_frame
from spark_integration.slicing import Sliced
from spark_integration.stored import Output, StoredKeys
from spark_integration.frames import TIME, frame, late_rows


def _clock_key(schema: StructType) -> tuple:
    """A grouping key of ``schema`` (string columns: the key stand-in or string keys) for the
    partition's clock. Any value will do: the clock is a state of its own, so it never meets
    a real key's window."""
    return tuple(None if f.nullable else "" for f in schema.fields)


class _Rows:
    """Keys on the per-key engine (:func:`mta.watermarked.key_window`): any
    aggregation, policies, sessions; events lifted one by one."""

    def __init__(self, aggs: Aggregations, windowing: Windowing | Sessions, keys: list[str],
                 side: list[str] | None) -> None:
        self.aggs, self.windowing, self.keys, self.side = aggs, windowing, keys, side
        self.sessions = isinstance(windowing, Sessions)

    def load(self, saved: bytes | None) -> KeyWindow | SessionWindow:
        return key_window(self.aggs.monoid, self.windowing, codec.unpack(saved) if saved else None)

    @staticmethod
    def save(window: KeyWindow | SessionWindow) -> bytes:
        return codec.pack(window.state())

    def add(self, window: KeyWindow | SessionWindow, pdf: Any, out: Output) -> None:
        late = window.add(pdf[TIME].tolist(), self.aggs.lift(pdf))
        if late and self.side is not None:
            out.late_events += late_rows(pdf, late, self.side)

    @staticmethod
    def advance(window: KeyWindow | SessionWindow, until: float, out: Output) -> None:
        out.rows += window.advance(until)

    def frame(self, key: tuple, out: Output) -> Any:
        if out.rows or (out.late_events and self.side is not None):
            return frame(key, self.keys, self.aggs, out, self.side)
        return None


class _Columns:
    """Buckets of keys on the columnar engine (:class:`spark_integration.columnar.Bucket`):
    built-in aggregations of time windows, every query over one set of slices per key."""

    sessions = False
    #: How many buckets the keys are hashed into (set with the plan: spark.sql.shuffle.partitions).
    buckets = 0

    def __init__(self, sliced: list[Sliced], queries: list[Query], keys: list[str], named: bool) -> None:
        self.sliced, self.queries, self.keys, self.named = sliced, queries, keys, named

    def load(self, saved: bytes | None) -> Bucket:
        return Bucket(self.sliced, self.queries, self.keys, self.buckets, saved)

    @staticmethod
    def save(window: Bucket) -> bytes:
        return window.save()

    @staticmethod
    def add(window: Bucket, pdf: Any, out: Output) -> None:
        window.add(pdf)

    @staticmethod
    def advance(window: Bucket, until: float, out: Output) -> None:
        out.rows += window.advance(until, TIME)

    def frame(self, key: tuple, out: Output) -> Any:
        return columnar_frame(self.keys, self.sliced, out.rows, out.late, self.named,
                              self.queries) if out.rows else None


#: A directory: each Python worker appends where its processor's time went (JSON lines,
#: seconds per phase, at the end of each micro-batch task); read by benchmarks.spark_streaming.
PROFILE = "MTA_SPARK_PROFILE"


class _Profile:
    """Seconds per phase of the processor's calls, when :data:`PROFILE` is set: state
    round trips, reading the input frames (Arrow to pandas), the engine's own work
    (decoding the key's state, adding events, reporting windows, encoding the state)
    and building the output frames."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls = 0

    def __call__(self, phase: str, started: float) -> float:
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - started
        return now

    def write(self) -> None:
        directory = os.environ.get(PROFILE)
        if directory and self.calls:
            line = json.dumps({"pid": os.getpid(), "calls": self.calls, "seconds": self.seconds})
            with open(os.path.join(directory, f"{os.getpid()}.jsonl"), "a") as out:
                out.write(line + "\n")
        self.seconds, self.calls = {}, 0


class MTAProcessor(StatefulProcessor):
    """``engine``: how each key's windows run (:class:`_Rows` or :class:`_Columns`)."""

    def __init__(self, engine: _Rows | _Columns, lateness: int, stored: StoredKeys | None = None) -> None:
        self.engine, self.lateness, self.stored = engine, lateness, stored
        self.profile = _Profile()

    def close(self) -> None:
        self.profile.write()

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        # The key's window (or its step in the store) and the event-time timer it has registered.
        first = StructField("window", BinaryType()) if self.stored is None else StructField("step", LongType())
        self.state = handle.getValueState("window", StructType([first, StructField("timer", LongType())]))
        self.clock = handle.getValueState("clock", StructType([StructField("watermark", LongType())]))
        #: W[n-1] in ms (see the module's docstring); init runs on the driver too, without state.
        self.previous = self._tick(handle) if TaskContext.get() is not None else 0
        self.profile = _Profile()

    def _tick(self, handle: StatefulProcessorHandle) -> int:
        """Read the partition's clock (the watermark of its previous micro-batch, 0 before the
        first) and set it to this batch's. The clock lives under a key of its own: the
        implicit key is the internal client's (TWS offers no state outside a key)."""
        client = handle._statefulProcessorApiClient
        _, watermark = client.get_timestamps("eventtime")
        client.set_implicit_key(_clock_key(client.key_schema))
        try:
            saved = self.clock.get()
            self.clock.update((watermark,))
        finally:
            client.remove_implicit_key()
        return saved[0] if saved else 0

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        # Spark's order (see above). Time windows: the windows the previous batch's watermark
        # closed take no more events (a key that sat out batches catches up first), the
        # batch's events go into the open ones, then this batch's watermark reports. Sessions:
        # the batch's events merge into the open sessions first (Spark drops their late
        # events before they get here, see session_columns.session_watermark).
        engine = self.engine

        def step(window: Any) -> Output:
            out = Output([], 0, [])
            if not engine.sessions:
                self._advance(window, self.previous, out)
            mark, profile = time.perf_counter(), self.profile
            for pdf in rows:
                mark = profile("input frames", mark)
                engine.add(window, pdf, out)
                mark = profile("engine: add", mark)
            self._advance(window, timerValues.getCurrentWatermarkInMs(), out)
            out.late = window.late
            return out

        yield from self._call(key, step)
        for _ in rows:  # a replayed call does not read its input
            pass

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
        def step(window: Any) -> Output:
            out = Output([], 0, [])
            self._advance(window, timerValues.getCurrentWatermarkInMs(), out)
            out.late = window.late
            return out

        yield from self._call(key, step, fired=True)

    def _advance(self, window: Any, watermark_ms: int, out: Output) -> None:
        until = watermark_ms * 1000 - self.lateness
        if until > window.done:
            started = time.perf_counter()
            self.engine.advance(window, until, out)
            self.profile("engine: advance", started)

    def _call(self, key: tuple, step: Any, fired: bool = False) -> Iterator[Any]:
        """Load the key's window, run ``step`` on it (or take the output a replayed call
        already made), store the window, and emit. Every state access is a round trip
        to the JVM: one read, one write, and timer changes only when the wake moves."""
        profile = self.profile
        profile.calls += 1
        mark = time.perf_counter()
        saved, timer = self.state.get() or (None, None)
        mark = profile("state: get", mark)
        if fired:
            timer = None  # Spark deletes a timer once it fires
        if self.stored is None:
            window = self.engine.load(saved)
            profile("engine: load", mark)
            out = step(window)
            mark = time.perf_counter()
            saved = self.engine.save(window)
            mark = profile("engine: save", mark)
        else:
            steps = saved or 0
            window, out = self.stored.open(key, steps)
            if out is None:
                out = step(window)
                self.stored.commit(window, steps + 1, out)
            saved = steps + 1
            mark = time.perf_counter()
        wake = window.next_report()  # the watermark (ms) at which this key has rows to report
        wake = -(-(wake + self.lateness) // 1000) if wake is not None else None
        if wake != timer:  # one timer per key: a stale one would only wake the key for nothing
            if timer is not None:
                self.handle.deleteTimer(timer)
            if wake is not None:
                self.handle.registerTimer(wake)
        self.state.update((saved, wake))
        mark = profile("state: timers and update", mark)
        rows = self.engine.frame(key, out)
        profile("output frame", mark)
        if rows is not None:
            yield rows
