"""Session windows of one key, fed in pieces: the counterpart of Spark's
``groupBy(keys, session_window(ts, gap))``, independent of Spark.

Rules (verified against Spark 4.3, see tests/test_spark_sessions.py):

- Each event opens the interval ``[time, time + gap)`` (with a dynamic gap, its own
  end). A session is a maximal run of a key's events, in time order, where each
  next event's time is at or before the end of the run so far (``<=``: events exactly
  ``gap`` apart share a session); its ``start`` is the first event's time, its ``end``
  the largest end of its events (``last + gap`` for a fixed gap).
- The aggregate is the monoid's fold over the session's events in time order (ties
  in arrival order), so a non-commutative monoid sees them in order.
- Streaming: a session is reported once the watermark reaches its end
  (``end <= until``); until then its events stay pending, and an out-of-order event
  can extend it or merge it with the next one. An event is late (dropped) when the
  interval it opens ends at or before what is final (``end <= done``): Spark keeps
  an event older than the watermark whose ``time + gap`` is past it. A reported
  session's events are gone: a later, not-late event inside its span opens a
  session of its own, as Spark's does.

Times are integer microseconds since the epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mta.monoid import Monoid
from mta.watermarked.rule import check_times


@dataclass(frozen=True)
class Sessions:
    """How a key's events form sessions: a fixed ``gap`` in microseconds, or None when
    each event brings its own end (Spark's dynamic gap)."""

    gap: int | None

    def __post_init__(self) -> None:
        if self.gap is not None and (type(self.gap) is not int or self.gap <= 0):
            raise ValueError(f"session_gap must be a positive number of microseconds, got {self.gap!r}")


class SessionWindow:
    """The session windows of one key, with the interface of
    :class:`mta.watermarked.held.KeyWindow`: ``add`` takes events in any order,
    ``advance(until)`` reports every session that ends at or before ``until``.

    Pending events are kept sorted, with the end of the interval each opens only when
    the gap is dynamic. ``_scan``/``_scan_end``: the first ``_scan`` pending events are
    known to form one session (so far) ending at ``_scan_end``; in-order arrivals keep
    that knowledge, so a long session open across many micro-batches is not scanned
    again from its first event each time.
    """

    def __init__(self, monoid: Monoid, sessions: Sessions, state: dict[str, Any] | None = None) -> None:
        state = state or {}
        self.gap = sessions.gap
        self.fold, self.identity = monoid.fold, monoid.identity
        #: Events not yet reported, sorted by time (ties in arrival order).
        self.times: list[int] = list(state.get("times", ()))
        self.values: list[Any] = list(state.get("values", ()))
        #: Dynamic gap only: the end of each pending event's interval.
        self.ends: list[int] | None = list(state.get("ends", ())) if self.gap is None else None
        #: Everything ending at or before this time is final: an event whose interval does is late.
        self.done: float = state.get("done", -math.inf)
        self.late: int = state.get("late", 0)
        self._scan, self._scan_end = state.get("scan", (0, 0))

    def state(self) -> dict[str, Any]:
        """What a streaming run keeps between micro-batches (for ``kvs.codec.pack``)."""
        out = {"times": self.times, "values": self.values, "done": self.done, "late": self.late,
               "scan": (self._scan, self._scan_end)}
        if self.ends is not None:
            out["ends"] = self.ends
        return out

    def add(self, times: list[int], values: list[Any], ends: list[int] | None = None) -> list[int]:
        """Queue events (times, values as partials, and with a dynamic gap the end of each
        event's interval); return the indices of the late ones, which are dropped."""
        ends = self._ends_of(times, ends)
        done = self.done
        late = [i for i, e in enumerate(ends) if e <= done] if ends and min(ends) <= done else []
        if late:
            dropped = set(late)
            keep = [i for i in range(len(times)) if i not in dropped]
            times, values, ends = [times[i] for i in keep], [values[i] for i in keep], [ends[i] for i in keep]
            self.late += len(late)
        if times:
            self._merge(times, values, ends)
        return late

    def _ends_of(self, times: list[int], ends: list[int] | None) -> list[int]:
        check_times(times)
        if self.gap is not None:
            if ends is not None:
                raise ValueError("a fixed session gap gives each event's end: pass no ends")
            return [t + self.gap for t in times]
        if ends is None or len(ends) != len(times):
            raise ValueError("a dynamic session gap needs the end of each event's interval (ends, one per time)")
        bad = next((i for i, (t, e) in enumerate(zip(times, ends)) if type(e) is not int or e <= t), None)
        if bad is not None:
            raise ValueError(f"event {bad}: its session end {ends[bad]!r} must be an int after its time {times[bad]}")
        return ends

    def _merge(self, times: list[int], values: list[Any], ends: list[int]) -> None:
        """Put the new events among the pending ones, in time order (ties: pending first,
        then the new ones in arrival order)."""
        pending = self.times
        if pending and min(times) < pending[-1]:
            if self._scan and min(times) < pending[self._scan - 1]:
                self._scan = 0  # an event inside the scanned prefix: scan it again
            all_times = pending + times
            order = sorted(range(len(all_times)), key=all_times.__getitem__)
            all_values = self.values + values
            self.times = [all_times[i] for i in order]
            self.values = [all_values[i] for i in order]
            if self.ends is not None:
                all_ends = self.ends + ends
                self.ends = [all_ends[i] for i in order]
            return
        order = sorted(range(len(times)), key=times.__getitem__)  # stable: ties keep arrival order
        self.times += [times[i] for i in order]
        self.values += [values[i] for i in order]
        if self.ends is not None:
            self.ends += [ends[i] for i in order]

    def _session(self, i: int) -> tuple[int, int]:
        """The session of the pending events from ``i`` on: (index after its last event, its end)."""
        times, ends, gap = self.times, self.ends, self.gap
        if i == 0 and self._scan:
            j, end = self._scan, self._scan_end
        else:
            j, end = i + 1, times[i] + gap if ends is None else ends[i]
        n = len(times)
        if ends is None:
            while j < n and times[j] <= end:
                end = times[j] + gap  # times are sorted: the newest event's end is the largest
                j += 1
        else:
            while j < n and times[j] <= end:
                end = max(end, ends[j])
                j += 1
        return j, end

    def advance(self, until: float) -> list[tuple[int, int, Any]]:
        """Rows ``(start, end, partial)`` of every session ending at or before ``until``;
        what ends there becomes final. The monoid's ``lower`` of the partial is the result."""
        rows, i, n = [], 0, len(self.times)
        times, values, fold, identity = self.times, self.values, self.fold, self.identity
        end = None
        while i < n:
            j, end = self._session(i)
            if end > until:
                break  # later sessions start after this one's end, so they end later too
            rows.append((times[i], end, fold(identity, values[i:j])))
            i = j
        if i:
            del self.times[:i], self.values[:i]
            if self.ends is not None:
                del self.ends[:i]
        if i < n:  # the first open session is scanned: remember it
            self._scan, self._scan_end = j - i, end
        else:
            self._scan = 0
        self.done = max(self.done, until)
        return rows

    def next_report(self) -> int | None:
        """The earliest ``until`` at which :meth:`advance` reports a session (None: not
        before more events): the end of the first pending session."""
        if not self.times:
            return None
        j, end = self._session(0)
        self._scan, self._scan_end = j, end
        return end

