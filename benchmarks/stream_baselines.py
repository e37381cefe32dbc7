"""The workload and the non-slicing competitors of ``benchmarks.stream_slicing`` (issue #17).

The slicing paper's baselines (section 3, "Scotty's baselines"), written compactly and
run over the same monoids as the engine:

- :class:`TupleBuffer`: every tuple kept in a list sorted by timestamp (an out-of-order
  tuple is an ``insort``); each window is folded from its tuples when it closes.
- :class:`Buckets`: Flink's ``WindowOperator``: one aggregate per window, each tuple
  combined into every window it belongs to (one per query for tumbling windows);
  sessions are Flink's merging windows (a tuple opens ``[t, t + gap)`` and merges the
  sessions it overlaps).
- :class:`WindowPerQuery`: one out-of-order ``mta.Window`` (FiBA) per time query, every
  tuple inserted into each; a window is one range query when it closes. Sessions have no
  ``Window`` form: they use the merging buckets of :class:`Buckets`.

Every competitor has the engine's interface (``add``, ``insert``, ``advance``) and reports
rows ``(query, start, end, value, count)``, the engine's :class:`mta.Result` fields. The
baselines take no allowed lateness: the watermark must trail the stream's disorder (the
workload's ``buffered`` mode), so that every tuple behind the watermark is known.
Buckets and merged sessions combine in arrival order: commutative monoids only.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Iterable

from mta import Stream, Window
from mta.monoid import Monoid
from mta.windows import Count, Session, Sliding, WindowType

#: ``(query, start, end, value, count)``: a window's result, as every competitor reports it
Row = tuple


# --------------------------------------------------------------------------- workload

@dataclass(frozen=True)
class Workload:
    """A synthetic sensor stream in arrival order, cut into watermark rounds.

    Event time in integer milliseconds, ``rate`` tuples per second of event time, integer
    readings (a random walk: sums stay exact whatever the order of combines). Every
    ``60 / gaps_per_minute`` seconds the sensor is silent for ``gap_ms`` (the paper's 5
    gaps a minute that separate sessions). A fraction ``ooo`` of the tuples arrive late
    by a delay uniform in ``[0, max_delay_ms]``. Every ``round_ms`` of arrival time the
    stream advances its watermark: ``mode="buffered"`` to the arrival clock minus
    ``max_delay_ms`` (no tuple is ever behind it), ``mode="late"`` to the arrival clock
    itself with an allowed lateness of ``max_delay_ms`` (every delayed tuple is late and
    updates windows already reported).
    """

    seconds: float
    rate: int = 1000
    ooo: float = 0.0
    max_delay_ms: int = 2000
    mode: str = "buffered"
    gaps_per_minute: int = 5
    gap_ms: int = 1500
    round_ms: int = 1000
    seed: int = 1

    def tuples(self) -> list[tuple[int, int, int]]:
        """``(arrival, ts, value)`` in arrival order."""
        rng = random.Random(self.seed)
        n = int(self.seconds * self.rate)
        every = 60_000 // self.gaps_per_minute if self.gaps_per_minute else math.inf
        out = []
        value = 20_000
        for i in range(n):
            t = i * 1000 // self.rate
            ts = t + (t // every) * self.gap_ms if every < math.inf else t
            value += rng.randint(-50, 50)
            delay = rng.randint(0, self.max_delay_ms) if self.ooo and rng.random() < self.ooo else 0
            out.append((ts + delay, i, ts, value))
        out.sort()
        return [(a, ts, v) for a, _, ts, v in out]

    @property
    def allowed_lateness(self) -> int:
        return self.max_delay_ms if self.mode == "late" else 0

    def rounds(self) -> list[tuple[list[tuple[int, int]], int]]:
        """``[(tuples (ts, value) arriving in the round, watermark at its end)]``; the last
        round's watermark closes every window of up to 60 s."""
        if self.mode not in ("buffered", "late"):
            raise ValueError(f"mode must be 'buffered' or 'late', got {self.mode!r}")
        lag = 0 if self.mode == "late" else self.max_delay_ms
        rounds: list[tuple[list[tuple[int, int]], int]] = []
        batch: list[tuple[int, int]] = []
        end = self.round_ms
        newest = 0
        for arrival, ts, value in self.tuples():
            while arrival >= end:
                rounds.append((batch, end - lag))
                batch, end = [], end + self.round_ms
            batch.append((ts, value))
            newest = max(newest, ts)
        rounds.append((batch, end - lag))
        rounds.append(([], newest + 60_001))
        return rounds


