"""The streaming side: a ``StatefulProcessor`` for ``transformWithStateInPandas``.

Each key keeps one value in Spark's state store (RocksDB), read and written once
per call (every state access is a round trip to the JVM): its timer and its whole
:class:`~spark_integration.engine.KeyWindow` state (``kvs.codec``: msgpack keeping
tuples), or, when the window lives in a store, only the step that makes a replayed
micro-batch idempotent (:mod:`spark_integration.stored`). An event-time timer at
the key's next window end (plus the allowed lateness) reports windows even when the
key gets no more events.

The grouping key is one string, the exact stand-in of the key columns' values
(``windows.KEY``): through pandas, an integer key column with nulls would turn into
floats and distinct keys could share one state. The output carries it; Spark reads
the key columns back from it.
"""

from __future__ import annotations

from typing import Any, Iterator

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from kvs import codec
from spark_integration.aggregations import Aggregations
from spark_integration.engine import KeyWindow, Windowing
from spark_integration.sessions import Sessions, SessionWindow, key_window
from spark_integration.stored import Output, StoredKeys
from spark_integration.windows import TIME, frame, late_rows


class MTAProcessor(StatefulProcessor):
    def __init__(self, aggs: Aggregations, windowing: Windowing | Sessions, keys: list[str], lateness: int,
                 side: list[str] | None = None, stored: StoredKeys | None = None) -> None:
        self.aggs, self.windowing, self.keys, self.lateness = aggs, windowing, keys, lateness
        self.side, self.stored = side, stored

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        # The key's window (or its step in the store) and the event-time timer it has registered.
        first = StructField("window", BinaryType()) if self.stored is None else StructField("step", LongType())
        self.state = handle.getValueState("window", StructType([first, StructField("timer", LongType())]))
        self.monoid = self.aggs.monoid

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        # What the watermark closed goes out first: then an event before it is late (as for
        # Spark's own operators: late means older than the watermark the batch started with).
        def step(window: KeyWindow | SessionWindow) -> Output:
            # Sessions: Spark merges the batch's events into the open sessions before it
            # reports those the watermark closed (its late events never get here).
            merge_first = isinstance(window, SessionWindow)
            watermark = timerValues.getCurrentWatermarkInMs()
            out = Output([] if merge_first else self._advance(window, watermark), 0, [])
            for pdf in rows:
                late = window.add(pdf[TIME].tolist(), self.aggs.lift(pdf))
                if late and self.side is not None:
                    out.late_events += late_rows(pdf, late, self.side)
            if merge_first:
                out.rows = self._advance(window, watermark)
            out.late = window.late
            return out

        yield from self._call(key, step)
        for _ in rows:  # a replayed call does not read its input
            pass

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
        def step(window: KeyWindow) -> Output:
            return Output(self._advance(window, timerValues.getCurrentWatermarkInMs()), window.late, [])

        yield from self._call(key, step, fired=True)

    def _advance(self, window: KeyWindow | SessionWindow, watermark_ms: int) -> list[tuple[int, int, Any]]:
        until = watermark_ms * 1000 - self.lateness
        return window.advance(until) if until > window.done else []

    def _call(self, key: tuple, step: Any, fired: bool = False) -> Iterator[Any]:
        """Load the key's window, run ``step`` on it (or take the output a replayed call
        already made), store the window, and emit. Every state access is a round trip
        to the JVM: one read, one write, and timer changes only when the wake moves."""
        saved, timer = self.state.get() or (None, None)
        if fired:
            timer = None  # Spark deletes a timer once it fires
        if self.stored is None:
            window = key_window(self.monoid, self.windowing, codec.unpack(saved) if saved else None)
            out = step(window)
            saved = codec.pack(window.state())
        else:
            steps = saved or 0
            window, out = self.stored.open(key, steps)
            if out is None:
                out = step(window)
                self.stored.commit(window, steps + 1, out)
            saved = steps + 1
        wake = window.next_report()  # the watermark (ms) at which this key has rows to report
        wake = -(-(wake + self.lateness) // 1000) if wake is not None else None
        if wake != timer:  # one timer per key: a stale one would only wake the key for nothing
            if timer is not None:
                self.handle.deleteTimer(timer)
            if wake is not None:
                self.handle.registerTimer(wake)
        self.state.update((saved, wake))
        if out.rows or (out.late_events and self.side is not None):
            yield frame(key, self.keys, self.aggs, out, self.side)
