"""The streaming side: a ``StatefulProcessor`` for ``transformWithStateInPandas``.

Each key keeps one value in Spark's state store (RocksDB): its
:class:`~spark_integration.engine.KeyWindow` state (``kvs.codec``: msgpack keeping tuples), read and written
once per micro-batch (every state access is a round trip to the JVM). An
event-time timer at the key's next window end (plus the allowed lateness) reports
windows even when the key gets no more events.
"""

from __future__ import annotations

from typing import Any, Iterator

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from kvs import codec
from spark_integration.aggregations import Aggregations
from spark_integration.engine import KeyWindow, Windowing
from spark_integration.windows import TIME, frame

_STATE = StructType([StructField("window", BinaryType())])


class MTAProcessor(StatefulProcessor):
    def __init__(self, aggs: Aggregations, windowing: Windowing, keys: list[str], lateness: int) -> None:
        self.aggs, self.windowing, self.keys, self.lateness = aggs, windowing, keys, lateness

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("window", _STATE)
        self.monoid = self.aggs.monoid

    def _load(self) -> KeyWindow:
        stored = self.state.get() if self.state.exists() else None
        return KeyWindow(self.monoid, self.windowing, codec.unpack(stored[0]) if stored else None)

    def _advance(self, window: KeyWindow, watermark_ms: int) -> list[tuple[int, int, Any]]:
        until = watermark_ms * 1000 - self.lateness
        return window.advance(until) if until > window.done else []

    def _finish(self, key: tuple, window: KeyWindow, rows: list[tuple[int, int, Any]]) -> Iterator[Any]:
        self.state.update((codec.pack(window.state()),))
        wake = window.next_report()
        if wake is not None:  # the watermark (ms) at which this key has rows to report
            self.handle.registerTimer(-(-(wake + self.lateness) // 1000))
        if rows:
            yield frame(key, self.keys, self.aggs, rows, window.late)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        # What the watermark closed goes out first: then an event before it is late (as for
        # Spark's own operators: late means older than the watermark the batch started with).
        window = self._load()
        ready = self._advance(window, timerValues.getCurrentWatermarkInMs())
        for pdf in rows:
            window.add(pdf[TIME].tolist(), self.aggs.lift(pdf))
        yield from self._finish(key, window, ready)

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
        window = self._load()
        yield from self._finish(key, window, self._advance(window, timerValues.getCurrentWatermarkInMs()))