def feed(competitor: Any, rounds: list[tuple[list[tuple[int, int]], int]]) -> list[Row]:
    """Every tuple inserted one by one, the watermark advanced after each round."""
    insert, advance = competitor.insert, competitor.advance
    out: list[Row] = []
    for batch, watermark in rounds:
        for ts, value in batch:
            insert(ts, value)
        out += advance(watermark)
    return out


def final_state(rows: Iterable[Any]) -> dict[tuple, tuple]:
    """``(query, start, end) -> (value, count)`` after every update: a later report of a
    window wins, and a session that ``replaces`` others removes them."""
    state: dict[tuple, tuple] = {}
    for r in rows:
        if isinstance(r, tuple):
            query, start, end, value, count = r
            replaces: tuple = ()
        else:
            query, start, end, value, count, replaces = r.query, r.start, r.end, r.value, r.count, r.replaces
        for s, e in replaces:
            state.pop((query, s, e), None)
        state[(query, start, end)] = (value, count)
    return state


# --------------------------------------------------------------------------- the engine

class Engine:
    """``mta.Stream`` behind the competitors' interface."""

    def __init__(self, monoid: Monoid, *, final: str = "auto", allowed_lateness: float = 0) -> None:
        self.name = f"slicing ({final})"
        self.stream = Stream(monoid, final=final, allowed_lateness=allowed_lateness)
        self.insert = self.stream.insert
        self.add = self.stream.add
        self.keep_results = False  # True: advance returns the Result objects (updates, replaces)

    def advance(self, watermark: Any) -> list:
        results = self.stream.advance(watermark)
        if self.keep_results:
            return results
        return [(r.query, r.start, r.end, r.value, r.count) for r in results]


# --------------------------------------------------------------------------- tuple buffer

class TupleBuffer:
    """Sorted tuples; every window folded from scratch when the watermark closes it."""

    name = "tuple buffer"

    def __init__(self, monoid: Monoid) -> None:
        self.monoid = monoid
        self.ts: list = []
        self.partials: list = []
        self.offset = 0  # tuples dropped from the front (count windows' positions are absolute)
        self.queries: list[Any] = []

    def add(self, name: str, spec: WindowType) -> None:
        if isinstance(spec, Sliding):
            self.queries.append(_BufferSliding(name, spec))
        elif isinstance(spec, Session):
            self.queries.append(_BufferSession(name, spec))
        elif isinstance(spec, Count) and spec.every is None:
            self.queries.append(_BufferCount(name, spec))
        else:
            raise TypeError(f"the tuple buffer baseline has no {spec!r}")

    def insert(self, ts: Any, value: Any) -> None:
        partial = self.monoid.lift(value)
        if not self.ts or ts >= self.ts[-1]:
            self.ts.append(ts)
            self.partials.append(partial)
        else:  # equal timestamps stay in arrival order
            i = bisect_right(self.ts, ts)
            self.ts.insert(i, ts)
            self.partials.insert(i, partial)

    def fold(self, i: int, j: int) -> Any:
        """The lowered aggregate of the buffered tuples i:j (relative indices)."""
        m = self.monoid
        return m.lower(m.fold(m.identity, self.partials[i:j]))

    def advance(self, watermark: Any) -> list[Row]:
        out: list[Row] = []
        for q in self.queries:
            q.close(self, watermark, out)
        keep = min((q.needed(self) for q in self.queries), default=self.offset + len(self.ts)) - self.offset
        if keep > 0:
            del self.ts[:keep], self.partials[:keep]
            self.offset += keep
        out.sort(key=lambda r: r[2])
        return out


class _BufferSliding:
    def __init__(self, name: str, spec: Sliding) -> None:
        self.name, self.spec = name, spec
        self.k: int | None = None  # the next window to close

    def close(self, tb: TupleBuffer, watermark: Any, out: list) -> None:
        spec, ts = self.spec, tb.ts
        if self.k is None:
            if not ts or ts[0] >= watermark:
                return
            self.k = spec.first_ending_after(ts[0])
        k, size = self.k, spec.size
        while True:
            start = spec.start(k)
            end = start + size
            if end > watermark:
                break
            i, j = bisect_left(ts, start), bisect_left(ts, end)
            if i < j:
                out.append((self.name, start, end, tb.fold(i, j), j - i))
                k += 1
            elif i < len(ts):  # skip the empty windows up to the next tuple's first
                k = max(k + 1, spec.first_ending_after(ts[i]))
            else:
                k = max(k + 1, spec.first_ending_after(watermark - size))
        self.k = k

    def needed(self, tb: TupleBuffer) -> int:
        if self.k is None:
            return tb.offset
        return tb.offset + bisect_left(tb.ts, self.spec.start(self.k))


class _BufferSession:
    """Tuples behind the watermark are final (no lateness): a scan pointer over them."""

    def __init__(self, name: str, spec: Session) -> None:
        self.name, self.gap = name, spec.gap
        self.first: int | None = None  # absolute index of the open session's first tuple
        self.last: Any = None
        self.scanned = 0  # absolute index of the first tuple not scanned

    def close(self, tb: TupleBuffer, watermark: Any, out: list) -> None:
        ts, off, gap = tb.ts, tb.offset, self.gap
        j, first, last = self.scanned, self.first, self.last
        while j - off < len(ts) and ts[j - off] < watermark:
            t = ts[j - off]
            if first is not None and t - last >= gap:
                out.append((self.name, ts[first - off], last + gap, tb.fold(first - off, j - off), j - first))
                first = None
            if first is None:
                first = j
            last = t
            j += 1
        if first is not None and last + gap <= watermark:
            out.append((self.name, ts[first - off], last + gap, tb.fold(first - off, j - off), j - first))
            first = None
        self.scanned, self.first, self.last = j, first, last

    def needed(self, tb: TupleBuffer) -> int:
        return self.first if self.first is not None else self.scanned


class _BufferCount:
    def __init__(self, name: str, spec: Count) -> None:
        self.name, self.size, self.slide = name, spec.size, spec.slide
        self.end = spec.slide  # the next window's end position

    def close(self, tb: TupleBuffer, watermark: Any, out: list) -> None:
        behind = tb.offset + bisect_left(tb.ts, watermark)
        end, size, off = self.end, self.size, tb.offset
        while end <= behind:
            start = max(0, end - size)
            out.append((self.name, start, end, tb.fold(start - off, end - off), end - start))
            end += self.slide
        self.end = end

    def needed(self, tb: TupleBuffer) -> int:
        return max(0, self.end - self.size)


# --------------------------------------------------------------------------- buckets

class _MergingSessions:
    """Flink's merging session windows: ``[start, last + gap)`` aggregates, sorted by start."""

    def __init__(self, name: str, spec: Session, monoid: Monoid) -> None:
        self.name, self.gap, self.monoid = name, spec.gap, monoid
        self.starts: list = []
        self.sessions: list[list] = []  # [start, last, aggregate, count]

    def insert(self, ts: Any, partial: Any) -> None:
        gap, starts, sessions = self.gap, self.starts, self.sessions
        if sessions and sessions[-1][0] <= ts < sessions[-1][1] + gap:  # the common case: the newest session
            s = sessions[-1]
            s[1] = max(s[1], ts)
            s[2] = self.monoid.combine(s[2], partial)
            s[3] += 1
            return
        hi = bisect_left(starts, ts + gap)  # sessions starting before ts + gap may overlap [ts, ts + gap)
        lo = hi
        while lo > 0 and sessions[lo - 1][1] + gap > ts:
            lo -= 1
        merged = [ts, ts, partial, 1]
        combine = self.monoid.combine
        for s in sessions[lo:hi]:
            merged = [min(merged[0], s[0]), max(merged[1], s[1]), combine(s[2], merged[2]), merged[3] + s[3]]
        sessions[lo:hi] = [merged]
        starts[lo:hi] = [merged[0]]

    def close(self, watermark: Any, out: list) -> None:
        sessions, gap, lower = self.sessions, self.gap, self.monoid.lower
        k = 0
        while k < len(sessions) and sessions[k][1] + gap <= watermark:
            s = sessions[k]
            out.append((self.name, s[0], s[1] + gap, lower(s[2]), s[3]))
            k += 1
        if k:
            del sessions[:k], self.starts[:k]


class Buckets:
    """One aggregate per window (Flink's WindowOperator): a tuple is combined into every
    window that contains it, one per query for tumbling windows."""

    name = "buckets"

    def __init__(self, monoid: Monoid) -> None:
        self.monoid = monoid
        self.sliding: list[tuple[str, Sliding, dict, list]] = []  # name, spec, k -> [agg, count], heap of k
        self.sessions: list[_MergingSessions] = []

    def add(self, name: str, spec: WindowType) -> None:
        if isinstance(spec, Sliding):
            self.sliding.append((name, spec, {}, []))
        elif isinstance(spec, Session):
            self.sessions.append(_MergingSessions(name, spec, self.monoid))
        else:
            raise TypeError(f"the buckets baseline has no {spec!r}")

    def insert(self, ts: Any, value: Any) -> None:
        partial = self.monoid.lift(value)
        combine = self.monoid.combine
        for _, spec, buckets, heap in self.sliding:
            if spec.size == spec.slide:
                ks: Any = ((ts - spec.offset) // spec.size,)
            else:
                ks = range(spec.first_ending_after(ts), spec.first_starting_after(ts))
            for k in ks:
                bucket = buckets.get(k)
                if bucket is None:
                    buckets[k] = [partial, 1]
                    heapq.heappush(heap, k)
                else:
                    bucket[0] = combine(bucket[0], partial)
                    bucket[1] += 1
        for s in self.sessions:
            s.insert(ts, partial)

    def advance(self, watermark: Any) -> list[Row]:
        out: list[Row] = []
        lower = self.monoid.lower
        for name, spec, buckets, heap in self.sliding:
            while heap and spec.start(heap[0]) + spec.size <= watermark:
                k = heapq.heappop(heap)
                agg, count = buckets.pop(k)
                start = spec.start(k)
                out.append((name, start, start + spec.size, lower(agg), count))
        for s in self.sessions:
            s.close(watermark, out)
        out.sort(key=lambda r: r[2])
        return out


# --------------------------------------------------------------------------- one Window per query

class WindowPerQuery:
    """One out-of-order ``mta.Window`` (FiBA) per time query; every tuple goes into each."""

    name = "Window per query"

    def __init__(self, monoid: Monoid) -> None:
        self.monoid = monoid
        self.windows: list[tuple[str, Sliding, Window, list]] = []  # name, spec, window, [next k]
        self.sessions: list[_MergingSessions] = []
        self.oldest: Any = math.inf

    def add(self, name: str, spec: WindowType) -> None:
        if isinstance(spec, Sliding):
            self.windows.append((name, spec, Window(self.monoid, None, algorithm="fiba"), [None]))
        elif isinstance(spec, Session):
            self.sessions.append(_MergingSessions(name, spec, self.monoid))
        else:
            raise TypeError(f"the Window-per-query baseline has no {spec!r}")

    def insert(self, ts: Any, value: Any) -> None:
        for _, _, window, _ in self.windows:
            window.insert(ts, value)
        if self.sessions:
            partial = self.monoid.lift(value)
            for s in self.sessions:
                s.insert(ts, partial)
        if ts < self.oldest:
            self.oldest = ts

    def advance(self, watermark: Any) -> list[Row]:
        out: list[Row] = []
        for name, spec, window, state in self.windows:
            if state[0] is None:
                if self.oldest >= watermark:
                    continue
                state[0] = spec.first_ending_after(self.oldest)
            k = state[0]
            while spec.start(k) + spec.size <= watermark:
                start = spec.start(k)
                end = start + spec.size
                last = end - 1 if isinstance(end, int) else math.nextafter(end, -math.inf)
                count, value = window.tally(start, last)  # inclusive bounds: [start, end)
                if count:
                    out.append((name, start, end, value, count))
                k += 1
                window.evict_before(spec.start(k))
            state[0] = k
        for s in self.sessions:
            s.close(watermark, out)
        out.sort(key=lambda r: r[2])
        return out
